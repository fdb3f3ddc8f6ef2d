// gpu/gemm/03j_register_blocking_2d.cu — lesson 03, GPU rung 03j: an 8×8 block of outputs per thread.
//
// Idea over 03i_register_blocking_1d: block in both directions. Per k a thread
// loads kThreadM values of A (a column piece) and kThreadN values of B (a row
// piece) into registers and forms their outer product, kThreadM·kThreadN FMAs:
//
//   plain:  for i < 8: for j < 8: acc[i][j] += As[r+i][kk] * Bs[kk][c+j]      (128 shared loads)
//   here:   a[i] = As[r+i][kk] (8 loads); b[j] = Bs[kk][c+j] (8 loads);
//           for i < 8: for j < 8: acc[i][j] += a[i] * b[j]                    (16 shared loads)
//
// 16 shared loads for 64 FMAs (0.25 per FMA, down from ~1.1 in rung 03i), and
// the 128×128 block tile halves global traffic per FMA again (each A and B
// element fetched from DRAM/L2 once per 128 outputs along the other axis).
//
// Supported: fp32, any M, N, K (zero-filled tile loads, guarded stores);
// ceil(M/128) must fit in gridDim.y.
// Run just this: build/convlab run gemm/gpu/03j_register_blocking_2d
#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/gemm_tiles.cuh"

namespace convlab {
namespace {

// ---- tunables ----------------------------------------------------------------
constexpr int kBlockM = 128;  // rows of C per block
constexpr int kBlockN = 128;  // columns of C per block
constexpr int kBlockK = 8;    // K slice staged in shared memory per step
constexpr int kThreadM = 8;   // rows of the per-thread micro-tile
constexpr int kThreadN = 8;   // columns of the per-thread micro-tile
constexpr int kThreadsN = kBlockN / kThreadN;          // 16 threads across
constexpr int kThreads = (kBlockM / kThreadM) * kThreadsN;  // 256
constexpr int kALoadsPerThread = kBlockM * kBlockK / kThreads;  // 4
constexpr int kBLoadsPerThread = kBlockK * kBlockN / kThreads;  // 4
static_assert(kBlockM % kThreadM == 0 && kBlockN % kThreadN == 0, "micro-tiles must tile the block tile");
static_assert(kBlockM * kBlockK % kThreads == 0, "the A tile must split evenly over the threads");
static_assert(kBlockK * kBlockN % kThreads == 0, "the B tile must split evenly over the threads");
static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads per block");
static_assert(kThreadM * kThreadN <= 64, "64 accumulators and 16 operands already take ~147 registers (1 block per SM); more would near the 255 limit and spill");

// Kernel contract:
//   A [M,K], B [K,N], C [M,N] row-major fp32; 1-D blocks of kThreads = 256.
//   Block (bx, by) owns the 128×128 tile of C at (by·128, bx·128). Thread t
//   is (ty, tx) = (t / 16, t % 16) on a 16×16 grid of 8×8 micro-tiles:
//
//          ← 128 columns: 16 micro-tiles →
//     ┌────┬────┬─   ─┬────┐
//     │t=0 │t=1 │ ... │t=15│  8 rows each
//     ├────┼────┼─   ─┼────┤
//     │t=16│ ...           │
//     └────┴────┴─   ─┴────┘  (16 micro-tile rows = 128 rows)
//
//   Loads per K slice: element e = t + 256·i (i < 4) of each tile, A's 128×8
//   tile in row order (As[e / 8][e % 8]), B's 8×128 tile in row order
//   (Bs[e / 128][e % 128]): consecutive threads, consecutive addresses.
//   Edge duties: loads outside A or B write 0; every thread loads and meets
//   both barriers; only outputs inside C are stored.
__global__ void __launch_bounds__(kThreads)
    gemm_register_blocking_2d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C) {
  __shared__ float As[kBlockM][kBlockK];  // As[m][k]
  __shared__ float Bs[kBlockK][kBlockN];  // Bs[k][n]

  const int t = threadIdx.x;
  const int row0 = blockIdx.y * kBlockM, col0 = blockIdx.x * kBlockN;
  const int thread_row = (t / kThreadsN) * kThreadM;  // my micro-tile's first row in the tile
  const int thread_col = (t % kThreadsN) * kThreadN;  // ... and first column

  float acc[kThreadM][kThreadN] = {};
  float a[kThreadM], b[kThreadN];
  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    #pragma unroll
    for (int i = 0; i < kALoadsPerThread; ++i) {
      const int e = t + i * kThreads, r = e / kBlockK, c = e % kBlockK;
      As[r][c] = gpu::load_or_zero(A, M, K, row0 + r, k0 + c);
    }
    #pragma unroll
    for (int i = 0; i < kBLoadsPerThread; ++i) {
      const int e = t + i * kThreads, r = e / kBlockN, c = e % kBlockN;
      Bs[r][c] = gpu::load_or_zero(B, K, N, k0 + r, col0 + c);
    }
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      // TUTORIAL: the outer product. 16 shared loads into registers, then 64
      // FMAs that touch registers only.
      #pragma unroll
      for (int i = 0; i < kThreadM; ++i) a[i] = As[thread_row + i][kk];
      #pragma unroll
      for (int j = 0; j < kThreadN; ++j) b[j] = Bs[kk][thread_col + j];
      #pragma unroll
      for (int i = 0; i < kThreadM; ++i)
        #pragma unroll
        for (int j = 0; j < kThreadN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
  #pragma unroll
  for (int i = 0; i < kThreadM; ++i)
    #pragma unroll
    for (int j = 0; j < kThreadN; ++j)
      gpu::store_if_inside(C, M, N, row0 + thread_row + i, col0 + thread_col + j, acc[i][j]);
}

dim3 grid_for(const GemmProblem& p) {
  return dim3(unsigned(gpu::ceil_div(p.N, kBlockN)), unsigned(gpu::ceil_div(p.M, kBlockM)));
}

bool supports(const GemmProblem& p) {
  return p.dtype == DType::f32 && gpu::ceil_div<int64_t>(p.M, kBlockM) <= gpu::kMaxGridYZ;
}

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const auto* A = static_cast<const float*>(a.a);  // [M,K] row-major
  const auto* B = static_cast<const float*>(a.b);  // [K,N] row-major
  auto* C = static_cast<float*>(a.c);              // [M,N] row-major
  gemm_register_blocking_2d<<<grid_for(p), kThreads>>>(p.M, p.N, p.K, A, B, C);
  gpu::check_launch("gemm_register_blocking_2d");
}

const Register<GemmProblem> reg{{
    .name = "03j_register_blocking_2d",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "128x128x8 block tile, 8x8 outer product per thread: 16 shared loads feed 64 FMAs",
}};

}  // namespace
}  // namespace convlab
