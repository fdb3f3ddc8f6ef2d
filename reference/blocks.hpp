// reference/blocks.hpp — whole residual blocks, the oracles for lesson 10's
// fused ConvFirst kernel and lesson 11's fused MBConv kernel.
//
// Inference form: every batch-norm is already folded into the weights and
// bias of the layer before it (ref::fold_batchnorm), so a block is only convs,
// FC/1x1 layers, biases, activations and pooling. Conventions shared by both:
//   * activations NHWC; spatial convs KRSC (grouped: K × R × S × C/G);
//   * 1x1 layers are [in, out] row-major matrices (ffn.hpp's convention,
//     Y[pixels, out] = X[pixels, in]·W), i.e. the transpose of a KRSC 1x1 weight;
//   * every bias pointer may be nullptr, meaning a zero bias;
//   * no activation after the residual sum.
#pragma once

#include "reference/elementwise.hpp"

namespace convlab::ref {

// =============================================================================
// ConvFirst (Lavin 2024, §5.3): grouped 3x3 conv first, then an FFN (Eq. 30),
// with a residual shortcut.
//
// stride 1  (out_channels must equal in_channels):
//   t = gconv3x3(x) + conv_b            [N, H, W, C]    groups C/group_width, pad 1, no activation
//   y = φ(t·U + a)·V + b  +  x          [N, H, W, C]
//
// stride 2  (the downsampling block; BlurPool as in the paper's Figure 6c):
//   t = gconv3x3(x) + conv_b            [N, H, W, C]    the conv itself runs at stride 1
//   t' = blurpool(t)                    [N, P, Q, C]    pooling.hpp: binomial 3x3, stride 2, zero pad 1
//   f = φ(t'·U + a)·V + b               [N, P, Q, Cout]
//   s = blurpool(x)                     [N, P, Q, C]    the shortcut is blurred too
//   s = s·Wsc + bsc   when Cout != C    [N, P, Q, Cout] 1x1 projection shortcut
//   y = f + s                           [N, P, Q, Cout]
//   with P = (H − 1)/2 + 1 = ceil(H/2), Q likewise.
// Note that blurpool zero-pads the conv OUTPUT t (t is 0 outside the image,
// the conv bias does not leak into the padding), and the shortcut blur
// zero-pads x the same way.
// The only activation is φ inside the FFN: none after the grouped conv (as in
// ConvNeXt) and none after the sum.
// =============================================================================
struct ConvFirstShape {
  int N = 1, H = 1, W = 1;
  int in_channels = 8;       // C, a multiple of group_width
  int hidden_channels = 32;  // α·C, the FFN's hidden width
  int out_channels = 8;      // Cout; must equal C when stride == 1
  int stride = 1;            // 1 or 2
  int group_width = 8;       // channels per group of the 3x3 conv (8 in the paper: one mma.m16n8k8 k-slice)
  Activation activation = Activation::relu;  // φ (ReLU in the paper; SiLU for larger models)

