// cpu/gemm/eigen.cpp — lesson 03 baseline: Eigen's matrix product.
//
// What it is: C.noalias() = A * B on Eigen::Maps of the harness's row-major
// buffers — no copies of the operands. Eigen's product is the textbook
// Goto/BLIS structure that lesson 03 builds by hand: blocking for the caches
// (kc × nc panels), packing of A and B, and a register-blocked SIMD kernel
// (gebp). `noalias()` tells Eigen C does not overlap A or B, so it writes C
// in place instead of into a temporary.
//
// Threads: this file is compiled with OpenMP (the variants link OpenMP via
// convlab_core), so Eigen defines EIGEN_HAS_OPENMP and splits large products
// over omp_get_max_threads() threads (Eigen::nbThreads()); below about 50k
// multiply-adds per thread it stays on one. The #error below makes sure a
// build without OpenMP cannot quietly turn this into a one-thread baseline.
// SIMD: unlike OpenBLAS and oneDNN, which pick their kernels at run time,
// Eigen vectorises only with the instructions the compiler may emit: with no
// -march/-mavx2 -mfma flags that is SSE2 (4 floats per instruction, no FMA),
// so on an AVX2/AVX-512 machine this baseline runs well below its potential.
// Cost: 2·M·N·K flops; Eigen's packing buffers are its own (not reported).
// Run just this: build/convlab run gemm/cpu/eigen
#include <Eigen/Core>

#include <stdexcept>

#include "ops/gemm.hpp"

#ifndef EIGEN_HAS_OPENMP
#error "gemm/cpu/eigen is a Threads::all baseline: compile it with OpenMP so Eigen's product runs on every core"
#endif

namespace convlab {
namespace {

using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  if (!a.a || !a.b || !a.c) throw std::runtime_error("gemm/cpu/eigen: null buffer");
  Eigen::Map<const RowMajorMatrix> A(static_cast<const float*>(a.a), p.M, p.K);  // [M, K] row-major
  Eigen::Map<const RowMajorMatrix> B(static_cast<const float*>(a.b), p.K, p.N);  // [K, N] row-major
  Eigen::Map<RowMajorMatrix> C(static_cast<float*>(a.c), p.M, p.N);              // [M, N] row-major
  C.noalias() = A * B;  // plain form: for m, n: C(m,n) = sum_k A(m,k) * B(k,n)
}

const Register<GemmProblem> reg{{
    .name = "eigen",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .threads = Threads::all,
    .idea = "Eigen C.noalias() = A*B on mapped row-major buffers; OpenMP-parallel gebp",
    .baseline = true,
}};

}  // namespace
}  // namespace convlab
