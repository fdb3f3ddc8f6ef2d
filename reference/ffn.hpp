// reference/ffn.hpp — the fully connected layer and the position-wise
// feed-forward network of Eq. 30, FFN(X) = φ(X·U + a)·V + b.
//
// Matrix convention, used by every channel-mixing weight in reference/ that is
// not a spatial conv (FFN's U and V, the blocks' 1x1 layers, squeeze-excitation's
// FC layers): W is [in, out] row-major and the layer computes Y = X·W, exactly
// the B operand of ref::gemm and the orientation of U and V in Eq. 30. A 1x1
// conv's KRSC weight [out, 1, 1, in] is the transpose of this matrix.
#pragma once

#include <cstdint>

#include "reference/elementwise.hpp"

namespace convlab::ref {

// y = x·w + bias
//   x:    [rows, in]   row-major (NHWC activations with rows = N·H·W)
//   w:    [in, out]    row-major
//   bias: [out], or nullptr for none
//   y:    [rows, out]  must not overlap x
// Throws std::invalid_argument unless rows >= 0, in, out > 0 and x, w, y are
// non-null.
void linear(int64_t rows, int in, int out, const double* x, const double* w, const double* bias, double* y);

// Shapes of one FFN. Eq. 30 is in_channels == out_channels == C and
// hidden_channels == α·C; out_channels may differ from in_channels (ConvFirst's
// stride-2 block projects to a new width).
struct FfnShape {
  int64_t P = 1;            // rows (pixels, N·H·W, or tokens)
  int in_channels = 1;      // C
  int hidden_channels = 1;  // α·C
  int out_channels = 1;     // C in Eq. 30
  Activation activation = Activation::relu;  // φ
};

// z = φ(x·u + a)·v + b, computed layer by layer (hidden tensor materialized).
//   x: [P, in_channels]                 row-major
//   u: [in_channels, hidden_channels]   row-major
//   a: [hidden_channels], or nullptr for none
//   v: [hidden_channels, out_channels]  row-major
//   b: [out_channels], or nullptr for none
//   z: [P, out_channels]                must not overlap x
// Throws std::invalid_argument on non-positive sizes, P < 0 or a null x, u, v, z.
void ffn(const FfnShape& shape, const double* x, const double* u, const double* a, const double* v, const double* b,
         double* z);

}  // namespace convlab::ref
