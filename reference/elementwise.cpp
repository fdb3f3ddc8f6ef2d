// reference/elementwise.cpp — activations and per-channel scale/bias
// (see elementwise.hpp).
#include "reference/elementwise.hpp"

#include <cmath>

#include "reference/validate.hpp"

namespace convlab::ref {

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::identity: return "identity";
    case Activation::relu: return "relu";
    case Activation::silu: return "silu";
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_tanh";
  }
  return "?";
}

double relu(double x) { return x > 0.0 ? x : 0.0; }

double sigmoid(double x) {
  if (x >= 0.0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);  // e < 1: no overflow for very negative x
  return e / (1.0 + e);
}

double silu(double x) { return x * sigmoid(x); }

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

double gelu_tanh(double x) {
  const double sqrt_2_over_pi = std::sqrt(2.0 / std::acos(-1.0));
  return 0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

double activate(Activation activation, double x) {
  switch (activation) {
    case Activation::identity: return x;
    case Activation::relu: return relu(x);
    case Activation::silu: return silu(x);
    case Activation::gelu: return gelu(x);
    case Activation::gelu_tanh: return gelu_tanh(x);
  }
  detail::fail("activate", "unknown Activation value " + std::to_string(static_cast<int>(activation)));
}

namespace {

template <class Function>
void map_elements(const char* where, int64_t count, const double* x, double* y, Function f) {
  detail::require(count >= 0, where, "count must be non-negative, got " + std::to_string(count));
  if (count == 0) return;
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "y", y);
  for (int64_t i = 0; i < count; ++i) y[i] = f(x[i]);
}

}  // namespace

void relu(int64_t count, const double* x, double* y) {
  map_elements("relu", count, x, y, [](double v) { return relu(v); });
}
void sigmoid(int64_t count, const double* x, double* y) {
  map_elements("sigmoid", count, x, y, [](double v) { return sigmoid(v); });
}
void silu(int64_t count, const double* x, double* y) {
  map_elements("silu", count, x, y, [](double v) { return silu(v); });
}
void gelu(int64_t count, const double* x, double* y) {
  map_elements("gelu", count, x, y, [](double v) { return gelu(v); });
}
void gelu_tanh(int64_t count, const double* x, double* y) {
  map_elements("gelu_tanh", count, x, y, [](double v) { return gelu_tanh(v); });
}
void activate(Activation activation, int64_t count, const double* x, double* y) {
  activate(activation, 0.0);  // rejects an out-of-range enum value before any work
  map_elements("activate", count, x, y, [activation](double v) { return activate(activation, v); });
}

void channel_scale_bias(int64_t pixels, int channels, const double* x, const double* scale, const double* bias,
                        double* y) {
  const char* where = "channel_scale_bias";
  detail::require(pixels >= 0, where, "pixels must be non-negative, got " + std::to_string(pixels));
  detail::require_positive(where, "channels", channels);
  if (pixels == 0) return;
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "y", y);
  for (int64_t p = 0; p < pixels; ++p)
    for (int c = 0; c < channels; ++c) {
      const int64_t i = p * channels + c;
      y[i] = x[i] * (scale ? scale[c] : 1.0) + (bias ? bias[c] : 0.0);
    }
}

}  // namespace convlab::ref
