// Planted submission (tests/grading): correct and fast — it calls the suite's
// CPU GEMM library (packing, cache blocking, the 6 x 16 AVX2/FMA micro-kernel
// of lesson 03), as a student who finished the lesson may. Several times faster
// than the loop nests of the other planted submissions, so its first rank does
// not depend on a quiet machine.
#include "cpu/lib/gemm_kernels.hpp"
#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const cpu_gemm::MicroKernel kernel =
      cpu_has_avx2_fma() ? cpu_gemm::micro_kernel_avx2 : cpu_gemm::micro_kernel_portable;
  cpu_gemm::gemm_packed(p, static_cast<const float*>(a.a),  // A [M, K] row-major
                        static_cast<const float*>(a.b),     // B [K, N] row-major
                        static_cast<float*>(a.c),           // C [M, N] row-major
                        a.workspace, kernel);
}
std::size_t workspace(const GemmProblem& p) { return cpu_gemm::packed_workspace_bytes(p, 1); }

const Register<GemmProblem> reg{{.name = "bob_fast", .device = Device::cpu, .lesson = 3,
                                 .supports = f32_only<GemmProblem>, .run = run, .workspace_bytes = workspace}};

}  // namespace
}  // namespace convlab
