// gpu/lib/hopper/ffn_wgmma_epilogue.cuh — what lesson 08's wgmma rungs (08d_fused_wgmma,
// 08e_fused_wgmma_pingpong) do to the accumulators of one consumer warpgroup: the hidden bias
// and φ between the two products, and the store of Z + b.
//
// Register layout (gpu::wgmma_d_coord): thread t of the warpgroup holds, in S[4j + c] (and
// likewise Z), row g + 16w + 8(c >> 1) and column 8j + 2q + (c & 1) of the product, where
// w = t / 32, g = t % 32 / 4, q = t % 4. So column pair j of a thread serves S[4j .. 4j+3].
// CUDA only, header-only, registers nothing.
#pragma once

#if defined(__CUDACC__)
#include <cstdint>

#include "ops/ffn.hpp"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_epilogue.cuh"
#include "gpu/lib/hopper/wgmma_epilogue.cuh"  // unpack_pair

namespace convlab::gpu::ffn {

// S[i] = φ(S[i] + bias) in fp32. One switch outside the loops: each activation its own
// unrolled loop.
template <int kRegs>
__device__ __forceinline__ void bias_activate(float (&s)[kRegs], const float2 (&bias)[kRegs / 4], FfnActivation act) {
  switch (act) {
    case FfnActivation::relu:
#pragma unroll
      for (int i = 0; i < kRegs; ++i) s[i] = fmaxf(s[i] + ((i & 1) ? bias[i / 4].y : bias[i / 4].x), 0.f);
      break;
    case FfnActivation::silu:
#pragma unroll
      for (int i = 0; i < kRegs; ++i) s[i] = activate(FfnActivation::silu, s[i] + ((i & 1) ? bias[i / 4].y : bias[i / 4].x));
      break;
    default:
#pragma unroll
      for (int i = 0; i < kRegs; ++i) s[i] = activate(FfnActivation::gelu, s[i] + ((i & 1) ? bias[i / 4].y : bias[i / 4].x));
      break;
  }
}

// This thread's bias pairs of a hidden chunk: columns col0 + 8j, +1 (col0 = the chunk's first
// column + 2q; 0 past `hidden`, a multiple of 8, so a pair is inside or outside).
template <class Element, int kPairs>
__device__ __forceinline__ void load_bias(float2 (&bias)[kPairs], const Element* __restrict__ a, int hidden, int col0) {
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    const int col = col0 + 8 * j;
    bias[j] = col < hidden ? unpack_pair<Element>(*reinterpret_cast<const uint32_t*>(a + col)) : float2{0.f, 0.f};
  }
}

// z[row0 + 8hh, col0 + 8j ..] = Z + b, one rounding, for hh = 0, 1 (row0 = this thread's first
// row, col0 = 2q); rows at or past P are not stored. z has rows of C elements; bias_pair(j)
// gives b[col0 + 8j], b[col0 + 8j + 1] in fp32 (from global memory or a staged copy).
template <class Element, int C, class BiasPair>
__device__ __forceinline__ void store_z_plus_b(Element* __restrict__ z, BiasPair&& bias_pair, const float (&zacc)[C / 2],
                                               int row0, int col0, int P) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int row = row0 + 8 * hh;
    if (row >= P) continue;
    Element* out = z + int64_t(row) * C + col0;
#pragma unroll
    for (int j = 0; j < C / 8; ++j) {
      const float2 bj = bias_pair(j);
      *reinterpret_cast<uint32_t*>(out + 8 * j) =
          pack_pair<Element>(zacc[4 * j + 2 * hh] + bj.x, zacc[4 * j + 2 * hh + 1] + bj.y);
    }
  }
}

}  // namespace convlab::gpu::ffn
#endif  // __CUDACC__
