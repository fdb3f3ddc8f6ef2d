// reference/gemm.cpp — the plain-loop GEMM oracle declared in gemm.hpp.

#include "reference/gemm.hpp"

#include <cstdint>

#include "reference/validate.hpp"

namespace convlab::ref {

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
