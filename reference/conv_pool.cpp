// reference/conv_pool.cpp — the plain-loop fused-layer oracle declared in conv_pool.hpp.

#include "reference/conv_pool.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "reference/conv2d.hpp"
#include "reference/validate.hpp"

namespace convlab::ref {

namespace {
// Over every pooled output (n, i, j, k): the best of `value(conv, k)` over its
// four conv outputs, conv = conv2d(x, w) at (2i + a, 2j + b).
template <class Value>
void pool_windows(const char* who, const ConvShape& c, const double* x, const double* w, const double* scale,
                  const double* bias, double* y, Value value) {
  detail::require(c.valid(), who, c.invalid_reason());
  detail::require(c.P() >= 2 && c.Q() >= 2, who, "the conv output must be at least 2x2 for a 2x2 max-pool");
  detail::require_buffer(who, "x", x);
  detail::require_buffer(who, "w", w);
  detail::require_buffer(who, "scale", scale);
  detail::require_buffer(who, "bias", bias);
  detail::require_buffer(who, "y", y);
  const int P2 = c.P() / 2, Q2 = c.Q() / 2;
  // Parallel only so large benchmark shapes are re-checked quickly; every
  // output is still computed on its own, in plain loops.
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < c.N; ++n)
    for (int i = 0; i < P2; ++i)
      for (int j = 0; j < Q2; ++j)
        for (int k = 0; k < c.K; ++k) {
          double best = -std::numeric_limits<double>::infinity();
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) best = std::max(best, value(conv2d_at(c, x, w, n, 2 * i + a, 2 * j + b, k), k));
          y[((int64_t(n) * P2 + i) * Q2 + j) * c.K + k] = best;
        }
}
}  // namespace

void conv_bias_relu_pool(const ConvShape& c, const double* x, const double* w, const double* scale,
                         const double* bias, double* y) {
  pool_windows("conv_bias_relu_pool", c, x, w, scale, bias, y,
               [&](double acc, int k) { return std::max(acc * scale[k] + bias[k], 0.0); });
}

void conv_bias_relu_pool_magnitude(const ConvShape& c, const double* x, const double* w, const double* scale,
                                   const double* bias, double* m) {
  pool_windows("conv_bias_relu_pool_magnitude", c, x, w, scale, bias, m,
               [&](double acc, int k) { return std::abs(acc * scale[k]) + std::abs(bias[k]); });
}

}  // namespace convlab::ref
