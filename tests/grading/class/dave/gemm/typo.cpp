// Planted submission (tests/grading): does not compile (an undeclared name).
#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  float* C = static_cast<float*>(a.c);
  for (int i = 0; i < p.M * p.N; ++i) C[i] = accumulator;
}

const Register<GemmProblem> reg{{.name = "dave_typo", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
