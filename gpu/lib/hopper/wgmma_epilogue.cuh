// gpu/lib/hopper/wgmma_epilogue.cuh — what the fused ConvFirst rungs on
// Hopper (10c_fused_wgmma, 10e_fused_cluster) do to an expand product's
// accumulators between two wgmma: the hidden bias a_r (packed 16-bit pairs
// until used, or fp32 pairs staged in shared memory), and φ; plus the 32-bit
// shared-memory accesses they share.
// CUDA only, header-only, registers nothing.
#pragma once

#if defined(__CUDACC__)
#include <cstdint>
#include <cstring>

#include "gpu/lib/element.cuh"

namespace convlab::gpu {

// Two 16-bit elements of a 4-byte word (the lower address in the low half) as fp32.
template <class Element> __device__ __forceinline__ float2 unpack_pair(uint32_t bits) {
  Element e[2];
  static_assert(sizeof(e) == sizeof(bits), "two 16-bit elements");
  memcpy(e, &bits, sizeof(bits));
  return float2{to_float(e[0]), to_float(e[1])};
}

// S[i] = φ(S[i] + bias); S[4j + c] is column 8j + 2t + (c & 1) of the chunk
// (wgmma_d_coord), so bias pair j (two packed 16-bit values, kept packed to
// save registers) serves S[4j .. 4j+3].
template <class Element, bool kRelu, int kRegs>
__device__ __forceinline__ void bias_activate(float (&s)[kRegs], const uint32_t (&bias)[kRegs / 4]) {
#pragma unroll
  for (int j = 0; j < kRegs / 4; ++j) {
    const float2 bj = unpack_pair<Element>(bias[j]);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float v = s[4 * j + c] + ((c & 1) ? bj.y : bj.x);
      s[4 * j + c] = kRelu ? fmaxf(v, 0.f) : v / (1.0f + expf(-v));
    }
  }
}

// The same with the bias pairs already in fp32 (10c stages a once per CTA as fp32).
template <class Element, bool kRelu, int kRegs>
__device__ __forceinline__ void bias_activate(float (&s)[kRegs], const float2 (&bias)[kRegs / 4]) {
#pragma unroll
  for (int j = 0; j < kRegs / 4; ++j) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float v = s[4 * j + c] + ((c & 1) ? bias[j].y : bias[j].x);
      s[4 * j + c] = kRelu ? fmaxf(v, 0.f) : v / (1.0f + expf(-v));
    }
  }
}

// This thread's bias pairs of the columns col0 + 8j (col0 = first column + 2t;
// 0 past `hidden`; hidden is a multiple of 8, so a pair is inside or outside).
template <int kPairs>
__device__ __forceinline__ void load_bias(uint32_t (&bias)[kPairs], const void* __restrict__ a, int hidden, int col0) {
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    const int col = col0 + 8 * j;
    bias[j] = col < hidden ? __ldg(static_cast<const unsigned*>(a) + col / 2) : 0u;
  }
}

__device__ __forceinline__ uint32_t ld_shared_u32(uint32_t address) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(address) : "memory");
  return v;
}
__device__ __forceinline__ void st_shared_u32(uint32_t address, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address), "r"(v) : "memory");
}
// 16 bytes at a 16-byte-aligned shared address into four registers.
__device__ __forceinline__ void ld_shared_v4(uint32_t (&v)[4], uint32_t address) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "r"(address)
               : "memory");
}

}  // namespace convlab::gpu
#endif  // __CUDACC__
