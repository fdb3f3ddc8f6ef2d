// cpu/gemm/05_microkernel.cpp — lesson 03, rung 5: the register micro-kernel.
//
// Idea over 04_packing: keep the 6 × 16 tile of C in registers for the whole
// depth of the packed panels instead of loading and storing it at every k.
// With AVX2 that is 12 ymm registers of 8 floats. Per step k the kernel loads
// two vectors of B (16 floats), broadcasts each of the six values of A in
// turn, and issues 12 FMAs that do not depend on each other:
//
//   04 (tile in memory), per k:            05 (tile in registers), per k:
//     for i < 6:                              b0, b1 = Bp[k][0:8], Bp[k][8:16]
//       c_row = load C row i                  for i < 6:
//       c_row += Ap[k][i] · Bp[k][0:16]         a = broadcast(Ap[k][i])
//       store c_row                             acc[i][0] += a·b0;  acc[i][1] += a·b1   (FMA)
//                                           ... and C is touched once, after the last k.
//
// Why 6 × 16: 12 accumulators + 2 B vectors + 1 broadcast = 15 of the 16 ymm
// registers, and 12 independent FMAs cover both FMA pipes through the
// 4-cycle latency (2 × 4 = 8 needed). Each loaded float of B is used 6 times
// and each float of A 16 times from a register: 12 FMAs per 8 loads, well
// inside what the load ports sustain. The tunables and these constraints are
// the static_asserts at the top of gemm_kernels.hpp; the kernel is
// micro_kernel_avx2 there.
//
// Run-time dispatch: the AVX2/FMA kernel is compiled with
// __attribute__((target("avx2,fma"))) whatever flags the build uses, and
// chosen only if the CPU running the program reports AVX2 and FMA
// (__builtin_cpu_supports, checked once). Otherwise — or when the
// environment sets CONVLAB_NO_AVX2=1 — the portable kernel runs: the same
// register tile in plain C++ (micro_kernel_portable), which the compiler
// vectorises for whatever ISA it targets. The first run says on stderr when
// the fallback is in use. tests/gemm_cpu_test.cpp runs both paths.
// Edges: unchanged from 04 — zero-padded panels, and partial tiles through a
// buffer in the macro-kernel, so the kernel's loop has no branches.
// Cost: the same packing and workspace as 04; one thread.
// Run just this: build/convlab run gemm/cpu/05_microkernel
//                CONVLAB_NO_AVX2=1 build/convlab run gemm/cpu/05_microkernel   (the portable path)
#include <cstddef>
#include <iostream>

#include "core/ops/gemm.hpp"
#include "cpu/gemm/gemm_kernels.hpp"

namespace convlab {
namespace {

std::size_t workspace_bytes(const GemmProblem& p) { return cpu_gemm::packed_workspace_bytes(p, /*threads=*/1); }

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  const cpu_gemm::MicroKernelChoice& choice = cpu_gemm::selected_micro_kernel();
  static const bool said = [&] {
    if (!choice.avx2)
      std::cerr << "gemm/cpu/05_microkernel: AVX2/FMA " << (cpu_gemm::cpu_has_avx2_fma() ? "disabled" : "absent")
                << ": using the portable micro-kernel\n";
    return true;
  }();
  (void)said;
  cpu_gemm::gemm_packed(p, static_cast<const float*>(args.a),  // [M, K] row-major
                        static_cast<const float*>(args.b),     // [K, N] row-major
                        static_cast<float*>(args.c),           // [M, N] row-major
                        args.workspace, choice.kernel);
}

const Register<GemmProblem> reg{{
    .name = "05_microkernel",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::single,
    .idea = "6x16 C tile in 12 AVX2 registers, FMA per k (checked at run time; portable fallback)",
}};

}  // namespace
}  // namespace convlab
