// reference/conv_pool.cpp — the plain-loop fused-layer oracle declared in conv_pool.hpp.

#include "reference/conv_pool.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "reference/conv2d.hpp"
#include "reference/validate.hpp"

namespace convlab::ref {

void conv_bias_relu_pool(const ConvShape& c, const double* x, const double* w, const double* scale,
                         const double* bias, double* y) {
  detail::require(c.valid(), "conv_bias_relu_pool", c.invalid_reason());
  detail::require(c.P() >= 2 && c.Q() >= 2, "conv_bias_relu_pool",
                  "the conv output must be at least 2x2 for a 2x2 max-pool");
  detail::require_buffer("conv_bias_relu_pool", "x", x);
  detail::require_buffer("conv_bias_relu_pool", "w", w);
  detail::require_buffer("conv_bias_relu_pool", "scale", scale);
  detail::require_buffer("conv_bias_relu_pool", "bias", bias);
  detail::require_buffer("conv_bias_relu_pool", "y", y);
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
            for (int b = 0; b < 2; ++b) {  // the conv output (2i + a, 2j + b) this window element is
              const double acc = conv2d_at(c, x, w, n, 2 * i + a, 2 * j + b, k);
              best = std::max(best, std::max(acc * scale[k] + bias[k], 0.0));
            }
          y[((int64_t(n) * P2 + i) * Q2 + j) * c.K + k] = best;
        }
}

}  // namespace convlab::ref
