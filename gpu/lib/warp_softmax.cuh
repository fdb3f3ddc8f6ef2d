// gpu/lib/warp_softmax.cuh — one warp computes the softmax of one row,
// with the online max/sum update (cpu/softmax/09b_online.cpp) done per lane
// and the lanes' partial results merged by the same identity.
//
// Shared by gpu/softmax/09c_online_warp.cu (x → y) and the unfused attention
// baseline gpu/attention/cublas.cu (fp32 scores → probabilities,
// with a causal prefix).
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu/lib/element.cuh"

namespace convlab::gpu {

// A partial softmax normaliser: l = Σ exp(x_j − m) over some set of x_j.
struct OnlineMaxSum {
  float m = -INFINITY;
  float l = 0.f;
};

// Merges two partial normalisers over disjoint sets:
//   m = max(m_a, m_b),  l = l_a·exp(m_a − m) + l_b·exp(m_b − m).
// An empty side has m = −∞ and l = 0 and must contribute nothing (exp(−∞ − −∞)
// would be NaN, hence the test).
__device__ __forceinline__ OnlineMaxSum merge(OnlineMaxSum a, OnlineMaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return a;
  return {m, a.l * expf(a.m - m) + b.l * expf(b.m - m)};
}

// y[j] = exp(x[j] − m) / l for j < visible, y[j] = 0 for visible <= j < cols,
// where m, l are the max and normaliser of x[0 .. visible). Called by all 32
// lanes of a warp with the same arguments; visible >= 1. Lane c handles
// columns c, c + 32, ... (coalesced). x is read twice: the second pass usually
// hits L1/L2 for rows of a few thousand elements.
// TUTORIAL: the plain loops are cpu/softmax/09b_online.cpp's; the only new
// step is the 5-round butterfly that merges the 32 lanes' (m, l) pairs.
template <class In, class Out>
__device__ void warp_softmax_row(const In* __restrict__ x, Out* __restrict__ y, int cols, int visible) {
  const int lane = threadIdx.x % 32;
  OnlineMaxSum acc;
  for (int j = lane; j < visible; j += 32) {
    const float v = to_float(x[j]);
    const float m = fmaxf(acc.m, v);
    acc.l = acc.l * expf(acc.m - m) + expf(v - m);  // acc.m = −∞ on the first: factor 0
    acc.m = m;
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    OnlineMaxSum other;
    other.m = __shfl_xor_sync(0xffffffffu, acc.m, offset);
    other.l = __shfl_xor_sync(0xffffffffu, acc.l, offset);
    acc = merge(acc, other);
  }
  const float inv_l = 1.f / acc.l;
  for (int j = lane; j < cols; j += 32)
    y[j] = from_float<Out>(j < visible ? expf(to_float(x[j]) - acc.m) * inv_l : 0.f);
}

}  // namespace convlab::gpu
