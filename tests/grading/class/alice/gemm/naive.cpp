// Planted submission (tests/grading): correct and slow — the plain (i, j, k)
// loops, a dot product per C(i, j) down a column of B.
#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const float* A = static_cast<const float*>(a.a);  // [M, K] row-major
  const float* B = static_cast<const float*>(a.b);  // [K, N] row-major
  float* C = static_cast<float*>(a.c);              // [M, N] row-major
  for (int i = 0; i < p.M; ++i)
    for (int j = 0; j < p.N; ++j) {
      float s = 0;
      for (int k = 0; k < p.K; ++k) s += A[i * p.K + k] * B[k * p.N + j];
      C[i * p.N + j] = s;
    }
}

const Register<GemmProblem> reg{{.name = "alice_naive", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
