// gpu/lib/hopper/wgmma_epilogue.cuh — what the fused ConvFirst rungs on
// Hopper (10c_fused_wgmma, 10e_fused_cluster) do to an expand product's
// accumulators between two wgmma: the biases staged once per CTA as fp32 in
// shared memory, a chunk's hidden bias pairs read from there, and φ; plus the
// 32-bit shared-memory accesses they share.
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

// The biases of one CTA, staged once as fp32 in shared memory at `dst` by threads
// tid, tid + threads, ...:
//   dst[0 .. chunks·slice)   a: `slice` columns of each hidden chunk r of `chunk` columns,
//                            from column r·chunk + first (0 at or past `hidden`),
//   then `channels` of b, then `channels` of conv_b, both from channel c0.
// 10c stages every column (slice = chunk, first = 0) and every channel; 10e only its
// CTA's slice of each chunk and its CTA's channels. Readers need a barrier after it.
template <class Element>
__device__ __forceinline__ void stage_biases(float* dst, const Element* __restrict__ a, int hidden, int chunks,
                                             int chunk, int slice, int first, const Element* __restrict__ b,
                                             const Element* __restrict__ conv_b, int c0, int channels, int tid,
                                             int threads) {
  const int a_floats = chunks * slice;
  for (int i = tid; i < a_floats + 2 * channels; i += threads) {
    const int j = i - a_floats;
    const int col = i / slice * chunk + first + i % slice;
    dst[i] = j < 0 ? (col < hidden ? to_float(a[col]) : 0.f)
                   : to_float(j < channels ? b[c0 + j] : conv_b[c0 + j - channels]);
  }
}

// This thread's bias pairs of the staged a: columns col0 + 8j, +1 (col0 = the chunk's
// first staged column + 2t, even), one 8-byte shared load each, nothing to convert.
template <int kPairs>
__device__ __forceinline__ void load_bias(float2 (&bias)[kPairs], const float* a_s, int col0) {
  const float2* const pairs = reinterpret_cast<const float2*>(a_s);
#pragma unroll
  for (int j = 0; j < kPairs; ++j) bias[j] = pairs[col0 / 2 + 4 * j];
}

// S[i] = φ(S[i] + bias) in fp32; S[4j + c] is column 8j + 2t + (c & 1) of the chunk
// (wgmma_d_coord), so bias pair j serves S[4j .. 4j+3].
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

__device__ __forceinline__ uint32_t ld_shared_u32(uint32_t address) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(address) : "memory");
  return v;
}
__device__ __forceinline__ void st_shared_u32(uint32_t address, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address), "r"(v) : "memory");
}
// Four registers into 16 bytes at a 16-byte-aligned shared address.
__device__ __forceinline__ void st_shared_v4(uint32_t address, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
// 16 bytes at a 16-byte-aligned shared address into four registers.
__device__ __forceinline__ void ld_shared_v4(uint32_t (&v)[4], uint32_t address) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "r"(address)
               : "memory");
}

// A wgmma (or mma.sync) accumulator tile leaves each thread of a quad (the four
// lanes 4g .. 4g + 3, tq = lane % 4) two adjacent columns of every 8-column block
// of row g: stored as they are, every 4-byte store of a warp touches eight rows.
// quad_transpose turns four such blocks around inside the quad: on entry w[q] is
// thread tq's pair of block q (columns 8q + 2tq, +1); on exit w[s] is thread s's
// pair of block tq, so thread tq holds the whole block tq (16 contiguous bytes in
// column order) and one 16-byte store per block writes it. Two butterfly steps,
// four shuffles; every lane of the warp must take part.
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4], int tq) {
  // Step 1, lanes tq and tq ^ 2 swap two words each: the lower lane ends with both lanes'
  // pairs of blocks 0-1, the upper with both lanes' pairs of blocks 2-3.
  const bool upper = tq & 2;
  uint32_t x = __shfl_xor_sync(0xffffffffu, upper ? w[0] : w[2], 2);
  uint32_t y = __shfl_xor_sync(0xffffffffu, upper ? w[1] : w[3], 2);
  if (upper) w[0] = x, w[1] = y;
  else w[2] = x, w[3] = y;
  // Step 2, lanes tq and tq ^ 1 swap single words: each ends with one block's four pairs.
  const bool odd = tq & 1;
  x = __shfl_xor_sync(0xffffffffu, odd ? w[0] : w[1], 1);
  y = __shfl_xor_sync(0xffffffffu, odd ? w[2] : w[3], 1);
  if (odd) w[0] = x, w[2] = y;
  else w[1] = x, w[3] = y;
}

}  // namespace convlab::gpu
#endif  // __CUDACC__
