// cpu/conv2d/eigen.cpp — lesson 01 baseline: Eigen Tensor convolution, the
// TensorFlow way (image patches, then one contraction).
//
// What it is: Eigen's Tensor `convolve` is a plain correlation over the listed
// dimensions — it cannot sum over input channels while producing K output
// channels, so it would need one call per (n, k) and waste most of its work.
// TensorFlow's SpatialConvolution instead expresses a convolution as
//   1. extract_image_patches: for every output pixel (n, p, q), the R×S×C
//      window of the zero-padded, strided input — exactly lesson 02's im2col;
//   2. contract: a matrix product of that [N·P·Q × R·S·C] patch matrix with
//      the [R·S·C × K] weight matrix (KRSC is already that matrix, transposed).
// This file does the same with stock Eigen (no TF packing tricks): the patch
// matrix is materialised into the harness workspace, then contracted on an
// Eigen ThreadPoolDevice (one pool per process, omp_get_max_threads() threads).
//
//   groups == 1 : one contraction, written straight into y.
//   1x1, stride 1, pad 0, groups 1 : no patches at all — x already is the
//                 [N·H·W × C] matrix; one contraction, no workspace.
//   grouped     : the patches are written group-major ([G][N·P·Q][R·S·T], one
//                 fused extract+shuffle pass) so that group g's patch matrix is
//                 contiguous; then G contractions of [N·P·Q × R·S·T]·[R·S·T × K/G],
//                 each landing in y's channels g·K/G … (g+1)·K/G − 1.
//   depthwise (C/groups == 1 and K/groups == 1) : no contraction is left — it
//                 is a per-channel weighted sum over the R×S taps, done as one
//                 broadcast-multiply-reduce over the (lazy, never materialised)
//                 patch expression; no workspace.
//
// Cost: 2·N·P·Q·K·R·S·C/groups flops in the contraction, plus the im2col pass:
// workspace N·P·Q·R·S·C floats (R·S times the input), written once, read once.
// Eigen vectorises only with what the compiler may emit (SSE2 without -march).
// Run just this: build/convlab run conv2d/cpu/eigen
#define EIGEN_USE_THREADS
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <unsupported/Eigen/CXX11/Tensor>

#include "core/ops/conv2d.hpp"

namespace convlab {
namespace {

using Index = Eigen::Index;
// Every TensorMap here is column-major (Eigen's default): a row-major [A][B][C]
// buffer is the column-major tensor (C, B, A) — dimensions listed innermost first.
template <int Rank> using ConstMap = Eigen::TensorMap<Eigen::Tensor<const float, Rank>>;
template <int Rank> using MutMap = Eigen::TensorMap<Eigen::Tensor<float, Rank>>;
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

std::size_t workspace_bytes(const ConvProblem& p) {
  if (is_pointwise(p) || is_depthwise(p)) return 0;
  return std::size_t(p.N) * p.P() * p.Q() * p.R * p.S * p.C * sizeof(float);  // the patch matrix
}

bool supports(const ConvProblem& p) { return p.dtype == DType::f32; }

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* xp = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const float* wp = static_cast<const float*>(a.w);  // [K, R, S, C/groups] KRSC
  float* yp = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC
  const Index N = p.N, H = p.H, W = p.W, C = p.C, K = p.K, R = p.R, S = p.S;
  const Index T = p.T(), G = p.groups, Kg = p.K_per_group();
  const Index NPQ = N * p.P() * p.Q();
  Eigen::ThreadPoolDevice& dev = pool_device();
  const Eigen::array<Pair, 1> reduce_first{Pair(0, 0)};  // contract dim 0 of both operands

  MutMap<2> y(yp, K, NPQ);  // y as (K, N·P·Q): NHWC row-major, one column per output pixel

  if (is_pointwise(p)) {
    ConstMap<2> x2(xp, C, NPQ);  // x as (C, N·H·W); here H·W == P·Q
    ConstMap<2> w2(wp, C, K);    // w as (C, K)
    y.device(dev) = w2.contract(x2, reduce_first);  // y(k, i) = Σ_c w(c, k) · x(c, i)
    return;
  }