  int groups() const { return in_channels / group_width; }
  int P() const { return stride == 1 ? H : (H - 1) / 2 + 1; }  // output height
  int Q() const { return stride == 1 ? W : (W - 1) / 2 + 1; }  // output width
  bool has_projection_shortcut() const { return stride == 2 && out_channels != in_channels; }
};

struct ConvFirstWeights {
  const double* conv_w = nullptr;      // [C, 3, 3, group_width]  KRSC grouped 3x3, BN folded
  const double* conv_b = nullptr;      // [C]                      BN folded
  const double* expand_w = nullptr;    // U  [C, hidden]           FFN layer 1
  const double* expand_b = nullptr;    // a  [hidden]
  const double* project_w = nullptr;   // V  [hidden, Cout]        FFN layer 2, BN folded
  const double* project_b = nullptr;   // b  [Cout]
  const double* shortcut_w = nullptr;  // [C, Cout] iff has_projection_shortcut(), else must be nullptr
  const double* shortcut_b = nullptr;  // [Cout]    likewise
};

//   x: [N, H, W, C]          NHWC
//   y: [N, P, Q, Cout]       NHWC, must not overlap x
// Computed one output pixel at a time, the way a block-fusion kernel does: the
// grouped conv (and blur) for that pixel, the FFN on its channel vector, then
// the shortcut. Any H, W >= 1 works. Throws std::invalid_argument on
// non-positive sizes, stride not 1 or 2, C not a multiple of group_width,
// Cout != C at stride 1, a missing conv_w / expand_w / project_w (or
// shortcut_w when the shortcut projects), or shortcut weights given where the
// shortcut is the identity.
void convfirst_block(const ConvFirstShape& shape, const ConvFirstWeights& weights, const double* x, double* y);

// =============================================================================
// MBConv (MobileNetV2's inverted residual with EfficientNet's squeeze-excitation):
//   e = φ(x·We + be)                     [N, H, W, hidden]  1x1 expand (skipped when expand_w == nullptr)
//   d = φ(dwconvKxK(e) + bd)             [N, P, Q, hidden]  depthwise, K = 3 or 5, pad K/2, stride 1 or 2
//   d' = squeeze_excitation(d)           [N, P, Q, hidden]  ψ inside, sigmoid gate (squeeze_excitation.hpp);
//                                                           skipped (d' = d) when se_channels == 0
//   y = d'·Wp + bp  (+ x)                [N, P, Q, Cout]    1x1 project, no activation;
//                                                           + x only when stride == 1 and Cout == C
//   P = (H − 1)/stride + 1, Q likewise (i.e. (H + 2·(K/2) − K)/stride + 1 for odd K).
// When expand_w is nullptr (EfficientNet's expand ratio 1) the expand layer is
// absent, e = x, and hidden_channels must equal in_channels. With
// se_channels == 0 the block is MobileNetV2's inverted residual (no SE), and
// the four SE weight pointers must be nullptr.
// =============================================================================
struct MBConvShape {
  int N = 1, H = 1, W = 1;
  int in_channels = 16;      // C
  int hidden_channels = 64;  // α·C, the expanded width (depthwise and SE run here)
  int out_channels = 16;     // Cout
  int stride = 1;            // 1 or 2, on the depthwise conv
  int kernel_size = 3;       // K, the depthwise window: 3 or 5 (EfficientNet uses both)
  int se_channels = 4;       // SE bottleneck width Cr (EfficientNet: max(1, C/4), C = block input channels); 0: no SE
  Activation activation = Activation::silu;     // φ after expand and after depthwise
  Activation se_activation = Activation::silu;  // ψ between SE's two FC layers

  int P() const { return (H - 1) / stride + 1; }
  int Q() const { return (W - 1) / stride + 1; }
  int pad() const { return kernel_size / 2; }
  bool has_se() const { return se_channels > 0; }
  bool has_residual() const { return stride == 1 && out_channels == in_channels; }
};

struct MBConvWeights {
  const double* expand_w = nullptr;     // [C, hidden], or nullptr: no expand layer (needs hidden == C)
  const double* expand_b = nullptr;     // [hidden]
  const double* depthwise_w = nullptr;  // [hidden, K, K, 1]  KRSC depthwise (groups = hidden)
  const double* depthwise_b = nullptr;  // [hidden]
  const double* se_reduce_w = nullptr;  // [hidden, se_channels]   (these four: nullptr when se_channels == 0)
  const double* se_reduce_b = nullptr;  // [se_channels]
  const double* se_expand_w = nullptr;  // [se_channels, hidden]
  const double* se_expand_b = nullptr;  // [hidden]
  const double* project_w = nullptr;    // [hidden, Cout]
  const double* project_b = nullptr;    // [Cout]
};

//   x: [N, H, W, C]      NHWC
//   y: [N, P, Q, Cout]   NHWC, must not overlap x
// Throws std::invalid_argument on non-positive sizes (se_channels may be 0),
// stride not 1 or 2, kernel_size not 3 or 5, a missing required weight, SE
// weights given without SE, or expand_w == nullptr with hidden != C.
void mbconv_block(const MBConvShape& shape, const MBConvWeights& weights, const double* x, double* y);

}  // namespace convlab::ref
