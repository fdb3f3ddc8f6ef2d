// ops/mbconv.hpp — the MBConv block (MobileNetV2's inverted residual with
// EfficientNet's squeeze-excitation, lesson 11), BN folded into the weights:
//
//   e  = φ(x·We + be)                 [N, H, W, hidden]   1x1 expand, hidden = expand·C (absent when expand = 1)
//   d  = φ(dwconvKxK(e) + bd)         [N, P, Q, hidden]   depthwise, K = 3 or 5, pad K/2, stride 1 or 2
//   g  = sigmoid(ψ(mean_PQ(d)·W1 + b1)·W2 + b2)   [N, hidden]   SE gate, one per image and channel (se > 0)
//   y  = (d ⊙ g)·Wp + bp  (+ x)       [N, P, Q, C_out]    1x1 project; + x when stride 1 and C_out == C
//
// ref::mbconv_block (reference/blocks.hpp) is the oracle. φ and ψ are the
// same activation (SiLU in EfficientNet, ReLU in MobileNetV2). The SE width is
// EfficientNet's: Cr = max(1, floor(C·se)) from the block's INPUT channels.
//
// The SE's mean over the whole image is what stops one-pass fusion: no pixel
// of y can be finished before every pixel of its image has been through the
// expand and the depthwise. This file holds the problem descriptor — MACs, the
// compulsory DRAM bytes of each plan — and the plans as data (the tensor
// machine), which `convlab plans mbconv` prints:
//   layer_by_layer   every layer a kernel, e, d and d⊙g round-trip DRAM;
//   two_pass_recompute  pass 1 expand+depthwise on chip -> per-image channel sums;
//                    pass 2 recomputes them, gates, projects, stores y: x read twice;
//   two_pass_store   pass 1 stores d (f16) and the sums; pass 2 reads d, gates, projects;
//   single_pass      the block without SE (se = 0): one kernel, x in, y out;
//   one_kernel_per_image  with SE, where one image's d fits one SM's shared memory
//                    (kImageOnChipBytes): one CTA per image keeps d, pools it, gates it, projects;
//   one_kernel_per_image_cluster  with SE, where it fits a cluster of kImageCluster CTAs: each
//                    CTA a band of output rows (the halo's expand twice), FC1's partials over DSMEM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/harness.hpp"
#include "ops/convfirst.hpp"  // Place, PlanTensor, PlanKernel, ConvFirstPlan: the tensor machine's plan type
#include "reference/elementwise.hpp"

namespace convlab {

using MBConvActivation = ref::Activation;  // relu or silu
using MBConvPlan = ConvFirstPlan;          // a plan of the tensor machine (ops/convfirst.hpp)

struct MBConvProblem {
  int N = 1, H = 1, W = 1;
  int C = 16;           // input channels
  int expand = 6;       // e, the expansion ratio: hidden = e·C; 1 = no expand layer
  int kernel = 3;       // K, the depthwise window: 3 or 5
  int stride = 1;       // 1 or 2, on the depthwise
  double se = 0.25;     // SE ratio: Cr = max(1, floor(C·se)); 0 = no SE
  int C_out = 16;       // output channels
  MBConvActivation activation = MBConvActivation::silu;
  DType dtype = DType::f32;  // every tensor; accumulation fp32 or wider

  int hidden() const { return expand * C; }
  int se_channels() const;  // Cr; 0 without SE
  bool has_se() const { return se > 0; }
  bool has_expand() const { return expand != 1; }
  bool has_residual() const { return stride == 1 && C_out == C; }
  int P() const { return (H - 1) / stride + 1; }
  int Q() const { return (W - 1) / stride + 1; }

  // ---- element counts --------------------------------------------------------------
  double input_pixels() const { return double(N) * H * W; }
  double output_pixels() const { return double(N) * P() * Q(); }
  double x_elems() const { return input_pixels() * C; }
  double y_elems() const { return output_pixels() * C_out; }
  double e_elems() const { return has_expand() ? input_pixels() * hidden() : 0.0; }  // the expanded tensor
  double d_elems() const { return output_pixels() * hidden(); }                       // the depthwise output
  double pooled_elems() const { return has_se() ? double(N) * hidden() : 0.0; }       // channel sums / gates
  double expand_weight_elems() const { return has_expand() ? double(C) * hidden() + hidden() : 0.0; }
  double depthwise_weight_elems() const { return double(hidden()) * kernel * kernel + hidden(); }
  double se_weight_elems() const {
    return has_se() ? 2.0 * hidden() * se_channels() + se_channels() + hidden() : 0.0;
  }
  double project_weight_elems() const { return double(hidden()) * C_out + C_out; }
  double weight_elems() const {
    return expand_weight_elems() + depthwise_weight_elems() + se_weight_elems() + project_weight_elems();
  }

