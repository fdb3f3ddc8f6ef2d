// ops/convfirst.hpp — the ConvFirst block (Lavin §5.3, lesson 10): a
// grouped 3x3 conv (group width 8), an FFN (Eq. 30) and a residual shortcut,
// BN folded into the weights:
//
//   stride 1:  t = gconv3x3(x) + conv_b               [N, H, W, C]
//              y = φ(t·U + a)·V + b + x               [N, H, W, C]
//   stride 2:  t' = blurpool(gconv3x3(x) + conv_b)    [N, P, Q, C]    BlurPool downsampling (Fig. 6c)
//              s  = blurpool(x), then s·Wsc + bsc     [N, P, Q, Cout] (projection only when Cout != C)
//              y  = φ(t'·U + a)·V + b + s             [N, P, Q, Cout]
//
// (reference/blocks.hpp, ref::convfirst_block, is the oracle and documents the
// exact form, including the zero padding of the blur.) This file holds the
// problem descriptor — shapes, MACs, the compulsory DRAM bytes of each
// execution plan — and the plans themselves as data (the tensor machine of
// §5.1: where every tensor lives), which `convlab plans convfirst` prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/harness.hpp"
#include "reference/elementwise.hpp"

namespace convlab {

using ConvFirstActivation = ref::Activation;  // relu or silu

struct ConvFirstProblem {
  int N = 1, H = 1, W = 1;
  int C = 8;            // input channels, a multiple of group_width
  int hidden = 32;      // α·C, the FFN's hidden width
  int C_out = 8;        // output channels; == C at stride 1
  int stride = 1;       // 1, or 2 (BlurPool form)
  int group_width = 8;  // channels per group of the 3x3 conv
  ConvFirstActivation activation = ConvFirstActivation::relu;
  DType dtype = DType::f32;  // every tensor; accumulation fp32 or wider

  int P() const { return stride == 1 ? H : (H - 1) / 2 + 1; }  // output rows
  int Q() const { return stride == 1 ? W : (W - 1) / 2 + 1; }  // output columns
  int groups() const { return C / group_width; }
  bool has_projection() const { return stride == 2 && C_out != C; }

  // ---- element counts --------------------------------------------------------------
  double input_pixels() const { return double(N) * H * W; }
  double output_pixels() const { return double(N) * P() * Q(); }
  double x_elems() const { return input_pixels() * C; }
  double y_elems() const { return output_pixels() * C_out; }
  double t_elems() const { return input_pixels() * C; }            // the conv output, full resolution
  double hidden_elems() const { return output_pixels() * hidden; }  // the FFN's hidden tensor
  double weight_elems() const {
    double w = double(C) * 9 * group_width + C                      // conv_w, conv_b
               + double(C) * hidden + hidden                        // U, a
               + double(hidden) * C_out + C_out;                    // V, b
    if (has_projection()) w += double(C) * C_out + C_out;           // Wsc, bsc
    return w;
  }

  // ---- work: multiply-accumulates of the conv and the matrix products (§5.1
  // counts only these; biases, φ and the residual add are not counted). The
  // conv runs at stride 1 over all H×W positions in both forms; the blur's
  // 9 taps per element are not counted (they are additions by constants).
  double conv_macs() const { return input_pixels() * C * 9.0 * group_width; }
  double ffn_macs() const { return output_pixels() * (double(C) * hidden + double(hidden) * C_out); }
  double shortcut_macs() const { return has_projection() ? output_pixels() * double(C) * C_out : 0.0; }
  double macs() const { return conv_macs() + ffn_macs() + shortcut_macs(); }
  double flops() const { return 2.0 * macs(); }

  // Compulsory DRAM bytes of the fused plan (Fig. 7b): x read once, the
  // weights once, y written once. No t, no hidden tensor.
  double min_bytes() const { return dtype_size(dtype) * (x_elems() + weight_elems() + y_elems()); }
  // DRAM bytes of the layer-by-layer plan (Fig. 7a) with every layer at its
  // own floor and bias/φ/residual fused into the layers' epilogues:
  //   stride 1: conv writes t, expand reads t and writes h, project reads h
  //             and x (residual): + 2|t| + 2|h| + |x| over min_bytes;
  //   stride 2: + t written and read by the blur, t' written and read, the
  //             shortcut blur reads x again and writes/reads s.
  double layer_by_layer_bytes() const;
  // Bytes the suite's own layer-by-layer rungs (10a) move: the conv2d and
  // ffn rungs they call add a bias pass over t and the ffn's own passes
  // (FfnProblem::layer_by_layer_bytes), and a residual pass over y.
  double suite_layer_by_layer_bytes() const;

