// cpu/conv2d/eigen.cpp — lesson 01 baseline: Eigen Tensor convolution, the
// TensorFlow way: gather the input patches, then one contraction per group.
//
// The trick: pad x once (zeros around, plus a few to make H and W multiples of
// the stride) and view its W axis as (W/stride, stride) — column w = w'·str + φ.
// Then the tap (r, s) of all outputs, x_pad[n, p·str + r, q·str + s, c], is
//   x6(c, φ = s % str, q + s / str, ρ = r % str, p + r / str, n)
// a plain box-shaped slice, for any stride, with channels contiguous.
//
//   1x1, stride 1, pad 0, groups 1 : x already is the [N·H·W × C] matrix: one
//                contraction, no workspace.
//   groups ≥ 1 : per group g, R·S slice copies build its patch matrix
//                (channels g·T … g·T + T − 1), then one contraction writes y's
//                channels g·K/G … (g+1)·K/G − 1.
//   depthwise (C/groups == 1 and K/groups == 1) : no reduction over channels
//                is left for a contraction to do; y is the sum over the R·S
//                taps of (tap slice) × (that tap's K weights, broadcast) — R·S
//                elementwise sweeps, SIMD along C.
// All Eigen expressions run on one ThreadPoolDevice per process
// (omp_get_max_threads() threads), hence Threads::all.
//
// Cost: 2·N·P·Q·K·R·S·C/groups flops in the contraction. Workspace: the padded
// input (N·(H+2·pad+)·(W+2·pad+)·C floats, skipped when pad is 0 and the sizes
// fit), plus one group's patch matrix (N·P·Q·R·S·C/groups floats) or, for
// depthwise, the weights re-laid as [R][S][K]. Eigen vectorises only with what
// the compiler may emit: SSE2 when no -march flags are given.
// Run just this: build/convlab run conv2d/cpu/eigen
#define EIGEN_USE_THREADS
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <unsupported/Eigen/CXX11/Tensor>

#include "ops/conv2d.hpp"

namespace convlab {
namespace {

using Index = Eigen::Index;
// Every TensorMap here is column-major (Eigen's default): a row-major [A][B][C]
// buffer is the column-major tensor (C, B, A) — dimensions listed innermost first.
template <int Rank> using ConstMap = Eigen::TensorMap<Eigen::Tensor<const float, Rank>>;
template <int Rank> using MutMap = Eigen::TensorMap<Eigen::Tensor<float, Rank>>;
template <int Rank> using Dims = Eigen::array<Index, Rank>;
using Pair = Eigen::IndexPair<Index>;

Eigen::ThreadPoolDevice& pool_device() {
  static Eigen::ThreadPool pool(std::max(1, omp_get_max_threads()));
  static Eigen::ThreadPoolDevice device(&pool, pool.NumThreads());
  return device;
}

bool is_pointwise(const ConvProblem& p) {
  return p.groups == 1 && p.R == 1 && p.S == 1 && p.stride == 1 && p.pad == 0;
}
bool is_depthwise(const ConvProblem& p) { return p.T() == 1 && p.K_per_group() == 1; }

// The padded input, [N][str·Hq][str·Wq][C]: `pad` zeros before row/column 0,
// zeros after the last one up to a multiple of the stride, and enough rows and
// columns that every tap slice p + r/str < Hq, q + s/str < Wq stays inside.
struct Padded {
  Index str, Hq, Wq;
  bool copy;  // false: x itself already has this shape (pad 0, sizes fit)
  std::size_t floats(const ConvProblem& p) const {
    return copy ? std::size_t(p.N) * (str * Hq) * (str * Wq) * p.C : 0;
  }
};
Padded padded(const ConvProblem& p) {
  const Index str = p.stride;
  const Index Hq = std::max<Index>((p.H + 2 * p.pad + str - 1) / str, p.P() + (p.R - 1) / str);
  const Index Wq = std::max<Index>((p.W + 2 * p.pad + str - 1) / str, p.Q() + (p.S - 1) / str);
  return {str, Hq, Wq, p.pad > 0 || str * Hq != p.H || str * Wq != p.W};
}

// Workspace, in floats: [padded input][patch matrix of one group | depthwise weights].
std::size_t second_part_floats(const ConvProblem& p) {
  if (is_depthwise(p)) return std::size_t(p.R) * p.S * p.K;                  // [R][S][K]
  return std::size_t(p.N) * p.P() * p.Q() * p.R * p.S * p.T();                // [N·P·Q][R][S][T]
}
std::size_t workspace_bytes(const ConvProblem& p) {
  if (is_pointwise(p)) return 0;
  return (padded(p).floats(p) + second_part_floats(p)) * sizeof(float);
}

bool supports(const ConvProblem& p) { return p.dtype == DType::f32; }

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* xp = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const float* wp = static_cast<const float*>(a.w);  // [K, R, S, C/groups] KRSC
  float* yp = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC
  const Index N = p.N, H = p.H, W = p.W, C = p.C, K = p.K, R = p.R, S = p.S, P = p.P(), Q = p.Q();
  const Index T = p.T(), G = p.groups, Kg = p.K_per_group(), NPQ = N * P * Q;
  Eigen::ThreadPoolDevice& dev = pool_device();
  const Eigen::array<Pair, 1> reduce_first{Pair(0, 0)};  // contract dim 0 of both operands