  // NHWC row-major is (C, W, H, N) column-major, which is what Eigen's image
  // patches expect as (depth, rows, cols, batch) — so Eigen's "rows" are our
  // W (filter S, output Q) and its "cols" our H (filter R, output P).
  // Explicit padding gives ceil((H + 2·pad − R + 1)/stride) = P output rows.
  ConstMap<4> x(xp, C, W, H, N);
  auto patches = x.extract_image_patches(S, R, p.stride, p.stride, /*in_strides*/ 1, 1, /*inflate*/ 1, 1,
                                         /*top, bottom (W)*/ p.pad, p.pad, /*left, right (H)*/ p.pad, p.pad, 0.f);
  // patches: (C, S, R, Q·P, N) column-major = row-major [N][P][Q][R][S][C]:
  // the im2col matrix, one row of R·S·C per output pixel, in KRSC's (r, s, c) order.

  if (is_depthwise(p)) {
    // Plain form: y[n,p,q,k] = Σ_{r,s} x[n, p·str+r−pad, q·str+s−pad, k] · w[k,r,s,0].
    ConstMap<3> w3(wp, S, R, K);  // KRSC with T = 1: row-major [K][R][S] = (S, R, K)
    const Eigen::array<Index, 4> patch_dims{K, S, R, NPQ};
    const Eigen::array<Index, 3> to_ksr{2, 0, 1};
    const Eigen::array<Index, 4> w_dims{K, S, R, 1}, over_pixels{1, 1, 1, NPQ};
    const Eigen::array<Index, 2> taps{1, 2};
    y.device(dev) = (patches.reshape(patch_dims) * w3.shuffle(to_ksr).reshape(w_dims).broadcast(over_pixels)).sum(taps);
    return;
  }

  if (!a.workspace) throw std::runtime_error("conv2d/cpu/eigen: the patch matrix needs the harness workspace");
  float* cols_p = static_cast<float*>(a.workspace);

  if (G == 1) {
    MutMap<2> cols(cols_p, R * S * C, NPQ);  // [N·P·Q][R·S·C] row-major
    const Eigen::array<Index, 2> as_matrix{R * S * C, NPQ};
    cols.device(dev) = patches.reshape(as_matrix);   // im2col, in parallel
    ConstMap<2> w2(wp, R * S * C, K);                 // KRSC = (C·S·R, K) column-major
    y.device(dev) = w2.contract(cols, reduce_first);  // y(k, i) = Σ_j w(j, k) · cols(j, i)
    return;
  }

  // Grouped: channel c = g·T + t, so the patches are (T, G, S, R, NPQ); move G
  // outermost in the same pass that extracts them: cols is (T, S, R, NPQ, G) =
  // row-major [G][N·P·Q][R][S][T], and group g's patch matrix is one contiguous slab.
  {
    MutMap<5> cols(cols_p, T, S, R, NPQ, G);
    const Eigen::array<Index, 5> split_channels{T, G, S, R, NPQ};
    const Eigen::array<Index, 5> group_last{0, 2, 3, 4, 1};
    cols.device(dev) = patches.reshape(split_channels).shuffle(group_last);
  }
  MutMap<3> y3(yp, Kg, G, NPQ);  // y as (K/G, G, N·P·Q): output channel k = g·K/G + kg
  const Index depth = R * S * T;
  for (Index g = 0; g < G; ++g) {
    ConstMap<2> wg(wp + g * Kg * depth, depth, Kg);    // group g's weights: rows g·K/G … of KRSC
    ConstMap<2> colsg(cols_p + g * depth * NPQ, depth, NPQ);
    y3.chip(g, 1).device(dev) = wg.contract(colsg, reduce_first);
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
    .idea = "Eigen Tensor extract_image_patches + contract (TensorFlow's recipe) on a ThreadPoolDevice",
    .baseline = true,
}};

}  // namespace
}  // namespace convlab
