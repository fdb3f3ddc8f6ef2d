// Planted submission (tests/grading): bob's first attempt, correct and slow;
// his fast one (fast.cpp) is the one his row must show.
#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const float* A = static_cast<const float*>(a.a);
  const float* B = static_cast<const float*>(a.b);
  float* C = static_cast<float*>(a.c);
  for (int j = 0; j < p.N; ++j)
    for (int i = 0; i < p.M; ++i) {
      double s = 0;
      for (int k = 0; k < p.K; ++k) s += double(A[i * p.K + k]) * B[k * p.N + j];
      C[i * p.N + j] = float(s);
    }
}

const Register<GemmProblem> reg{{.name = "bob_first_try", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
