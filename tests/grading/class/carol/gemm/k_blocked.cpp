// Planted submission (tests/grading): right on every public shape, wrong on a
// hidden one — it blocks K by 560 and forgets to loop over the blocks, so any
// K > 560 (none in the public table) loses its tail.
#include <algorithm>

#include "ops/gemm.hpp"

namespace convlab {
namespace {

constexpr int kKc = 560;

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const float* A = static_cast<const float*>(a.a);
  const float* B = static_cast<const float*>(a.b);
  float* C = static_cast<float*>(a.c);
  const int M = p.M, N = p.N, kc = std::min(p.K, kKc);  // the bug: only the first K block
  for (int i = 0; i < M * N; ++i) C[i] = 0.f;
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < kc; ++k)
      for (int j = 0; j < N; ++j) C[i * N + j] += A[i * p.K + k] * B[k * N + j];
}

const Register<GemmProblem> reg{{.name = "carol_k_blocked", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
