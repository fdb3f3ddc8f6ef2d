// gpu/lib/mbconv_image_se.cuh — the SE of lesson 11's one-CTA-per-image kernels (11f, 11g):
// from the pooled channel sums of one image, the gate g = sigmoid(ψ(mean·W1 + b1)·W2 + b2),
// computed by the whole CTA while every other phase waits for it.
//
//   pooled [hidden] fp32   in: the image's channel sums of D; out: the gate (channels < hidden)
//   red    [kThreads/32][8] fp32, z [cr] fp32: scratch
//
// Both layers read their weights 8 at a time (16 bytes along a row) and issue a batch of rows'
// loads before using any: the weights come from L2, which all CTAs read at about the same moment,
// so a round trip is long and the SE's time is mostly its count of round trips. Partial
// sums meet by warp shuffles in a fixed order (deterministic, no atomics).
// FC1, W1 [hidden][Cr]: up to 64 outputs a pass, eight 16-byte pieces of a row; each piece has
// kWarps / pieces whole warps, whose threads split the hidden rows (ten rows' loads a batch); a
// warp's partials meet by recursive halving, the piece's warps' in red [warps][8].
// FC2, W2 [Cr][hidden]: task (v, rr) makes channels 8v .. 8v + 7 over rows rr, rr + 4, ... (twelve
// loads in flight); the four tasks of a piece are neighbouring lanes, added by two shuffles.
// Whole warps iterate together (the task count rounded up to 32), so that every lane takes part
// in the shuffles.
// Every thread of the CTA calls it; it starts and ends with the CTA in step (the caller's
// barrier before, one inside at the end).
//
// Host half, also shared by the two rungs: set_image_params fills the sizes and the 16-byte-path
// flags their kernel parameters have in common (each rung adds its own layout and extras).
#pragma once

#include "gpu/lib/element.cuh"
#include "gpu/lib/mbconv_fused.cuh"  // unpack_pair
#include "gpu/lib/mbconv_image_layout.hpp"  // halving_output
#include "gpu/lib/mbconv_layers.cuh"  // aligned_to
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

__device__ __forceinline__ float sigmoid_f(float v) { return 1.0f / (1.0f + __expf(-v)); }
template <bool kRelu> __device__ __forceinline__ float act_f(float v) {
  if constexpr (kRelu) return fmaxf(v, 0.0f);
  else return v * sigmoid_f(v);
}

// Eight 16-bit elements of a row from column col: one 16-byte load where kVec (the caller's
// promise: rows a multiple of 8 elements, 16-byte aligned), else element by element, zeros past len.
template <bool kVec, class Element>
__device__ __forceinline__ uint4 fetch_eight(const Element* row, int col, int len) {
  if constexpr (kVec) {
    return __ldg(reinterpret_cast<const uint4*>(row + col));
  } else {
    const unsigned short* e = reinterpret_cast<const unsigned short*>(row) + col;
    uint32_t h[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) h[i] = col + i < len ? __ldg(e + i) : 0u;
    return make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
  }
}

template <class Element> __device__ __forceinline__ void eight_floats(const uint4& q, float (&w)[8]) {
  const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = unpack_pair<Element>(words[i]);
    w[2 * i] = f.x, w[2 * i + 1] = f.y;
  }
}

// One thread's share of a layer: acc[i] += Σ coef[r] · W[r][col + i] over rows first, first + step,
// ... < rows (W's rows ld elements apart), kBatch rows' loads issued before any of them is used:
// one L2 round trip a batch.
template <int kBatch, bool kVec, class Element>
__device__ __forceinline__ void weighted_rows(float (&acc)[8], const float* coef, const Element* __restrict__ w, int ld,
                                              int col, int first, int step, int rows) {
  for (int r0 = first; r0 < rows; r0 += kBatch * step) {
    uint4 q[kBatch];
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const int r = r0 + k * step;
      q[k] = r < rows ? fetch_eight<kVec>(w + std::ptrdiff_t(r) * ld, col, ld) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const int r = r0 + k * step;
      const float m = r < rows ? coef[r] : 0.0f;
      float f[8];
      eight_floats<Element>(q[k], f);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = fmaf(m, f[i], acc[i]);
    }
  }
}

