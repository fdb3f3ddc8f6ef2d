// ops/conv_pool.hpp — lesson 07's fused layer, conv → scale/bias → ReLU →
// 2x2 max-pool: what a variant receives, and how the harness draws, checks and
// names its problems. Operation name: conv_bias_relu_pool.
#pragma once

#include <string>
#include <vector>

#include "core/harness.hpp"
#include "ops/conv2d.hpp"

namespace convlab {

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


template <> struct Args<ConvPoolProblem> {
  const void* x;      // [N, H, W, C]          NHWC, problem dtype
  const void* w;      // [K, R, S, C/groups]   KRSC, problem dtype
  const void* scale;  // [K]                   per output channel (folded BN), problem dtype
  const void* bias;   // [K]                   per output channel (folded BN), problem dtype
  void* y;            // [N, P/2, Q/2, K]      NHWC, problem dtype; poisoned before each run
  void* workspace;    // workspace_bytes(problem) bytes, or nullptr
};

template <> struct OpTraits<ConvPoolProblem> {
  static constexpr const char* name = "conv_bias_relu_pool";
  static std::vector<TensorSpec> inputs(const ConvPoolProblem& p);
  static std::vector<TensorSpec> outputs(const ConvPoolProblem& p);
  static Args<ConvPoolProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const ConvPoolProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  // Per output, |conv·scale| + |bias| (the epilogue's terms): where they cancel, the
  // rounding error is relative to them, not to y (core/compare.hpp).
  static void error_magnitude(const ConvPoolProblem& p, const std::vector<std::vector<double>>& in,
                              std::vector<std::vector<double>>& magnitude);
  static std::vector<ConvPoolProblem> shapes(ShapeTable table, Device device);
  // Text forms as conv2d's: spec "N=8,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1,groups=1,dtype=f32",
  // label "n8h56w56c64_k64r3s3_str1pad1g1_f32" (the pool is always 2x2 stride 2).
  static std::string spec(const ConvPoolProblem& p);
  static std::string label(const ConvPoolProblem& p);
  static ConvPoolProblem parse(const std::string& spec);
  // From x [N,H,W,C], w [K,R,S,C/groups], scale [K], bias [K]; stride and pad from `options`.
  static ConvPoolProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
};

}  // namespace convlab
