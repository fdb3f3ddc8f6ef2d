// reference/gemm.hpp — the scalar GEMM oracle: plain loops, double accumulation.
#pragma once

namespace convlab::ref {

// c[M,N] = a[M,K] · b[K,N], row-major. Throws std::invalid_argument unless
// M, N, K > 0 and every buffer is non-null.
void gemm(int M, int N, int K, const double* a, const double* b, double* c);

}  // namespace convlab::ref
