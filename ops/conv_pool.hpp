// core/ops/conv_pool.hpp — lesson 07's fused layer, conv → scale/bias → ReLU →
// 2x2 max-pool: what a variant receives, and how the harness draws, checks and
// names its problems. Operation name: conv_bias_relu_pool.
#pragma once

#include <string>
#include <vector>

#include "core/harness.hpp"
#include "core/problems.hpp"

namespace convlab {

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
