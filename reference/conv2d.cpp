// reference/conv2d.cpp — the plain-loop conv2d and GEMM oracles declared in conv2d.hpp.

#include "reference/conv2d.hpp"

#include <cstdint>

#include "reference/validate.hpp"

namespace convlab::ref {

double conv2d_at(const ConvProblem& p, const double* x, const double* w, int n, int oh, int ow, int k) {
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

void conv2d(const ConvProblem& p, const double* x, const double* w, double* y) {
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

void gemm(int M, int N, int K, const double* a, const double* b, double* c) {
  detail::require_positive("gemm", "M", M);
  detail::require_positive("gemm", "N", N);
  detail::require_positive("gemm", "K", K);
  detail::require_buffer("gemm", "a", a);
  detail::require_buffer("gemm", "b", b);
  detail::require_buffer("gemm", "c", c);
  // Row i of c is built as Σ_k a[i,k] · (row k of b): the same sums as the
  // textbook i-j-k loop, in the same k order for every element, but reading b
  // along its rows, so an 8192³ benchmark shape is re-checked in seconds.
#pragma omp parallel for schedule(static)
  for (int i = 0; i < M; ++i) {
    double* ci = c + int64_t(i) * N;
    for (int j = 0; j < N; ++j) ci[j] = 0.0;
    for (int k = 0; k < K; ++k) {
      const double aik = a[int64_t(i) * K + k];
      const double* bk = b + int64_t(k) * N;
      for (int j = 0; j < N; ++j) ci[j] += aik * bk[j];
    }
  }
}

}  // namespace convlab::ref