// FC1 inside a chunk loop (11g, Cr ≤ 64 = two outputs a lane): a warp that owns eight hidden
// channels of each chunk adds, chunk by chunk, their channel sums times their rows of W1 [hidden][Cr]
// to its lanes' partial outputs 2·lane and 2·lane + 1. fc1_rows loads the eight rows' two columns
// (packed pairs; one 4-byte load where Cr is even and W1 4-byte aligned), zero past hidden and Cr;
// fc1_add takes channel 2j + i's sum from lane j (i = 0: sum_lo, 1: sum_hi), where the depthwise's
// lanes (pixel group, channel pair j) hold the pair's sums after their shuffles.
template <class Element>
__device__ __forceinline__ void fc1_rows(uint32_t (&rows)[8], const Element* __restrict__ w1, int cr, int hidden,
                                         int ch0, bool pairs) {
  const int col = 2 * (threadIdx.x % 32);
  // One base address, then rows cr elements apart; the rows that exist (none for a lane past Cr).
  const unsigned short* w = reinterpret_cast<const unsigned short*>(w1) + std::ptrdiff_t(ch0) * cr + col;
  const int valid = col < cr ? min(8, hidden - ch0) : 0;
  if (pairs) {
#pragma unroll
    for (int i = 0; i < 8; ++i) rows[i] = i < valid ? __ldg(reinterpret_cast<const unsigned*>(w + i * cr)) : 0u;
  } else {
    const bool two = col + 1 < cr;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const uint32_t lo = i < valid ? __ldg(w + i * cr) : 0u, hi = i < valid && two ? __ldg(w + i * cr + 1) : 0u;
      rows[i] = lo | hi << 16;
    }
  }
}
template <class Element>
__device__ __forceinline__ void fc1_add(float (&z)[2], const uint32_t (&rows)[8], float sum_lo, float sum_hi) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float s = __shfl_sync(0xffffffffu, i % 2 ? sum_hi : sum_lo, i / 2);
    const float2 f = unpack_pair<Element>(rows[i]);
    z[0] = fmaf(s, f.x, z[0]), z[1] = fmaf(s, f.y, z[1]);
  }
}

// The SE's second layer, alone (11g runs the first inside its chunk loop): z [cr] in shared memory
// -> the gate in pooled [hidden]. Every thread of the CTA calls it; it ends with a CTA barrier.
// Task (v, rr) makes channels 8v .. 8v + 7 over rows rr, rr + 4, ...; the lane with rr = 0 adds b2,
// whose loads go out before the rows' (they are only used after them).
template <int kThreads, class Element>
__device__ __forceinline__ void image_se_fc2(float* pooled, const float* z, int hidden, int cr,
                                             const Element* __restrict__ w2, const Element* __restrict__ b2,
                                             bool vec_w2) {
  const int tid = threadIdx.x;
  constexpr int kSplits = 4;
  const int pieces = (hidden + 7) / 8, tasks = pieces * kSplits, padded = (tasks + 31) / 32 * 32;
  for (int t = tid; t < padded; t += kThreads) {
    const int v = t / kSplits, rr = t % kSplits;
    float acc[8] = {};
    if (v < pieces) {
      const uint4 bq = rr == 0 ? fetch_eight<false>(b2, 8 * v, hidden) : make_uint4(0, 0, 0, 0);
      if (vec_w2) weighted_rows<12, true>(acc, z, w2, hidden, 8 * v, rr, kSplits, cr);
      else weighted_rows<4, false>(acc, z, w2, hidden, 8 * v, rr, kSplits, cr);
      float bias[8];
      eight_floats<Element>(bq, bias);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] += bias[i];
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], 1);
      acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], 2);
    }
    if (rr == 0 && v < pieces)
#pragma unroll
      for (int i = 0; i < 8; ++i)
        if (8 * v + i < hidden) pooled[8 * v + i] = sigmoid_f(acc[i]);  // the gate
  }
  __syncthreads();
}

