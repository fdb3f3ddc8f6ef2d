// cpu/gemm/03_cache_blocking.cpp — lesson 03, rung 3: blocks that fit the caches.
//
// Idea over 02_loop_reorder: 02 streams all of B through the core once per
// row of A. Cut B into blocks of kBlockK × kBlockN that fit in L2 and finish
// everything that needs one block — every row of A — before moving to the
// next. A block of b × b floats is read from DRAM (or L3) once and then used
// b times per element from L2: b/4 FLOP per byte instead of 1/2.
//
//   for jb in [0, N) step BN:                        columns of B and C
//     for kb in [0, K) step BK:                      depth: B[kb:kb+BK, jb:jb+BN] now lives in L2
//       for ib in [0, M) step BM:                    rows of A and C
//         for i in ib block:  for k in kb block:     02's loops, inside the block:
//           for j in jb block: C(i,j) += A(i,k)·B(k,j)   row segment of C (BN floats) in L1
//
// Plain loop it replaces (02):  for i, k, j: C(i,j) += A(i,k)·B(k,j)
// The additions into each C(i, j) still happen in increasing k, the same
// order as in 01 and 02: blocking changes when work is done, not what is summed.
// Cost: the same multiply-adds; C is zeroed once up front and then read and
// written once per depth block (K/BK times), A read N/BN times. What this rung
// does not fix: every FMA still loads its accumulator C(i, j) from L1 and
// stores it back, and its B value from L2 — the core spends its time on
// loads and stores, not FMAs. Where B already fit the L3 (1024³) blocking
// barely helps; where it did not (2048³) it is ~3× faster than 02.
// Run just this: build/convlab run gemm/cpu/03_cache_blocking
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/ops/gemm.hpp"

namespace convlab {
namespace {

// ---- tunables (this machine: Zen 4, 32 KiB L1d, 1 MiB L2 per core) ----------
constexpr int kBlockM = 64;   // rows of A and C per block (the A block is BM × BK)
constexpr int kBlockN = 512;  // columns of B and C per block
constexpr int kBlockK = 128;  // depth per block
constexpr std::size_t kL1Bytes = 32 * 1024, kL2Bytes = 1024 * 1024;

static_assert(std::size_t(kBlockK) * kBlockN * sizeof(float) <= kL2Bytes / 2,
              "the B block (BK × BN) is reused by every row of A: it must stay in L2, with room to spare for A and C");
static_assert(2 * std::size_t(kBlockN) * sizeof(float) <= kL1Bytes / 4,
              "the C row segment and the B row being added to it (BN floats each) should sit in L1 together");
static_assert(std::size_t(kBlockM) * kBlockK * sizeof(float) <= kL2Bytes / 4,
              "the A block (BM × BK) is read once per row of the block: keep it in L2 beside B");
static_assert(kBlockN % 16 == 0, "a whole number of 64-byte lines per row segment keeps the SIMD loop free of tails");

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  const float* A = static_cast<const float*>(args.a);  // [M, K] row-major
  const float* B = static_cast<const float*>(args.b);  // [K, N] row-major
  float* C = static_cast<float*>(args.c);              // [M, N] row-major
  const int64_t M = p.M, N = p.N, K = p.K;

  std::fill(C, C + M * N, 0.f);  // every depth block adds into C, so start from zero

  for (int64_t jb = 0; jb < N; jb += kBlockN) {
    const int64_t bn = std::min<int64_t>(kBlockN, N - jb);  // edge blocks are simply shorter
    for (int64_t kb = 0; kb < K; kb += kBlockK) {
      const int64_t bk = std::min<int64_t>(kBlockK, K - kb);
      for (int64_t ib = 0; ib < M; ib += kBlockM) {
        const int64_t bm = std::min<int64_t>(kBlockM, M - ib);
        // One BM × BK block of A times one BK × BN block of B, into C's BM × BN block.
        for (int64_t i = ib; i < ib + bm; ++i) {
          float* c_row = C + i * N + jb;                // BN floats of row i: in L1
          for (int64_t k = kb; k < kb + bk; ++k) {
            const float a = A[i * K + k];
            const float* b_row = B + k * N + jb;        // BN floats of row k of the B block: in L2
            for (int64_t j = 0; j < bn; ++j) c_row[j] += a * b_row[j];
          }
        }
      }
    }
  }
}

const Register<GemmProblem> reg{{
    .name = "03_cache_blocking",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .threads = Threads::single,
    .idea = "02's loops inside BM×BN×BK blocks: a block of B stays in L2 for all rows of A",
}};

}  // namespace
}  // namespace convlab
