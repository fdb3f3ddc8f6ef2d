// core/problems.hpp — problem descriptors: the single source of shapes, FLOP
// counts (2 per multiply-accumulate) and compulsory DRAM bytes.
//
// "Compulsory bytes" follow Lavin's Eq. 23: every input element read once,
// every weight read once, every output written once, nothing re-read. It is
// the floor a kernel's traffic can approach, not what a naive kernel moves.
// Operational intensity (Eq. 24) is flops() / min_bytes().
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.hpp"

namespace convlab {

// C[M,N] = A[M,K] · B[K,N], all row-major, no transposes.
struct GemmProblem {
  int M = 0, N = 0, K = 0;
  DType dtype = DType::f32;  // A, B and C; accumulation is always fp32 or wider

  double flops() const { return 2.0 * M * N * K; }
  double min_bytes() const { return double(dtype_size(dtype)) * (double(M) * K + double(K) * N + double(M) * N); }
  int reduction_depth() const { return K; }
  bool valid() const { return M > 0 && N > 0 && K > 0; }
};

// y = conv2d(x, w): cross-correlation as in Eq. 15/18, no bias.
//   x: [N, H, W, C]        NHWC activations
//   w: [K, R, S, C/groups] KRSC weights (per group: T = C/groups input channels)
//   y: [N, P, Q, K]        NHWC, P = (H + 2·pad − R)/stride + 1, Q likewise
// Output channel k belongs to group g = k / (K/groups) and reads input
// channels g·T … g·T + T − 1. Depthwise: groups == C == K, T = 1.
struct ConvProblem {
  int N = 1, H = 1, W = 1, C = 1, K = 1, R = 1, S = 1;
  int stride = 1, pad = 0, groups = 1;
  DType dtype = DType::f32;

  int P() const { return (H + 2 * pad - R) / stride + 1; }
  int Q() const { return (W + 2 * pad - S) / stride + 1; }
  int T() const { return C / groups; }       // input channels per group (group width)
  int K_per_group() const { return K / groups; }

  double input_elems() const { return double(N) * H * W * C; }
  double weight_elems() const { return double(K) * R * S * T(); }
  double output_elems() const { return double(N) * P() * Q() * K; }

  // Eq. 22 without the bias term: T·R·S multiply-accumulates per output.
  double flops() const { return 2.0 * output_elems() * T() * R * S; }
  // Eq. 23 without the bias vector, in bytes.
  double min_bytes() const { return dtype_size(dtype) * (input_elems() + weight_elems() + output_elems()); }
  int reduction_depth() const { return T() * R * S; }

  bool valid() const {
    return N > 0 && H > 0 && W > 0 && C > 0 && K > 0 && R > 0 && S > 0 && stride > 0 && pad >= 0 &&
           groups > 0 && C % groups == 0 && K % groups == 0 && H + 2 * pad >= R && W + 2 * pad >= S;
  }
  std::string invalid_reason() const {
    if (!(N > 0 && H > 0 && W > 0 && C > 0 && K > 0 && R > 0 && S > 0)) return "all sizes must be positive";
    if (stride <= 0) return "stride must be positive";
    if (pad < 0) return "pad must be non-negative";
    if (groups <= 0 || C % groups || K % groups) return "groups must divide both C and K";
    if (H + 2 * pad < R || W + 2 * pad < S) return "the filter is larger than the padded input";
    return "";
  }
};

}  // namespace convlab
