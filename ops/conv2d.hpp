// ops/conv2d.hpp — the conv2d operation: its problem descriptor, what a variant
// receives, and how the harness draws, checks and names conv2d problems.
// "Compulsory bytes" follow Lavin's Eq. 23: every input element read once,
// every weight read once, every output written once, nothing re-read. It is
// the floor a kernel's traffic can approach, not what a naive kernel moves.
// Operational intensity (Eq. 24) is flops() / min_bytes().
#pragma once

#include <string>
#include <vector>

#include "core/harness.hpp"
#include "core/dtype.hpp"
#include "reference/conv2d.hpp"

namespace convlab {

// y = conv2d(x, w): cross-correlation as in Eq. 15/18, no bias.
//   x: [N, H, W, C]        NHWC activations
//   w: [K, R, S, C/groups] KRSC weights (per group: T = C/groups input channels)
//   y: [N, P, Q, K]        NHWC, P = (H + 2·pad − R)/stride + 1, Q likewise
// The geometry (P, Q, T, validity) is the reference's ref::ConvShape, written
// once; this descriptor adds the dtype, the FLOP count (2 per MAC) and the
// compulsory bytes (Lavin's Eq. 22-23).
struct ConvProblem {
  int N = 1, H = 1, W = 1, C = 1, K = 1, R = 1, S = 1;
  int stride = 1, pad = 0, groups = 1;
  DType dtype = DType::f32;

  ref::ConvShape shape() const { return {N, H, W, C, K, R, S, stride, pad, groups}; }
  operator ref::ConvShape() const { return shape(); }  // every conv oracle takes the geometry

  int P() const { return shape().P(); }
  int Q() const { return shape().Q(); }
  int T() const { return C / groups; }       // input channels per group (group width)
  int K_per_group() const { return K / groups; }

  double input_elems() const { return shape().input_elems(); }
  double weight_elems() const { return shape().weight_elems(); }
  double output_elems() const { return shape().output_elems(); }

  // Eq. 22 without the bias term: T·R·S multiply-accumulates per output.
  double flops() const { return 2.0 * output_elems() * T() * R * S; }
  // Eq. 23 without the bias vector, in bytes.
  double min_bytes() const { return dtype_size(dtype) * (input_elems() + weight_elems() + output_elems()); }
  int reduction_depth() const { return T() * R * S; }

  bool valid() const { return shape().valid(); }
  std::string invalid_reason() const { return shape().invalid_reason(); }
};


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
