// cpu/gemm/openblas.cpp — lesson 03 baseline: OpenBLAS sgemm.
//
// What it is: the reference point for the hand-written GEMM rungs — one call
// to cblas_sgemm (C = 1·A·B + 0·C, row-major, no transposes). OpenBLAS picks a
// hand-tuned assembly micro-kernel for this CPU at run time (its DYNAMIC_ARCH
// dispatch), packs A and B into cache-sized panels itself, and splits the work
// over its own pthread pool (all cores unless OPENBLAS_NUM_THREADS says less).
// Cost: 2·M·N·K flops, no workspace visible to the harness (the packing
// buffers are OpenBLAS's own), no copies or reorders on our side.
// Run just this: build/convlab run gemm/cpu/openblas
#include <cblas.h>

#include <stdexcept>

#include "ops/gemm.hpp"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const float* A = static_cast<const float*>(a.a);  // [M, K] row-major, leading dimension K
  const float* B = static_cast<const float*>(a.b);  // [K, N] row-major, leading dimension N
  float* C = static_cast<float*>(a.c);              // [M, N] row-major, leading dimension N
  if (!A || !B || !C) throw std::runtime_error("gemm/cpu/openblas: null buffer");
  // beta = 0: OpenBLAS zeroes C before accumulating, so the poisoned (NaN)
  // output is overwritten rather than multiplied by zero.
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p.M, p.N, p.K, 1.0f, A, p.K, B, p.N, 0.0f, C, p.N);
}

const Register<GemmProblem> reg{{
    .name = "openblas",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .threads = Threads::all,
    .idea = "cblas_sgemm: OpenBLAS's packed, hand-tuned assembly GEMM on its own thread pool",
    .baseline = true,
}};

}  // namespace
}  // namespace convlab
