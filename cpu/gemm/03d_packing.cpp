// cpu/gemm/03d_packing.cpp — lesson 03, rung 03d: copy each block before using it.
//
// Idea over 03c_cache_blocking: a block of a row-major matrix is not a block
// of memory. 03's B block is BK rows of BN floats, each N floats after the
// previous one: at N = 2048 the rows are 8 KiB apart, so the block is spread
// over BK different 4 KiB pages (one TLB entry each), its rows compete for
// the same cache sets, and the hardware prefetcher sees BK short streams
// instead of one long one. The A block likewise. Copying ("packing") each
// block once into a small contiguous buffer, in the order the loops read it,
// gives the inner loops dense, aligned memory — for the price of one copy
// per block, which is cheap next to the bm·bn·bk multiply-adds that reuse it.
//
//   for jb step BN:  for kb step BK:
//     pack B[kb:kb+bk, jb:jb+bn] -> Bp   (bk × bn, dense)       <- new
//     for ib step BM:
//       pack A[ib:ib+bm, kb:kb+bk] -> Ap  (bm × bk, dense)       <- new
//       block_multiply_add(Ap, Bp -> C block)                    (03's, unchanged)
//
// Plain loop it replaces (03):  block_multiply_add(A + ib·K + kb, K, B + kb·N + jb, N, ...)
// — the same call, now reading the packed copies (leading dimensions bk, bn).
// Cost: 03's multiply-adds, plus copying every element of A N/BN times and of
// B once; workspace BK·BN + BM·BK floats (≈ 288 KiB), from the harness.
// What it does not fix: the block product still loads and stores C(i, j)
// around every FMA. 05 packs differently — into the micro-panels a register
// kernel wants — and keeps C in registers.
// Tunables: kBlockM/N/K in gemm_kernels.hpp (shared with 03).
// Run just this: build/convlab run gemm/cpu/03d_packing
#include <algorithm>
#include <cstddef>

#include "ops/gemm.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;

std::size_t workspace_bytes(const GemmProblem& p) {
  return (packed_block_b_floats(p) + packed_block_a_floats(p)) * sizeof(float);
}

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  const float* A = static_cast<const float*>(args.a);  // [M, K] row-major
  const float* B = static_cast<const float*>(args.b);  // [K, N] row-major
  float* C = static_cast<float*>(args.c);              // [M, N] row-major
  const std::ptrdiff_t lda = p.K, ldb = p.N, ldc = p.N;
  float* bp = static_cast<float*>(args.workspace);     // packed B block, [bk, bn] dense
  float* ap = bp + packed_block_b_floats(p);           // packed A block, [bm, bk] dense

  std::fill(C, C + std::ptrdiff_t(p.M) * p.N, 0.f);

  for (int jb = 0; jb < p.N; jb += kBlockN) {
    const int bn = std::min(kBlockN, p.N - jb);
    for (int kb = 0; kb < p.K; kb += kBlockK) {
      const int bk = std::min(kBlockK, p.K - kb);
      pack_block(bk, bn, B + kb * ldb + jb, ldb, bp);  // once per (jb, kb): reused by every row block
      for (int ib = 0; ib < p.M; ib += kBlockM) {
        const int bm = std::min(kBlockM, p.M - ib);
        pack_block(bm, bk, A + ib * lda + kb, lda, ap);
        block_multiply_add(bm, bn, bk, ap, bk, bp, bn, C + ib * ldc + jb, ldc);
      }
    }
  }
}

const Register<GemmProblem> reg{{
    .name = "03d_packing",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::single,
    .idea = "03c_cache_blocking's blocks copied into dense buffers first: no page or cache-set conflicts inside a block",
}};

}  // namespace
}  // namespace convlab
