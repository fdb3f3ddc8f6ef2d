// cpu/gemm/03e_microkernel.cpp — lesson 03, rung 03e: the register micro-kernel.
//
// Idea over 03d_packing: 04's inner loop loads C(i, j) from L1 and stores it
// back around every FMA, so it is bound by loads and stores, not by
// arithmetic. Here a small MR × NR = 6 × 16 tile of C stays in registers for
// a whole depth slice of KC = 256 steps, and C is touched once at the end.
// With AVX2 the tile is 12 ymm registers of 8 floats. Per step k the kernel
// loads two vectors of B (16 floats), broadcasts each of the six values of A
// in turn, and issues 12 FMAs that do not depend on each other:
//
//   04 (C in memory), per k, per row i:       05 (C in registers), per k:
//     c_row = load C row i        (L1)          b0, b1 = Bp[k][0:8], Bp[k][8:16]
//     c_row += A(i,k) · B(k, j..)                for i < 6:
//     store c_row                 (L1)            a = broadcast(Ap[k][i])
//                                                 acc[i][0] += a·b0;  acc[i][1] += a·b1   (FMA)
//                                             ... C += acc once, after the last k.
//
// Why 6 × 16: 12 accumulators + 2 B vectors + 1 broadcast = 15 of the 16 ymm
// registers, and 12 independent FMAs cover both FMA pipes through the 4-cycle
// latency (2 × 4 = 8 needed). Each float of B loaded is used 6 times and each
// float of A 16 times from a register: 12 FMAs per 8 loads, within what the
// load ports sustain. The tunables and these constraints are the
// static_asserts at the top of gemm_kernels.hpp; the kernel is
// micro_kernel_avx2 there.
//
// The kernel wants its operands in a particular order — at step k, 6 values
// of A side by side and 16 of B side by side — so the packing changes too:
// A is packed into 6-row micro-panels and B into 16-column micro-panels, and
// the loops become Goto's five (diagram in gemm_kernels.hpp): a KC × NC panel
// of B in L3, an MC × KC block of A in L2, one KC × 16 B micro-panel in L1,
// and the 6 × 16 tile in registers.
//
// Edges: the packed micro-panels are zero-padded to whole tiles, so the kernel
// always computes a full 6 × 16 tile with no branches; the macro-kernel writes
// a partial tile at the matrix edge through a small buffer (macro_kernel).
// Run-time dispatch: the AVX2/FMA kernel is compiled with
// __attribute__((target("avx2,fma"))) whatever flags the build uses, and used
// only if the CPU running the program reports AVX2 and FMA
// (__builtin_cpu_supports, checked once per process). Otherwise — or when the
// environment sets CONVLAB_NO_AVX2=1 — the portable kernel runs: the same
// register tile in plain C++ (micro_kernel_portable), vectorised by the
// compiler for whatever ISA it targets (and said once on stderr).
// tests/gemm_cpu_test.cpp runs both paths.
// Cost: the multiply-adds; packing every element of A N/NC times and of B
// once; workspace one MC × KC block of A and one KC × NC panel of B. One thread.
// Run just this: build/convlab run gemm/cpu/03e_microkernel
//                CONVLAB_NO_AVX2=1 build/convlab run gemm/cpu/03e_microkernel   (the portable path)
#include <cstddef>

#include "ops/gemm.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

std::size_t workspace_bytes(const GemmProblem& p) { return cpu_gemm::packed_workspace_bytes(p, /*threads=*/1); }

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  cpu_gemm::gemm_packed(p, static_cast<const float*>(args.a),  // [M, K] row-major
                        static_cast<const float*>(args.b),     // [K, N] row-major
                        static_cast<float*>(args.c),           // [M, N] row-major
                        args.workspace, cpu_gemm::selected_micro_kernel().kernel);
}

const Register<GemmProblem> reg{{
    .name = "03e_microkernel",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::single,
    .idea = "Goto loops; 6x16 C tile in 12 AVX2 registers, micro-panels packed for it (run-time check, portable fallback)",
}};

}  // namespace
}  // namespace convlab