  if (is_pointwise(p)) {
    ConstMap<2> x2(xp, C, NPQ);  // x as (C, N·H·W); here H·W == P·Q
    ConstMap<2> w2(wp, C, K);    // w as (C, K)
    MutMap<2> y(yp, K, NPQ);     // y as (K, N·P·Q): NHWC row-major, one column per output pixel
    y.device(dev) = w2.contract(x2, reduce_first);  // y(k, i) = Σ_c w(c, k) · x(c, i)
    return;
  }
  float* ws = static_cast<float*>(a.workspace);
  if (!ws) throw std::runtime_error("conv2d/cpu/eigen: this problem needs the harness workspace");

  // 1. The padded input, viewed as x6(c, φ, w', ρ, h', n) with w = w'·str + φ, h = h'·str + ρ.
  const Padded pd = padded(p);
  const Index str = pd.str;
  const float* x_pad = xp;
  if (pd.copy) {
    const Eigen::array<std::pair<Index, Index>, 4> border{{{0, 0},                                // C
                                                           {p.pad, str * pd.Wq - W - p.pad},      // W
                                                           {p.pad, str * pd.Hq - H - p.pad},      // H
                                                           {0, 0}}};                              // N
    MutMap<4>(ws, C, str * pd.Wq, str * pd.Hq, N).device(dev) = ConstMap<4>(xp, C, W, H, N).pad(border);
    x_pad = ws;
  }
  ConstMap<6> x6(x_pad, C, str, pd.Wq, str, pd.Hq, N);
  float* rest = ws + pd.floats(p);
  // Tap (r, s) of channels c0 … c0 + count − 1, for every output pixel: (count, 1, Q, 1, P, N).
  auto tap = [&](Index r, Index s, Index c0, Index count) {
    return x6.slice(Dims<6>{c0, s % str, s / str, r % str, r / str, 0}, Dims<6>{count, 1, Q, 1, P, N});
  };

  if (is_depthwise(p)) {
    // Plain form: for r, s: y[n,p,q,k] += x_pad[n, p·str+r, q·str+s, k] · w[k,r,s,0].
    MutMap<3> w_tap_major(rest, K, S, R);               // [R][S][K]: each tap's K weights contiguous
    w_tap_major.device(dev) = ConstMap<3>(wp, S, R, K).shuffle(Dims<3>{2, 0, 1});  // KRSC, T = 1: (S, R, K)
    MutMap<6> y6(yp, K, 1, Q, 1, P, N);                 // NHWC y, shaped like a tap slice
    for (Index r = 0; r < R; ++r)
      for (Index s = 0; s < S; ++s) {
        // (Eigen expressions hold TensorMaps by reference: the map needs a name.)
        const ConstMap<6> w_rs(rest + (r * S + s) * K, K, 1, 1, 1, 1, 1);  // tap (r, s)'s K weights
        auto w_tap = w_rs.broadcast(Dims<6>{1, 1, Q, 1, P, N});
        if (r == 0 && s == 0)
          y6.device(dev) = tap(r, s, 0, C) * w_tap;
        else
          y6.device(dev) += tap(r, s, 0, C) * w_tap;
      }
    return;
  }

  // 2. Per group: its patch matrix [N·P·Q][R][S][T] (a column per output pixel
  //    in column-major terms), built from R·S slice copies, then one contraction.
  const Index depth = R * S * T;                       // one group's reduction length
  MutMap<6> cols6(rest, T, R * S, Q, 1, P, N);         // the patch matrix, shaped like tap slices
  ConstMap<2> cols(rest, depth, NPQ);                  // the same buffer as a (R·S·T, N·P·Q) matrix
  MutMap<3> y3(yp, Kg, G, NPQ);                        // y as (K/G, G, N·P·Q): channel k = g·K/G + kg
  for (Index g = 0; g < G; ++g) {
    for (Index r = 0; r < R; ++r)
      for (Index s = 0; s < S; ++s)  // cols[i][r][s][t] = x_pad[n, p·str+r, q·str+s, g·T+t], i = (n,p,q)
        cols6.slice(Dims<6>{0, r * S + s, 0, 0, 0, 0}, Dims<6>{T, 1, Q, 1, P, N}).device(dev) = tap(r, s, g * T, T);
    ConstMap<2> wg(wp + g * Kg * depth, depth, Kg);    // rows g·K/G … of KRSC = (R·S·T, K/G)
    if (G == 1)
      MutMap<2>(yp, K, NPQ).device(dev) = wg.contract(cols, reduce_first);  // straight into y
    else
      y3.chip(g, 1).device(dev) = wg.contract(cols, reduce_first);  // y(kg, i) = Σ_j w(j, kg) · cols(j, i)
  }
}

const Register<ConvProblem> reg{{
    .name = "eigen",
    .device = Device::cpu,
    .lesson = 1,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "Eigen Tensor: im2col from strided-tap slices + contract per group (TF's recipe), thread pool",
    .baseline = true,
}};

}  // namespace
}  // namespace convlab
