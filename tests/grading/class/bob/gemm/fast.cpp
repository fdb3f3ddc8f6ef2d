// Planted submission (tests/grading): correct and fast — (i, k, j) loops over
// a block of four rows of C at a time, the inner loop unit-stride (SIMD).
#include <algorithm>

#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const float* A = static_cast<const float*>(a.a);
  const float* B = static_cast<const float*>(a.b);
  float* C = static_cast<float*>(a.c);
  const int M = p.M, N = p.N, K = p.K;
  for (int i = 0; i < M * N; ++i) C[i] = 0.f;
  for (int i0 = 0; i0 < M; i0 += 4) {
    const int i1 = std::min(M, i0 + 4);
    for (int k = 0; k < K; ++k) {
      const float* b = B + k * N;
      for (int i = i0; i < i1; ++i) {
        const float x = A[i * K + k];
        float* c = C + i * N;
        for (int j = 0; j < N; ++j) c[j] += x * b[j];
      }
    }
  }
}

const Register<GemmProblem> reg{{.name = "bob_fast", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
