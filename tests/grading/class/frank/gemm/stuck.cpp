// Planted submission (tests/grading): hangs — its column step is N / 2, which
// is 0 when N = 1 (the first public shape), so that loop never ends.
#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const float* A = static_cast<const float*>(a.a);
  const float* B = static_cast<const float*>(a.b);
  float* C = static_cast<float*>(a.c);
  const int half = p.N / 2;
  for (int i = 0; i < p.M; ++i)
    for (int j0 = 0; j0 < p.N; j0 += half)                 // N = 1: j0 += 0, forever
      for (int j = j0; j < p.N && j < j0 + (half ? half : 1); ++j) {
        float s = 0;
        for (int k = 0; k < p.K; ++k) s += A[i * p.K + k] * B[k * p.N + j];
        *static_cast<volatile float*>(&C[i * p.N + j]) = s;
      }
}

const Register<GemmProblem> reg{{.name = "frank_stuck", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