template <int kThreads, class Element, bool kRelu>
__device__ __forceinline__ void image_se_gate(float* pooled, float* red, float* z, int hidden, int cr, int PQ,
                                              const Element* __restrict__ w1, const Element* __restrict__ b1,
                                              const Element* __restrict__ w2, const Element* __restrict__ b2,
                                              bool vec_w1, bool vec_w2) {
  constexpr int kWarps = kThreads / 32;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const float inv = 1.0f / float(PQ);
  for (int c0 = 0; c0 < cr; c0 += 64) {
    // This pass's outputs c0 .. c0 + 63 are `pieces` 16-byte pieces of a W1 row; each piece has
    // `wpp` whole warps, whose 32·wpp threads split the hidden rows.
    const int pieces = min(8, (cr - c0 + 7) / 8), wpp = kWarps / pieces, u = warp / wpp;
    const float b1v = tid < min(64, cr - c0) ? to_float(b1[c0 + tid]) : 0.0f;  // issued before W1's loads
    if (u < pieces) {
      float acc[8] = {};
      const int first = (warp % wpp) * 32 + lane, step = 32 * wpp;
      if (vec_w1) weighted_rows<10, true>(acc, pooled, w1, cr, c0 + 8 * u, first, step, hidden);
      else weighted_rows<4, false>(acc, pooled, w1, cr, c0 + 8 * u, first, step, hidden);
      // The warp's 32 partials of each of the 8 outputs meet by recursive halving (offsets 16, 8,
      // 4: a lane keeps the half on its side of the offset's bit and adds its partner's copy of
      // it), then two plain exchanges (2, 1): 4 + 2 + 1 + 1 + 1 shuffles; lane l ends with output
      // halving_output(l, 8)'s whole sum, added in a fixed order.
#pragma unroll
      for (int half = 4, off = 16; half >= 1; half /= 2, off /= 2) {
        const bool upper = lane & off;
#pragma unroll
        for (int k = 0; k < half; ++k) {
          const float send = upper ? acc[k] : acc[k + half], keep = upper ? acc[k + half] : acc[k];
          acc[k] = keep + __shfl_xor_sync(0xffffffffu, send, off);
        }
      }
      acc[0] += __shfl_xor_sync(0xffffffffu, acc[0], 2);
      acc[0] += __shfl_xor_sync(0xffffffffu, acc[0], 1);
      if (lane % 4 == 0) red[warp * 8 + halving_output(lane, 8)] = acc[0];
    }
    __syncthreads();
    if (tid < min(64, cr - c0)) {
      const int pu = tid / 8, i = tid % 8;
      float s = 0.0f;
      for (int k = 0; k < wpp; ++k) s += red[(pu * wpp + k) * 8 + i];
      z[c0 + tid] = act_f<kRelu>(s * inv + b1v);
    }
    __syncthreads();
  }
  image_se_fc2<kThreads, Element>(pooled, z, hidden, cr, w2, b2, vec_w2);
}

// The sizes of p and which operands may take the 16-byte paths (rows a multiple of 8 elements,
// pointers 16-byte aligned; y written in pairs where C_out is even and y 4-byte aligned).
template <class Params>
void set_image_params(Params& prm, const MBConvProblem& p, const Args<MBConvProblem>& a) {
  prm.H = p.H, prm.W = p.W, prm.C = p.C, prm.hidden = p.hidden(), prm.cr = p.se_channels(), prm.C_out = p.C_out;
  prm.P = p.P(), prm.Q = p.Q(), prm.stride = p.stride;
  prm.has_se = p.has_se(), prm.residual = p.has_residual();
  prm.vec_x = p.C % 8 == 0 && aligned_to(a.x, 16);
  prm.vec_we = p.hidden() % 8 == 0 && (!p.has_expand() || aligned_to(a.expand_w, 16));
  prm.vec_wp = p.C_out % 8 == 0 && aligned_to(a.project_w, 16);
  prm.vec_w1 = p.has_se() && p.se_channels() % 8 == 0 && aligned_to(a.se1_w, 16);
  prm.vec_w2 = p.has_se() && p.hidden() % 8 == 0 && aligned_to(a.se2_w, 16);
  prm.pairs_y = p.C_out % 2 == 0 && aligned_to(a.y, 4);
}

}  // namespace convlab::gpu::mbconv
