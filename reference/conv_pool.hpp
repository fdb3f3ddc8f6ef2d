// reference/conv_pool.hpp — the scalar oracle of lesson 07's fused layer:
// conv → per-channel scale/bias → ReLU → 2x2 max-pool, in one set of plain loops.
#pragma once

#include "reference/conv2d.hpp"

namespace convlab::ref {

// y[n, i, j, k] = max over a, b ∈ {0, 1} of
//                   relu(conv2d(x, w)[n, 2i+a, 2j+b, k]·scale[k] + bias[k])
// for i < P/2, j < Q/2 (floor: an odd last conv row / column is never read).
//   x [N,H,W,C] NHWC, w [K,R,S,C/groups] KRSC, scale [K], bias [K], y [N,P/2,Q/2,K] NHWC.
// Written as its own loops (each pooled output sums its four windows' convs
// directly), so that tests can hold it against the composition
// ref::conv2d → ref::channel_scale_bias → ref::relu → ref::maxpool2x2.
// `conv` is the conv's geometry (P, Q its full-resolution output).
// Throws std::invalid_argument when !conv.valid(), the conv output is smaller
// than 2x2, or a buffer is null.
void conv_bias_relu_pool(const ConvShape& conv, const double* x, const double* w, const double* scale,
                         const double* bias, double* y);

// The size each output's rounding error scales with (core/compare.hpp):
// m[n, i, j, k] = max over the same four conv outputs of |conv·scale[k]| + |bias[k]|,
// the terms of the epilogue's add. Same arguments and checks as above.
void conv_bias_relu_pool_magnitude(const ConvShape& conv, const double* x, const double* w, const double* scale,
                                   const double* bias, double* m);

}  // namespace convlab::ref
