// Planted submission (tests/grading): allocates absurdly — a "scratch buffer"
// sized in elements squared, 2^40 floats (4 TiB), refused under the memory limit.
#include <vector>

#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  std::vector<float> scratch(std::size_t(1) << 40);
  float* C = static_cast<float*>(a.c);
  for (int i = 0; i < p.M * p.N; ++i) C[i] = scratch[std::size_t(i)];
}

const Register<GemmProblem> reg{{.name = "hank_huge_scratch", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
