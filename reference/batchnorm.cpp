// reference/batchnorm.cpp — BN applied as a layer, and BN folded into a
// convolution (see batchnorm.hpp).
#include "reference/batchnorm.hpp"

#include <cmath>

#include "reference/validate.hpp"

namespace convlab::ref {

namespace {

void check_batchnorm(const char* where, int channels, const BatchNormParams& bn) {
  detail::require_buffer(where, "gamma", bn.gamma);
  detail::require_buffer(where, "beta", bn.beta);
  detail::require_buffer(where, "mean", bn.mean);
  detail::require_buffer(where, "variance", bn.variance);
  for (int c = 0; c < channels; ++c)
    detail::require(bn.variance[c] + bn.eps > 0.0, where,
                    "variance + eps must be positive, channel " + std::to_string(c) + " has " +
                        std::to_string(bn.variance[c] + bn.eps));
}

// s[c] = γ[c] / √(σ²[c] + ε): the factor BN multiplies channel c by.
double bn_scale(const BatchNormParams& bn, int c) { return bn.gamma[c] / std::sqrt(bn.variance[c] + bn.eps); }

}  // namespace

void batchnorm_inference(int64_t pixels, int channels, const double* x, const BatchNormParams& bn, double* y) {
  const char* where = "batchnorm_inference";
  detail::require(pixels >= 0, where, "pixels must be non-negative, got " + std::to_string(pixels));
  detail::require_positive(where, "channels", channels);
  check_batchnorm(where, channels, bn);
  if (pixels == 0) return;
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "y", y);
  for (int64_t p = 0; p < pixels; ++p)
    for (int c = 0; c < channels; ++c) {
      const int64_t i = p * channels + c;
      y[i] = bn.gamma[c] * (x[i] - bn.mean[c]) / std::sqrt(bn.variance[c] + bn.eps) + bn.beta[c];
    }
}

void fold_batchnorm(const ConvShape& p, const double* w, const double* conv_bias, const BatchNormParams& bn,
                    double* folded_w, double* folded_bias) {
  const char* where = "fold_batchnorm";
  detail::require(p.valid(), where, p.invalid_reason());
  detail::require_buffer(where, "w", w);
  detail::require_buffer(where, "folded_w", folded_w);
  detail::require_buffer(where, "folded_bias", folded_bias);
  check_batchnorm(where, p.K, bn);
  const int64_t filter_size = int64_t(p.R) * p.S * p.T();  // one output channel's weights
  for (int k = 0; k < p.K; ++k) {
    const double s = bn_scale(bn, k);
    for (int64_t i = 0; i < filter_size; ++i) folded_w[k * filter_size + i] = w[k * filter_size + i] * s;
    const double b = conv_bias ? conv_bias[k] : 0.0;
    folded_bias[k] = (b - bn.mean[k]) * s + bn.beta[k];
  }
}

}  // namespace convlab::ref
