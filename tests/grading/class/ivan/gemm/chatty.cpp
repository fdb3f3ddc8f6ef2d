// Planted submission (tests/grading): correct, but it prints every element it
// computes: megabytes of output, over the grader's output limit.
#include <cstdio>

#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const float* A = static_cast<const float*>(a.a);
  const float* B = static_cast<const float*>(a.b);
  float* C = static_cast<float*>(a.c);
  for (int i = 0; i < p.M; ++i)
    for (int j = 0; j < p.N; ++j) {
      float s = 0;
      for (int k = 0; k < p.K; ++k) s += A[i * p.K + k] * B[k * p.N + j];
      C[i * p.N + j] = s;
      std::printf("debug: C(%d, %d) = %.9g, partial sums follow ......................\n", i, j, double(s));
    }
}

const Register<GemmProblem> reg{{.name = "ivan_chatty", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
