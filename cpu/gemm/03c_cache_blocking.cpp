// cpu/gemm/03c_cache_blocking.cpp — lesson 03, rung 03c: blocks that fit the caches.
//
// Idea over 03b_loop_reorder: 02 streams all of B through the core once per
// row of A. Cut B into blocks of BK × BN that fit in L2 and finish everything
// that needs one block — every row of A — before moving to the next. A block
// of b × b floats is then fetched from DRAM (or L3) once and used b times per
// element from L2: b/4 FLOP per byte of DRAM traffic instead of 1/2.
//
//   for jb in [0, N) step BN:                      columns of B and C
//     for kb in [0, K) step BK:                    depth: B[kb:kb+BK, jb:jb+BN] now lives in L2
//       for ib in [0, M) step BM:                  rows of A and C
//         block_multiply_add:                      02's loops, inside the block:
//           for i, k, j: C(i,j) += A(i,k)·B(k,j)   row segment of C (BN floats) in L1
//
// Plain loop it replaces (02):  for i, k, j: C(i,j) += A(i,k)·B(k,j)
// Blocking changes when each multiply-add happens, not what is summed: the
// additions into each C(i, j) still come in increasing k.
// Cost: the same multiply-adds; C zeroed once up front, then read and written
// once per depth block (K/BK times); A reread N/BN times. What this rung does
// not fix: every FMA still loads its accumulator C(i, j) from L1 and stores
// it back, and loads its B value from L2 — the core spends its time moving
// data, not multiplying (about a third of peak). At 1024³, where all of B fits
// the L3 anyway, blocking gains about a quarter over 02; at 2048³, where it
// does not, about half.
// Tunables: kBlockM/N/K in gemm_kernels.hpp (shared with 04, static_asserts there).
// Run just this: build/convlab run gemm/cpu/03c_cache_blocking
#include <algorithm>
#include <cstdint>

#include "ops/gemm.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  const float* A = static_cast<const float*>(args.a);  // [M, K] row-major
  const float* B = static_cast<const float*>(args.b);  // [K, N] row-major
  float* C = static_cast<float*>(args.c);              // [M, N] row-major
  const std::ptrdiff_t lda = p.K, ldb = p.N, ldc = p.N;

  std::fill(C, C + std::ptrdiff_t(p.M) * p.N, 0.f);  // every depth block adds into C: start from zero

  for (int jb = 0; jb < p.N; jb += kBlockN) {
    const int bn = std::min(kBlockN, p.N - jb);        // edge blocks are simply smaller
    for (int kb = 0; kb < p.K; kb += kBlockK) {
      const int bk = std::min(kBlockK, p.K - kb);
      for (int ib = 0; ib < p.M; ib += kBlockM) {
        const int bm = std::min(kBlockM, p.M - ib);
        // The blocks are read in place, rows lda / ldb floats apart.
        block_multiply_add(bm, bn, bk, A + ib * lda + kb, lda, B + kb * ldb + jb, ldb, C + ib * ldc + jb, ldc);
      }
    }
  }
}

const Register<GemmProblem> reg{{
    .name = "03c_cache_blocking",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .threads = Threads::single,
    .idea = "03b_loop_reorder's loops inside BM×BN×BK blocks: a block of B stays in L2 for all rows of A",
}};

}  // namespace
}  // namespace convlab
