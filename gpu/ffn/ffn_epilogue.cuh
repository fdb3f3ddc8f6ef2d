// gpu/ffn/ffn_epilogue.cuh — what lesson 08's GPU rungs share: φ on the
// device, and the unfused rungs' bias (+ φ) pass over a row-major matrix.
// Header-only, registers nothing.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/ops/ffn.hpp"
#include "gpu/common/check.cuh"
#include "gpu/common/element.cuh"

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
// fp32, rounded once back to Element. A grid-stride loop over the flat index;
// the column is carried along incrementally (one 64-bit division per thread,
// not per element, which would cost more than the memory traffic).
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

// Launches bias_activate_kernel on the default stream (act = identity: bias only).
template <class Element>
void bias_activate(int64_t rows, int cols, Element* m, const Element* bias, FfnActivation act) {
  constexpr int kThreads = 256;
  constexpr int64_t kMaxBlocks = 132 * 16;  // enough to fill an H200 (132 SMs) several times over
  const int64_t blocks = std::max<int64_t>(1, std::min(ceil_div<int64_t>(rows * cols, kThreads), kMaxBlocks));
  bias_activate_kernel<Element><<<unsigned(blocks), kThreads>>>(rows, cols, m, bias, act);
  check_launch("ffn bias_activate_kernel");
}

}  // namespace convlab::gpu::ffn
