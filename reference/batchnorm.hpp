// reference/batchnorm.hpp — inference-time batch normalization, applied as a
// layer and folded into the weights and bias of the convolution before it.
//
// At inference BN is a fixed affine map per channel,
//   BN(t)[c] = γ[c]·(t[c] − μ[c]) / √(σ²[c] + ε) + β[c],
// so conv-then-BN equals one convolution with every output channel's filter
// scaled by s[k] = γ[k]/√(σ²[k] + ε) and bias b'[k] = (b[k] − μ[k])·s[k] + β[k].
// Fused kernels (ConvFirst, MBConv) only ever see the folded weights.
#pragma once

#include <cstdint>

#include "reference/conv2d.hpp"

namespace convlab::ref {

// The running statistics and affine parameters of one BN layer; every pointer
// is an array of the layer's channel count.
struct BatchNormParams {
  const double* gamma = nullptr;     // [C] scale γ
  const double* beta = nullptr;      // [C] shift β
  const double* mean = nullptr;      // [C] running mean μ
  const double* variance = nullptr;  // [C] running variance σ²
  double eps = 1e-5;                 // ε, added to σ² before the square root
};

// y[p, c] = γ[c]·(x[p, c] − μ[c]) / √(σ²[c] + ε) + β[c]
//   x, y: [pixels, channels]  (NHWC with pixels = N·H·W), x == y allowed
// Throws std::invalid_argument on non-positive channels, negative pixels, a
// null buffer, or σ²[c] + ε <= 0 for some channel.
void batchnorm_inference(int64_t pixels, int channels, const double* x, const BatchNormParams& bn, double* y);

// Folds BN (over the conv's p.K output channels) into the conv weights:
//   w:            [K, R, S, C/groups]  KRSC conv weights of problem p
//   conv_bias:    [K], or nullptr for a conv without bias
//   folded_w:     [K, R, S, C/groups]  w[k,…]·s[k]
//   folded_bias:  [K]                  (conv_bias[k] − μ[k])·s[k] + β[k]
// so that conv2d(p, x, folded_w) + folded_bias == BN(conv2d(p, x, w) + conv_bias).
// Throws std::invalid_argument when !p.valid(), a required buffer is null, or
// σ²[k] + ε <= 0.
void fold_batchnorm(const ConvShape& p, const double* w, const double* conv_bias, const BatchNormParams& bn,
                    double* folded_w, double* folded_bias);

}  // namespace convlab::ref