  // ---- work: multiply-accumulates (biases, activations, the pool's adds and
  // the gate's multiplies are not counted).
  double expand_macs() const { return input_pixels() * C * (has_expand() ? hidden() : 0); }
  double depthwise_macs() const { return output_pixels() * hidden() * kernel * kernel; }
  double se_macs() const { return has_se() ? double(N) * 2.0 * hidden() * se_channels() : 0.0; }
  double project_macs() const { return output_pixels() * double(hidden()) * C_out; }
  double macs() const { return expand_macs() + depthwise_macs() + se_macs() + project_macs(); }
  double flops() const { return 2.0 * macs(); }

  // Compulsory DRAM bytes: x read once, the weights once, y written once (the
  // single-pass plan, which exists only without SE).
  double min_bytes() const { return dtype_size(dtype) * (x_elems() + weight_elems() + y_elems()); }
  // Each plan at its floor (bias, φ and the residual fused into epilogues):
  //   layer by layer: + e written and read, d written, read by the pool, read
  //     by the gate pass, d⊙g written and read by the project, x again for the
  //     residual, the pooled means and gates written and read;
  //   two-pass recompute: + x read again by pass 2 (and its weights again),
  //     + the fp32 channel sums written and read, the gates written and read;
  //   two-pass store: + d written and read once in f16, x again for the
  //     residual, + the fp32 channel sums and the gates.
  // Without SE the two-pass plans do not exist (their bytes are then those of
  // a plan with a zero-size pool: min_bytes plus the second read).
  double layer_by_layer_bytes() const;
  double two_pass_recompute_bytes() const;
  double two_pass_store_bytes() const;
  // Bytes the suite's own layer-by-layer rungs (11a) move: the same sequence,
  // with separate bias/φ passes after each GEMM/conv rung and a residual pass.
  double suite_layer_by_layer_bytes() const;

  // Tolerance depth (core/compare.hpp): expand C, depthwise K², the SE's two
  // FC layers (their error scales the gate), project hidden.
  int reduction_depth() const {
    return (has_expand() ? C : 0) + kernel * kernel + (has_se() ? hidden() + se_channels() : 0) + hidden();
  }

  bool valid() const;
  std::string invalid_reason() const;  // "" when valid
};

// The shared memory one CTA may hold on the suite's GPU (an H200: 227 KB per block), the bound of
// the one-kernel-per-image plan's d of one image.
inline constexpr double kImageOnChipBytes = 227.0 * 1024;
// The CTAs of the one-kernel-per-image plan over a cluster (11j): bands of output rows.
inline constexpr int kImageCluster = 2;

// Every plan of p that exists for it: layer by layer, then (with SE) the
// two-pass recompute and store plans, (without SE) the single pass. Tiles of
// `tile_pixels` output pixels per CTA (the halo re-reads go to global_bytes).
std::vector<MBConvPlan> mbconv_plans(const MBConvProblem& p, int tile_pixels = 64);

template <> struct Args<MBConvProblem> {
  const void* x;          // [N, H, W, C]          NHWC
  const void* expand_w;   // [C, hidden]           row-major; nullptr when expand == 1
  const void* expand_b;   // [hidden]              likewise
  const void* dw_w;       // [hidden, K, K, 1]     KRSC depthwise
  const void* dw_b;       // [hidden]
  const void* se1_w;      // [hidden, Cr]          SE reduce; nullptr without SE
  const void* se1_b;      // [Cr]
  const void* se2_w;      // [Cr, hidden]          SE expand
  const void* se2_b;      // [hidden]
  const void* project_w;  // [hidden, C_out]       row-major
  const void* project_b;  // [C_out]
  void* y;                // [N, P, Q, C_out]      NHWC; poisoned before each run
  void* workspace;        // workspace_bytes(problem) bytes, or nullptr
};

template <> struct OpTraits<MBConvProblem> {
  static constexpr const char* name = "mbconv";
  static std::vector<TensorSpec> inputs(const MBConvProblem& p);
  static std::vector<TensorSpec> outputs(const MBConvProblem& p);
  static Args<MBConvProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const MBConvProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  static std::vector<MBConvProblem> shapes(ShapeTable table, Device device);
  // spec "N=128,H=56,W=56,C=24,e=6,k=3,stride=1,se=0.25,C_out=24,act=silu,dtype=f16"
  // (W defaults to H, e 6, k 3, stride 1, se 0.25, C_out to C, act silu,
  // dtype f32); label "n128_56x56_c24_e6_k3_s1_se25_co24_silu_f16" (se in percent).
  static std::string spec(const MBConvProblem& p);
  static std::string label(const MBConvProblem& p);
  static MBConvProblem parse(const std::string& spec);
  // From the user's tensors, in the order of inputs(): x, [expand_w, expand_b,]
  // dw_w, dw_b, [se1_w, se1_b, se2_w, se2_b,] project_w, project_b — 11 files
  // (expand and SE), 9 (SE, no expand), 7 (expand, no SE), 5 (neither);
  // stride and act from `options`.
  static MBConvProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
  static std::vector<std::size_t> input_counts() { return {5, 7, 9, 11}; }
};

}  // namespace convlab
