// core/problems.hpp — problem descriptors: the single source of shapes, FLOP
// counts (2 per multiply-accumulate) and compulsory DRAM bytes.
//
// "Compulsory bytes" follow Lavin's Eq. 23: every input element read once,
// every weight read once, every output written once, nothing re-read. It is
// the floor a kernel's traffic can approach, not what a naive kernel moves.
// Operational intensity (Eq. 24) is flops() / min_bytes().
#pragma once

#include <cstdint>
#include <climits>
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

// y = maxpool2x2(relu(conv2d(x, w)·scale[k] + bias[k])): a conv layer with its
// folded batch norm, ReLU and 2x2 max-pool (lesson 07, layer fusion).
//   x:     [N, H, W, C]          NHWC
//   w:     [K, R, S, C/groups]   KRSC
//   scale: [K], bias: [K]        per output channel (BN folded: s = γ/√(σ²+ε), b = β − μ·s)
//   y:     [N, P/2, Q/2, K]      NHWC, floor: an odd P (Q) drops the conv's last row (column),
//                                like PyTorch's max_pool2d(2) with ceil_mode=False
// The conv's own sizes (P, Q, FLOPs) are those of conv(); all tensors share dtype.
struct ConvPoolProblem {
  int N = 1, H = 2, W = 2, C = 1, K = 1, R = 1, S = 1;
  int stride = 1, pad = 0, groups = 1;
  DType dtype = DType::f32;

  ConvProblem conv() const { return {N, H, W, C, K, R, S, stride, pad, groups, dtype}; }
  int P() const { return conv().P(); }   // full-resolution conv output
  int Q() const { return conv().Q(); }
  int P2() const { return P() / 2; }     // pooled output
  int Q2() const { return Q() / 2; }

  double full_elems() const { return conv().output_elems(); }                 // N·P·Q·K
  double pooled_elems() const { return double(N) * P2() * Q2() * K; }          // N·(P/2)·(Q/2)·K

  // What is counted: the conv's 2·T·R·S per full-resolution output (all P×Q,
  // as the layer is declared), then per full-resolution element 3 for the
  // epilogue (multiply, add, max with 0), then 3 comparisons per pooled output.
  double flops() const { return conv().flops() + 3.0 * full_elems() + 3.0 * pooled_elems(); }
  // Compulsory bytes of the FUSED form: x, w, scale and bias read once, the
  // pooled y written once. The full-resolution conv output never reaches memory.
  double min_bytes() const {
    const ConvProblem c = conv();
    return dtype_size(dtype) * (c.input_elems() + c.weight_elems() + 2.0 * K + pooled_elems());
  }
  // Bytes the LAYER-BY-LAYER form moves, each pass at its own compulsory floor:
  //   conv:            read x, w                write y_full
  //   scale/bias/ReLU: read y_full, scale, bias write y_full
  //   2x2 max-pool:    read y_full              write y_pool
  // = min_bytes() + 4·|y_full| elements: the full-resolution tensor crosses
  // the memory bus four times.
  double unfused_bytes() const { return min_bytes() + dtype_size(dtype) * 4.0 * full_elems(); }
  int reduction_depth() const { return conv().reduction_depth(); }

  bool valid() const { return conv().valid() && P() >= 2 && Q() >= 2; }
  std::string invalid_reason() const {
    if (!conv().valid()) return conv().invalid_reason();
    if (P() < 2 || Q() < 2) return "the conv output must be at least 2x2 for a 2x2 max-pool";
    return "";
  }
};

}  // namespace convlab
