// cpu/gemm/03a_naive.cpp — lesson 03, rung 03a: the definition, as three loops.
//
// Idea: C(i, j) = Σ_k A(i, k) · B(k, j), written the way it is defined — for
// every output element, a dot product of a row of A with a column of B, in
// the (i, j, k) loop order. Nothing is reused on purpose.
// Cost: M·N·K multiply-adds, one thread. Two things make it slow. The inner
// loop walks down a column of B, N floats (4 KiB at N = 1024) apart, so every
// multiply-add touches a new cache line and, at large N, a new page; and all
// the multiply-adds of one output add into the one `acc`, a dependency chain
// the compiler may not reorder (float addition is not associative), so it
// runs at one addition per add latency (3 cycles here), with no SIMD at all.
// Size cap: at about 0.5 GFLOP/s a 2048³ product takes over half a minute per
// run, and a benchmark runs it at least three times (check, time, re-check).
// `supports` therefore stops at M·N·K ≤ 1024³ (4 s per run here), so the
// CPU benchmark stays within a few minutes; the rung is still tested on the
// whole test table and benchmarked at 256³ and 1024³.
// Run just this: build/convlab run gemm/cpu/03a_naive
#include <cstdint>

#include "ops/gemm.hpp"

namespace convlab {
namespace {

constexpr double kMaxMultiplyAdds = 1024.0 * 1024.0 * 1024.0;  // the size cap above

bool supports(const GemmProblem& p) {
  return p.dtype == DType::f32 && double(p.M) * p.N * p.K <= kMaxMultiplyAdds;
}

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  const float* A = static_cast<const float*>(args.a);  // [M, K] row-major
  const float* B = static_cast<const float*>(args.b);  // [K, N] row-major
  float* C = static_cast<float*>(args.c);              // [M, N] row-major
  const int64_t M = p.M, N = p.N, K = p.K;

  for (int64_t i = 0; i < M; ++i)          // rows of C
    for (int64_t j = 0; j < N; ++j) {      // columns of C
      float acc = 0.f;
      for (int64_t k = 0; k < K; ++k)      // the reduction: a row of A · a column of B
        acc += A[i * K + k] * B[k * N + j];  // B read with stride N: a new cache line every step
      C[i * N + j] = acc;
    }
}

const Register<GemmProblem> reg{{
    .name = "03a_naive",
    .device = Device::cpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .threads = Threads::single,
    .idea = "(i, j, k) loops: a dot product per output, B walked down its columns",
}};

}  // namespace
}  // namespace convlab
