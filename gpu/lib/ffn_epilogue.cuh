// gpu/lib/ffn_epilogue.cuh — what lesson 08's GPU rungs share: φ on the
// device, and the unfused rungs' bias (+ φ) pass over a row-major matrix.
// Header-only, registers nothing.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ops/ffn.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"

namespace convlab::gpu::ffn {

// φ in fp32, the same functions as the reference (GELU in its exact erf form).
// expf(-x) overflows to +inf for x < -88, and x / inf = -0: SiLU's limit.
// The full-precision expf / erff, not the __expf intrinsics: the fp32
// problems are checked at fp32 accuracy.
__device__ __forceinline__ float activate(FfnActivation act, float x) {
  switch (act) {
    case FfnActivation::relu: return fmaxf(x, 0.0f);
    case FfnActivation::silu: return x / (1.0f + expf(-x));
    case FfnActivation::gelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    default: return x;  // identity: the output bias pass
  }
}

// m[i, j] = φ(m[i, j] + bias[j]) over a row-major [rows, cols] matrix, in
// fp32, rounded once back to Element. A grid-stride loop over vectors of kVec
// consecutive elements of one row (16 bytes: 8 f16/bf16 or 4 f32), so that
// enough bytes are in flight to run at HBM bandwidth — with 2-byte accesses a
// full GPU keeps only ~0.5 MB in flight and reaches a small fraction of it,
// which would make the layer-by-layer baseline look worse than it is. The
// column is carried along incrementally (one 64-bit division per thread, not
// per vector). Kernel contract: cols % kVec == 0 and m 16-byte aligned.
template <class Element>
__global__ void bias_activate_vector_kernel(int64_t rows, int cols, Element* __restrict__ m,
                                            const Element* __restrict__ bias, FfnActivation act) {
  constexpr int kVec = 16 / sizeof(Element);
  const int64_t vectors = rows * cols / kVec;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;       // in vectors
  const int column_step = int((stride * kVec) % cols);          // < cols
  int64_t v = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int column = int((v * kVec) % cols);                           // first column of vector v
  uint4* data = reinterpret_cast<uint4*>(m);
  for (; v < vectors; v += stride) {
    uint4 bits = data[v];
    Element* e = reinterpret_cast<Element*>(&bits);  // the 16 bytes as kVec elements, in registers
#pragma unroll
    for (int k = 0; k < kVec; ++k) e[k] = from_float<Element>(activate(act, to_float(e[k]) + to_float(bias[column + k])));
    data[v] = bits;
    column += column_step;
    if (column >= cols) column -= cols;
  }
}

// The same, one element at a time: for widths that are not a whole number of vectors.
template <class Element>
__global__ void bias_activate_kernel(int64_t rows, int cols, Element* __restrict__ m, const Element* __restrict__ bias,
                                     FfnActivation act) {
  const int64_t count = rows * cols;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int column_step = int(stride % cols);
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int column = int(i % cols);
  for (; i < count; i += stride) {
    m[i] = from_float<Element>(activate(act, to_float(m[i]) + to_float(bias[column])));
    column += column_step;
    if (column >= cols) column -= cols;  // column_step < cols: one subtraction suffices
  }
}

// Launches one of the two on the default stream (act = identity: bias only).
template <class Element>
void bias_activate(int64_t rows, int cols, Element* m, const Element* bias, FfnActivation act) {
  constexpr int kThreads = 256;
  constexpr int64_t kMaxBlocks = 132 * 16;  // 16 blocks of 256 threads per SM of an H200: a full GPU
  constexpr int kVec = 16 / sizeof(Element);
  const bool vectors = cols % kVec == 0 && reinterpret_cast<uintptr_t>(m) % 16 == 0;
  const int64_t items = vectors ? rows * cols / kVec : rows * cols;
  const int64_t blocks = std::max<int64_t>(1, std::min(ceil_div<int64_t>(items, kThreads), kMaxBlocks));
  if (vectors)
    bias_activate_vector_kernel<Element><<<unsigned(blocks), kThreads>>>(rows, cols, m, bias, act);
  else
    bias_activate_kernel<Element><<<unsigned(blocks), kThreads>>>(rows, cols, m, bias, act);
  check_launch("ffn bias_activate_kernel");
}

}  // namespace convlab::gpu::ffn
