// reference/squeeze_excitation.hpp — squeeze-and-excitation (Hu et al. 2018),
// the channel attention of MBConv:
//
//   m = global_avgpool(x)                  [N, C]    squeeze
//   z = ψ(m·w_reduce + b_reduce)           [N, Cr]   FC C → Cr, activation ψ
//   g = sigmoid(z·w_expand + b_expand)     [N, C]    FC Cr → C, gate in (0, 1)
//   y[n,h,w,c] = x[n,h,w,c] · g[n,c]                 excite
//
// The squeeze is a global reduction over H·W: no output pixel can be finished
// before every input pixel of its image has been seen, which is what makes SE
// the hard part of a fused MBConv kernel.
#pragma once

#include "reference/elementwise.hpp"

namespace convlab::ref {

struct SqueezeExcitationShape {
  int N = 1, H = 1, W = 1;
  int channels = 1;          // C
  int reduced_channels = 1;  // Cr (EfficientNet: max(1, block input channels / 4))
  Activation activation = Activation::relu;  // ψ between the two FC layers (SiLU in EfficientNet)
};

// FC weights in the [in, out] row-major convention of ffn.hpp.
struct SqueezeExcitationWeights {
  const double* w_reduce = nullptr;  // [C, Cr]
  const double* b_reduce = nullptr;  // [Cr], or nullptr for none
  const double* w_expand = nullptr;  // [Cr, C]
  const double* b_expand = nullptr;  // [C], or nullptr for none
};

//   x: [N, H, W, C]  NHWC
//   y: [N, H, W, C]  NHWC, x == y allowed
// Throws std::invalid_argument on non-positive sizes or a null x, y, w_reduce,
// w_expand.
void squeeze_excitation(const SqueezeExcitationShape& shape, const SqueezeExcitationWeights& weights,
                        const double* x, double* y);

}  // namespace convlab::ref
