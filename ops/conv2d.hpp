// core/ops/conv2d.hpp — the conv2d operation: what a variant receives, and how
// the harness draws, checks and names conv2d problems.
#pragma once

#include <string>
#include <vector>

#include "core/harness.hpp"
#include "core/problems.hpp"

namespace convlab {

template <> struct Args<ConvProblem> {
  const void* x;    // [N, H, W, C]          NHWC, problem dtype
  const void* w;    // [K, R, S, C/groups]   KRSC, problem dtype
  void* y;          // [N, P, Q, K]          NHWC, problem dtype; poisoned before each run
  void* workspace;  // workspace_bytes(problem) bytes, or nullptr
};

// The text and file forms of a convolution's shape, shared by the operations
// built on one (conv2d, conv_bias_relu_pool). `op` names the operation in
// error messages; neither function checks ConvProblem::valid().
//   parse_conv_fields   keys N, H, W, C, K, R, S, stride, pad, groups, dtype
//                       (missing: N=1, H=8, W=H, C=8, K=C, R=3, S=R, stride=1, pad=0,
//                       groups=1, dtype=f32); any other key is an error
//   conv_from_x_w       from x [N,H,W,C] and w [K,R,S,C/groups]: groups = C / w's
//                       last dim, stride and pad from `options`
ConvProblem parse_conv_fields(const std::string& text, const std::string& op);
ConvProblem conv_from_x_w(const Shape& x, const Shape& w, DType dtype, const KeyValues& options);

template <> struct OpTraits<ConvProblem> {
  static constexpr const char* name = "conv2d";
  static std::vector<TensorSpec> inputs(const ConvProblem& p);
  static std::vector<TensorSpec> outputs(const ConvProblem& p);
  static Args<ConvProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const ConvProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  static std::vector<ConvProblem> shapes(ShapeTable table, Device device);
  // Text forms: spec "N=8,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1,groups=1,dtype=f32"
  // (missing keys: N=1, S=R, stride=1, pad=0, groups=1, dtype=f32); label
  // "n8h56w56c64_k64r3s3_str1pad1g1_f32" for benchmark names.
  static std::string spec(const ConvProblem& p);
  static std::string label(const ConvProblem& p);
  static ConvProblem parse(const std::string& spec);
  // From the user's x [N,H,W,C] and w [K,R,S,C/groups]: groups = C / w's last dim;
  // stride and pad come from `options` (default 1 and 0, like torch.nn.functional.conv2d).
  static ConvProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
};

}  // namespace convlab
