// gpu/lib/mbconv_image_se.cuh — the SE of lesson 11's one-CTA-per-image kernels (11f, 11g):
// from the pooled channel sums of one image, the gate g = sigmoid(ψ(mean·W1 + b1)·W2 + b2),
// computed by the whole CTA while every other phase waits for it.
//
//   pooled [hidden] fp32   in: the image's channel sums of D; out: the gate (channels < hidden)
//   red    [kThreads/32][64] fp32, z [cr] fp32: scratch
//
// Both layers read their weights 8 at a time (16 bytes along a row), spread over every warp so
// that each thread has a few independent L2 loads in flight, and reduce the partial sums by warp
// shuffles in a fixed order (deterministic, no atomics).
// FC1, W1 [hidden][Cr]: thread tid takes rows tid, tid + kThreads, ... and up to 64 outputs (eight
// 16-byte pieces of a row); the warp's 32 partials of each output meet by shuffles, the warps' in
// red [warps][64]. More than 64 outputs take further passes.
// FC2, W2 [Cr][hidden]: task (v, rr) makes channels 8v .. 8v + 7 over rows rr, rr + 4, ...; the
// four tasks of a piece are neighbouring lanes, added by two shuffles. Whole warps iterate
// together (the task count rounded up to 32), so that every lane takes part in the shuffles.
// Every thread of the CTA calls it; it starts and ends with the CTA in step (the caller's
// barrier before, one inside at the end).
//
// Host half, also shared by the two rungs: set_image_params fills the sizes and the 16-byte-path
// flags their kernel parameters have in common (each rung adds its own layout and extras).
#pragma once

#include "gpu/lib/element.cuh"
#include "gpu/lib/mbconv_image_layout.hpp"  // halving_first_output
#include "gpu/lib/mbconv_layers.cuh"  // load_eight
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

__device__ __forceinline__ float sigmoid_f(float v) { return 1.0f / (1.0f + __expf(-v)); }
template <bool kRelu> __device__ __forceinline__ float act_f(float v) {
  if constexpr (kRelu) return fmaxf(v, 0.0f);
  else return v * sigmoid_f(v);
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
    float acc[8][8] = {};
    // Up to four rows' loads in flight before their FMAs where the registers allow it (384 threads:
    // 168 a thread; at 512, 128, the unrolled loop spills).
#pragma unroll(kThreads <= 384 ? 4 : 1)
    for (int r = tid; r < hidden; r += kThreads) {
      const float m = pooled[r];
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (c0 + 8 * u < cr) {
          float w[8];
          load_eight(w1 + std::ptrdiff_t(r) * cr, c0 + 8 * u, cr, vec_w1, w);
#pragma unroll
          for (int i = 0; i < 8; ++i) acc[u][i] = fmaf(m, w[i], acc[u][i]);
        }
    }
    // The warp's 32 partials of each of the 64 outputs meet by recursive halving: at the step of
    // offset o (16, 8, ..., 1) a lane keeps the half of its outputs on its side of bit o, sends the
    // other half to lane ^ o and adds what comes back — 32 + 16 + 8 + 4 + 2 shuffles in all instead
    // of 64 × 5. Lane l ends holding the whole warp's sums of outputs o0 and o0 + 1, o0 = 32·l4 +
    // 16·l3 + 8·l2 + 4·l1 + 2·l0 (l4 .. l0 the bits of l), added in a fixed order.
    float* v = &acc[0][0];
#pragma unroll
    for (int half = 32, off = 16; half >= 2; half /= 2, off /= 2) {
      const bool upper = lane & off;
#pragma unroll
      for (int k = 0; k < half; ++k) {
        const float send = upper ? v[k] : v[k + half], keep = upper ? v[k + half] : v[k];
        v[k] = keep + __shfl_xor_sync(0xffffffffu, send, off);
      }
    }
    red[warp * 64 + halving_first_output(lane)] = v[0], red[warp * 64 + halving_first_output(lane) + 1] = v[1];
    __syncthreads();
    for (int j = tid; j < min(64, cr - c0); j += kThreads) {
      float s = 0.0f;
      for (int w = 0; w < kWarps; ++w) s += red[w * 64 + j];
      z[c0 + j] = act_f<kRelu>(s * inv + to_float(b1[c0 + j]));
    }
    __syncthreads();
  }
  constexpr int kSplits = 4;
  const int pieces = (hidden + 7) / 8, tasks = pieces * kSplits, padded = (tasks + 31) / 32 * 32;
  for (int t = tid; t < padded; t += kThreads) {
    const int v = t / kSplits, rr = t % kSplits;
    float acc[8] = {};
    if (v < pieces)
#pragma unroll 12  // twelve 16-byte loads in flight per thread
      for (int r = rr; r < cr; r += kSplits) {
        float w[8];
        load_eight(w2 + std::ptrdiff_t(r) * hidden, 8 * v, hidden, vec_w2, w);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[i] = fmaf(z[r], w[i], acc[i]);
      }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], 1);
      acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], 2);
    }
    if (rr == 0 && v < pieces)
#pragma unroll
      for (int i = 0; i < 8; ++i)
        if (8 * v + i < hidden) pooled[8 * v + i] = sigmoid_f(acc[i] + to_float(b2[8 * v + i]));  // the gate
  }
  __syncthreads();
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
