// tests/duplicate_id/first.cpp — one of two files that register the same id
// (gemm/cpu/duplicate_probe), as a student who copies a rung without renaming
// it would. Built into convlab_duplicate_id only, never into the suite: that
// program must refuse to start (tests/registry_test.cpp).
#include "ops/gemm.hpp"

namespace convlab {
namespace {
void run(const GemmProblem&, const Args<GemmProblem>&) {}
const Register<GemmProblem> reg{{.name = "duplicate_probe", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run}};
}  // namespace
}  // namespace convlab