  // Tolerance depth (core/compare.hpp): three chained reductions (conv 72,
  // expand C, project hidden; the shortcut C more at stride 2), errors adding
  // in quadrature as in FfnProblem::reduction_depth.
  int reduction_depth() const { return 9 * group_width + C + hidden + (has_projection() ? C : 0); }

  bool valid() const;
  std::string invalid_reason() const;  // "" when valid
};

// ---- the tensor machine (§5.1): an execution plan as data ----------------------------
enum class Place { dram, global, local };  // DRAM; on-chip shared by all SMs (L2, DSMEM); one SM's smem/registers
const char* place_name(Place p);

struct PlanTensor {
  std::string name;  // "x", "t", "h", "U", ...
  Place place;
  double elems;      // elements of the whole tensor (a local tensor: its size summed over all tiles)
  std::string note;  // how it moves
};
struct PlanKernel {  // one kernel launch of the plan: what the waterline adds up (Eq. 12)
  std::string name;
  double macs;
  double dram_bytes;
};
struct ConvFirstPlan {
  std::string name;   // "layer_by_layer", "fused", "large_c", "large_c_hidden"
  std::string figure; // "Fig. 7a"
  std::string summary;
  std::vector<PlanTensor> tensors;
  std::vector<PlanKernel> kernels;
  double global_bytes = 0;  // traffic between the SMs and the on-chip global memory (L2 / DSMEM), estimated
  double ctas = 0;          // CTAs of the one fused kernel (tiles × split); 0 for one kernel per layer
  double macs() const;
  double dram_bytes() const;
};
// Every plan of p: layer by layer, fused (tile of `tile_pixels` output pixels
// per CTA), and large-C over `split` CTAs of a cluster, cut by output channel
// ("large_c": h exchanged every chunk) and by hidden column ("large_c_hidden":
// partial sums of Z exchanged once per tile).
std::vector<ConvFirstPlan> convfirst_plans(const ConvFirstProblem& p, int tile_pixels = 128, int split = 2);

template <> struct Args<ConvFirstProblem> {
  const void* x;           // [N, H, W, C]            NHWC
  const void* conv_w;      // [C, 3, 3, group_width]  KRSC grouped, BN folded
  const void* conv_b;      // [C]
  const void* u;           // [C, hidden]             row-major
  const void* a;           // [hidden]
  const void* v;           // [hidden, C_out]         row-major
  const void* b;           // [C_out]
  const void* shortcut_w;  // [C, C_out] when has_projection(), else nullptr
  const void* shortcut_b;  // [C_out]    likewise
  void* y;                 // [N, P, Q, C_out]        NHWC; poisoned before each run
  void* workspace;         // workspace_bytes(problem) bytes, or nullptr
};

template <> struct OpTraits<ConvFirstProblem> {
  static constexpr const char* name = "convfirst";
  static std::vector<TensorSpec> inputs(const ConvFirstProblem& p);
  static std::vector<TensorSpec> outputs(const ConvFirstProblem& p);
  static Args<ConvFirstProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const ConvFirstProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  static std::vector<ConvFirstProblem> shapes(ShapeTable table, Device device);
  // spec "N=128,H=56,W=56,C=64,hidden=256,C_out=64,stride=1,gw=8,act=relu,dtype=f16"
  // (W defaults to H, hidden to 4·C, C_out to C, stride 1, gw 8, act relu,
  // dtype f32); label "n128_56x56_c64_h256_co64_s1_relu_f16".
  static std::string spec(const ConvFirstProblem& p);
  static std::string label(const ConvFirstProblem& p);
  static ConvFirstProblem parse(const std::string& spec);
  // From the user's x, conv_w, conv_b, u, a, v, b (and shortcut_w, shortcut_b
  // for a projecting stride-2 block); stride and act from `options`.
  static ConvFirstProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
  // 7 inputs, or 9 with the stride-2 projection's shortcut_w and shortcut_b.
  static std::vector<std::size_t> input_counts() { return {7, 9}; }
};

}  // namespace convlab
