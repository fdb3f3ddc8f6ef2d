// reference/conv2d.cpp — the plain-loop conv2d oracle declared in conv2d.hpp.

#include "reference/conv2d.hpp"

#include <cstdint>

#include "reference/validate.hpp"

namespace convlab::ref {

double conv2d_at(const ConvShape& p, const double* x, const double* w, int n, int oh, int ow, int k) {
  const int T = p.T(), g = k / p.K_per_group();
  double acc = 0.0;
  for (int r = 0; r < p.R; ++r)
    for (int s = 0; s < p.S; ++s) {
      const int ih = oh * p.stride + r - p.pad, iw = ow * p.stride + s - p.pad;
      if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;  // zero padding
      for (int t = 0; t < T; ++t)
        acc += w[((int64_t(k) * p.R + r) * p.S + s) * T + t] *
               x[((int64_t(n) * p.H + ih) * p.W + iw) * p.C + g * T + t];
    }
  return acc;
}

void conv2d(const ConvShape& p, const double* x, const double* w, double* y) {
  detail::require(p.valid(), "conv2d", p.invalid_reason());
  detail::require_buffer("conv2d", "x", x);
  detail::require_buffer("conv2d", "w", w);
  detail::require_buffer("conv2d", "y", y);
  const int P = p.P(), Q = p.Q();
  // The outer loop is parallel only so that large benchmark shapes can be
  // re-checked in seconds; every output is still one plain sum.
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < p.N; ++n)
    for (int oh = 0; oh < P; ++oh)
      for (int ow = 0; ow < Q; ++ow)
        for (int k = 0; k < p.K; ++k)
          y[((int64_t(n) * P + oh) * Q + ow) * p.K + k] = conv2d_at(p, x, w, n, oh, ow, k);
}

}  // namespace convlab::ref
