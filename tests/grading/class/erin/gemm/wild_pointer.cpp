// Planted submission (tests/grading): crashes — it writes C through a row
// pointer it never set (SIGSEGV on the first shape).
#include "ops/gemm.hpp"

namespace convlab {
namespace {

float* volatile g_rows = nullptr;  // "set up later", never

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  for (int i = 0; i < p.M * p.N; ++i) g_rows[i] = 0.f;
}

const Register<GemmProblem> reg{{.name = "erin_wild_pointer", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};

}  // namespace
}  // namespace convlab
