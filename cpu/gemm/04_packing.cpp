// cpu/gemm/04_packing.cpp — lesson 03, rung 4: pack the blocks before using them.
//
// Idea over 03_cache_blocking: a block of a row-major matrix is not a block
// of memory. 03's B block is BK rows of BN floats, each row N floats from the
// next: at N = 2048 that is 8 KiB strides, so the block's rows fight over the
// same few cache sets and every row is on another 4 KiB page (TLB misses).
// Copying ("packing") each block once into a contiguous buffer, in exactly
// the order the inner loops will read it, fixes all of that for the price of
// one copy — and the copy is cheap next to the b³ multiply-adds that reuse it.
//
// The packed layout is cut for a small MR × NR tile of C (6 × 16 here):
//
//   A block (MC × KC) -> MR-row micro-panels, k-major:  Ap[k][i] = A(i, k), i < MR
//   B panel (KC × NC) -> NR-column micro-panels, k-major: Bp[k][j] = B(k, j), j < NR
//
// so that at each step k the tile needs MR consecutive floats of Ap and NR
// consecutive floats of Bp: two cache lines, both already in L1. Panels at the
// matrix edge are padded with zeros to whole MR / NR widths, which takes every
// edge test out of the inner loop (one partial-tile copy in the macro-kernel
// replaces them). This is the Goto / BLIS five-loop structure; its diagram,
// the packing routines, the tile contract and the edge handling are in
// gemm_kernels.hpp (shared with rungs 05 and 06):
//
//   for jc step NC:  for pc step KC:  pack B panel (L3)
//     for ic step MC:  pack A block (L2)
//       for jr step NR:  for ir step MR:  tile kernel on Ap[ir], Bp[jr]  (C tile: L1)
//
// The tile kernel of this rung is still 03's loop, C(i,j) += A(i,k)·B(k,j)
// with j innermost and the C tile in memory (micro_kernel_c_in_memory): per
// k, six rows of C are loaded, updated with one SIMD FMA each, and stored.
// So this rung measures what packing alone buys; 05 changes only the kernel.
// Cost: the multiply-adds, plus packing every element of A N/NC times and of
// B once; workspace: one packed A block (≤ MC × KC) and one packed B panel
// (≤ KC × NC), from the harness (see `convlab run` output).
// Run just this: build/convlab run gemm/cpu/04_packing
#include <cstddef>

#include "core/ops/gemm.hpp"
#include "cpu/gemm/gemm_kernels.hpp"

namespace convlab {
namespace {

std::size_t workspace_bytes(const GemmProblem& p) { return cpu_gemm::packed_workspace_bytes(p, /*threads=*/1); }

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  cpu_gemm::gemm_packed(p, static_cast<const float*>(args.a),  // [M, K] row-major
                        static_cast<const float*>(args.b),     // [K, N] row-major
                        static_cast<float*>(args.c),           // [M, N] row-major
                        args.workspace, cpu_gemm::micro_kernel_c_in_memory);
}

const Register<GemmProblem> reg{{
    .name = "04_packing",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::single,
    .idea = "Goto/BLIS loops: A and B blocks packed into contiguous zero-padded panels; C tile still in memory",
}};

}  // namespace
}  // namespace convlab
