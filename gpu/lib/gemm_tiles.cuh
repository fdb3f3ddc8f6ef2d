// gpu/lib/gemm_tiles.cuh — bounds-checked loads and stores for the fp32 GEMM ladder.
//
// Every rung of lesson 03 (gpu/gemm/0*.cu) handles any M, N, K. The rule is
// the same everywhere, so it is written once, here:
//
//   - a load outside the matrix returns 0, so a partial tile at the right or
//     bottom edge (or a last K slice shorter than the tile) just adds zeros;
//   - a store outside the matrix is skipped, so C is never written past its end.
//
// All matrices are row-major and dense: element (row, col) of a rows×cols
// matrix lives at m[row·cols + col]. Offsets are formed in 64 bits, so a
// matrix of more than 2³¹ elements is addressed correctly.
//
// The four-wide forms serve the vectorised rungs (06, 07, 08). They come in two
// flavours chosen at compile time, and a launcher picks one per launch with
// can_use_float4() below:
//
//   kVectorized = true  one 16-byte ld.global.v4 / st.global.v4. Valid only
//                       when cols % 4 == 0, col % 4 == 0 and m is 16-byte
//                       aligned: then every row starts 16-byte aligned, and the
//                       four elements col..col+3 are either all inside the row
//                       or all outside it (col < cols implies col + 3 < cols).
//   kVectorized = false four scalar loads, each predicated on its own: any
//                       cols, any alignment (cols = 65 puts row 1 at byte 260).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/lib/check.cuh"

namespace convlab::gpu {

// ---- scalar ------------------------------------------------------------------

// m[row, col] of a rows×cols row-major matrix, or 0 outside it.
__device__ __forceinline__ float load_or_zero(const float* __restrict__ m, int rows, int cols, int row, int col) {
  return (row < rows && col < cols) ? m[int64_t(row) * cols + col] : 0.f;
}

// m[row, col] = v, unless (row, col) lies outside the rows×cols matrix.
__device__ __forceinline__ void store_if_inside(float* __restrict__ m, int rows, int cols, int row, int col,
                                                float v) {
  if (row < rows && col < cols) m[int64_t(row) * cols + col] = v;
}

// ---- four consecutive elements of one row ------------------------------------

// m[row, col..col+3], each element outside the matrix read as 0.
template <bool kVectorized>
__device__ __forceinline__ float4 load4_or_zero(const float* __restrict__ m, int rows, int cols, int row,
                                                int col) {
  if (row >= rows) return make_float4(0.f, 0.f, 0.f, 0.f);
  const float* p = m + int64_t(row) * cols + col;
  if constexpr (kVectorized) {
    // col % 4 == 0 and cols % 4 == 0: all four in range or none.
    return col < cols ? *reinterpret_cast<const float4*>(p) : make_float4(0.f, 0.f, 0.f, 0.f);
  } else {
    return make_float4(col + 0 < cols ? p[0] : 0.f, col + 1 < cols ? p[1] : 0.f,  //
                       col + 2 < cols ? p[2] : 0.f, col + 3 < cols ? p[3] : 0.f);
  }
}

// m[row, col..col+3] = v, skipping the elements outside the matrix.
template <bool kVectorized>
__device__ __forceinline__ void store4_if_inside(float* __restrict__ m, int rows, int cols, int row, int col,
                                                 float4 v) {
  if (row >= rows) return;
  float* p = m + int64_t(row) * cols + col;
  if constexpr (kVectorized) {
    if (col < cols) *reinterpret_cast<float4*>(p) = v;
  } else {
    if (col + 0 < cols) p[0] = v.x;
    if (col + 1 < cols) p[1] = v.y;
    if (col + 2 < cols) p[2] = v.z;
    if (col + 3 < cols) p[3] = v.w;
  }
}

// ---- host side: which flavour a launch may use -------------------------------

// True when A [M,K], B [K,N] and C [M,N] may all be read and written in 16-byte
// pieces: every row of each starts on a 16-byte boundary and has a multiple of
// four elements. (A's rows have K elements; B's and C's have N.)
inline bool can_use_float4(int K, int N, const void* a, const void* b, const void* c) {
  return K % 4 == 0 && N % 4 == 0 && aligned_16(a) && aligned_16(b) && aligned_16(c);
}

}  // namespace convlab::gpu
