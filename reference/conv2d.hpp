// reference/conv2d.hpp — the scalar oracle for conv2d and GEMM.
//
// Plain loops, double accumulation, no cleverness: these functions define what
// every variant must compute. Inputs are double copies of the (already
// rounded) tensors a variant sees, so the only error a variant can show is its
// own arithmetic.
#pragma once

#include "core/problems.hpp"

namespace convlab::ref {

// y[N,P,Q,K] = Σ_{r,s,t} w[k,r,s,t] · x[n, p·stride+r−pad, q·stride+s−pad, g(k)·T+t]
// (Eq. 18, with stride and zero padding). Layouts as in ConvProblem.
// Throws std::invalid_argument when !p.valid() (the message is
// p.invalid_reason()) or a buffer is null.
void conv2d(const ConvProblem& p, const double* x, const double* w, double* y);

// One output of that sum, y[n, oh, ow, k], for oracles of fused layers that
// need the conv's value at a pixel without materialising y (no checks: the
// caller validated p and the buffers).
double conv2d_at(const ConvProblem& p, const double* x, const double* w, int n, int oh, int ow, int k);

// c[M,N] = a[M,K] · b[K,N], row-major. Throws std::invalid_argument unless
// M, N, K > 0 and every buffer is non-null.
void gemm(int M, int N, int K, const double* a, const double* b, double* c);

}  // namespace convlab::ref
