// reference/conv2d.hpp — the scalar oracle for conv2d, and the conv geometry it defines.
//
// Plain loops, double accumulation, no cleverness: these functions define what
// every variant must compute. Inputs are double copies of the (already
// rounded) tensors a variant sees, so the only error a variant can show is its
// own arithmetic.
#pragma once

#include <climits>
#include <cstdint>
#include <string>

namespace convlab::ref {

// The geometry of one convolution (no dtype: references compute in double).
//   x: [N, H, W, C]        NHWC activations
//   w: [K, R, S, C/groups] KRSC weights (per group: T = C/groups input channels)
//   y: [N, P, Q, K]        NHWC, P = (H + 2·pad − R)/stride + 1, Q likewise
// Output channel k belongs to group g = k / (K/groups) and reads input
// channels g·T … g·T + T − 1. Depthwise: groups == C == K, T = 1.
// The operation layer's ConvProblem (ops/conv2d.hpp) adds the dtype and the
// FLOP and byte models, and takes its geometry from here.
struct ConvShape {
  int N = 1, H = 1, W = 1, C = 1, K = 1, R = 1, S = 1;
  int stride = 1, pad = 0, groups = 1;

  int P() const { return (H + 2 * pad - R) / stride + 1; }
  int Q() const { return (W + 2 * pad - S) / stride + 1; }
  int T() const { return C / groups; }  // input channels per group (group width)
  int K_per_group() const { return K / groups; }

  double input_elems() const { return double(N) * H * W * C; }
  double weight_elems() const { return double(K) * R * S * T(); }
  double output_elems() const { return double(N) * P() * Q() * K; }

  bool valid() const { return invalid_reason().empty(); }
  // Sums such as H + 2·pad are taken in 64 bits: each key may be near the int
  // range (up to 2^30), their sum need not be, and P(), Q() must stay ints.
  std::string invalid_reason() const {
    if (!(N > 0 && H > 0 && W > 0 && C > 0 && K > 0 && R > 0 && S > 0)) return "all sizes must be positive";
    if (stride <= 0) return "stride must be positive";
    if (pad < 0) return "pad must be non-negative";
    if (groups <= 0 || C % groups || K % groups) return "groups must divide both C and K";
    const int64_t padded_h = int64_t(H) + 2 * int64_t(pad), padded_w = int64_t(W) + 2 * int64_t(pad);
    if (padded_h > INT32_MAX || padded_w > INT32_MAX)
      return "H + 2*pad and W + 2*pad must be at most 2147483647 (got " + std::to_string(padded_h) + " and " +
             std::to_string(padded_w) + ")";
    if (padded_h < R || padded_w < S) return "the filter is larger than the padded input";
    return "";
  }
};

// y[N,P,Q,K] = Σ_{r,s,t} w[k,r,s,t] · x[n, p·stride+r−pad, q·stride+s−pad, g(k)·T+t]
// (Eq. 18, with stride and zero padding). Layouts as in ConvShape.
// Throws std::invalid_argument when !p.valid() (the message is
// p.invalid_reason()) or a buffer is null.
void conv2d(const ConvShape& p, const double* x, const double* w, double* y);

// One output of that sum, y[n, oh, ow, k], for oracles of fused layers that
// need the conv's value at a pixel without materialising y (no checks: the
// caller validated p and the buffers).
double conv2d_at(const ConvShape& p, const double* x, const double* w, int n, int oh, int ow, int k);

}  // namespace convlab::ref
