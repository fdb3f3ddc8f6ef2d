// cpu/gemm/03b_loop_reorder.cpp — lesson 03, rung 03b: the same loops, (i, k, j).
//
// Idea over 03a_naive: swap the two inner loops. For a fixed row i and depth
// k, A(i, k) is one number, and it multiplies the whole row k of B into the
// whole row i of C:
//
//   01: for i, j:  for k:  C(i,j) += A(i,k) · B(k,j)     B walked down a column (stride N)
//   02: for i, k:  for j:  C(i,j) += A(i,k) · B(k,j)     B and C walked along rows (stride 1)
//
// Same multiply-adds, same order of additions into each C(i, j) (increasing
// k). But now the inner loop reads B and C contiguously, so
// every cache line brought in is used 16 times, and its iterations are
// independent (each j has its own C(i, j)): the compiler turns it into SIMD
// FMAs with no dependency chain between them. Row i of C (N floats) stays in
// L1 for the whole k loop.
// Cost: what is left is traffic. For each row i, all of B (K·N floats) is
// streamed through the core again: 4 MiB at 1024² (it stays in the 32 MiB
// L3), 16 MiB at 2048² (next to A and C, 16 MiB each, it does not: DRAM).
// Every FMA lane needs one fresh float of B: 2 FLOP per 4 bytes.
// Size cap: M·N·K ≤ 2048³ (under a second per run here), so the benchmark stays short.
// Run just this: build/convlab run gemm/cpu/03b_loop_reorder
#include <cstdint>

#include "ops/gemm.hpp"

namespace convlab {
namespace {

constexpr double kMaxMultiplyAdds = 2048.0 * 2048.0 * 2048.0;  // the size cap above

bool supports(const GemmProblem& p) {
  return p.dtype == DType::f32 && double(p.M) * p.N * p.K <= kMaxMultiplyAdds;
}

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  const float* A = static_cast<const float*>(args.a);  // [M, K] row-major
  const float* B = static_cast<const float*>(args.b);  // [K, N] row-major
  float* C = static_cast<float*>(args.c);              // [M, N] row-major
  const int64_t M = p.M, N = p.N, K = p.K;

  for (int64_t i = 0; i < M; ++i) {
    float* c_row = C + i * N;                 // row i of C: stays in L1 through the k loop
    for (int64_t j = 0; j < N; ++j) c_row[j] = 0.f;
    for (int64_t k = 0; k < K; ++k) {
      const float a = A[i * K + k];           // one number of A ...
      const float* b_row = B + k * N;         // ... times one row of B ...
      for (int64_t j = 0; j < N; ++j)         // ... into row i of C: contiguous, independent, SIMD
        c_row[j] += a * b_row[j];
    }
  }
}

const Register<GemmProblem> reg{{
    .name = "03b_loop_reorder",
    .device = Device::cpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .threads = Threads::single,
    .idea = "(i, k, j) loops: unit stride through B and C, the inner loop vectorises",
}};

}  // namespace
}  // namespace convlab
