// gpu/gemm/03i_register_blocking_1d.cu — lesson 03, GPU rung 03i: a column of outputs per thread.
//
// Idea over 03h_smem_tiling: a thread computes kThreadM outputs stacked in one
// column of C instead of one. For every k it loads the single B value it
// needs once into a register and reuses it kThreadM times:
//
//   03: for kk:  acc    += As[ty][kk] * Bs[kk][tx]            2 shared loads / 1 FMA
//   04: for kk:  b = Bs[kk][tx]                                1 + kThreadM shared loads
//                for i < kThreadM:  acc[i] += As[ty·kThreadM + i][kk] * b   / kThreadM FMAs
//
// The kThreadM accumulators live in registers (acc[] is fully unrolled, so it
// never touches local memory). The As values are still one shared load per
// FMA, but they are warp-wide broadcasts (all 32 threads of a warp share the
// same rows), so shared-memory traffic per FMA roughly halves. The block tile
// grows to 64×64 (fewer blocks load each A and B element from global memory)
// and the K slice shrinks to 8 so that the tiles stay small.
//
// Supported: fp32, any M, N, K (zero-filled tile loads, guarded stores);
// ceil(M/64) must fit in gridDim.y (M ≤ 4 194 240).
// Run just this: build/convlab run gemm/gpu/03i_register_blocking_1d
#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/gemm_tiles.cuh"

namespace convlab {
namespace {

// ---- tunables ----------------------------------------------------------------
constexpr int kBlockM = 64;   // rows of C per block
constexpr int kBlockN = 64;   // columns of C per block
constexpr int kBlockK = 8;    // K slice staged in shared memory per step
constexpr int kThreadM = 8;   // outputs per thread, all in one column of C
constexpr int kThreads = kBlockM * kBlockN / kThreadM;
static_assert(kBlockM % kThreadM == 0, "a thread's column of outputs must lie inside the block tile");
static_assert(kThreads == kBlockM * kBlockK, "each thread loads exactly one element of the A tile");
static_assert(kThreads == kBlockK * kBlockN, "each thread loads exactly one element of the B tile");
static_assert(kBlockN % 32 == 0, "a warp must share one row group (broadcast As reads) and span 32 columns");
static_assert(kThreads <= 1024, "CUDA allows at most 1024 threads per block");

// Kernel contract:
//   A [M,K], B [K,N], C [M,N] row-major fp32; 1-D blocks of kThreads threads.
//   Block (bx, by) owns the kBlockM×kBlockN tile of C at (by·kBlockM, bx·kBlockN).
//   Thread t owns column t % kBlockN and rows (t / kBlockN)·kThreadM + [0, kThreadM):
//
//          ← kBlockN = 64 columns →
//     ┌─┬─┬─┬──── ─┬─┐  ↑            thread t = 0..63: rows 0..7,  column t
//     │0│1│2│ ...  │63│ kThreadM     thread t = 64..127: rows 8..15, column t-64
//     ├─┼─┼─┼──── ─┼─┤  ↓            ...
//     │64│ ...          │
//     └────────────────┘  (kBlockM = 64 rows: 8 row groups of 8)
//
//   Loads per K slice: thread t copies A[row0 + t/kBlockK][k0 + t%kBlockK] and
//   B[k0 + t/kBlockN][col0 + t%kBlockN], both coalesced.
//   Edge duties: loads outside A or B write 0; every thread loads and meets
//   both barriers; only outputs inside C are stored.
__global__ void __launch_bounds__(kThreads)
    gemm_register_blocking_1d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                              float* __restrict__ C) {
  __shared__ float As[kBlockM][kBlockK];  // As[m][k]
  __shared__ float Bs[kBlockK][kBlockN];  // Bs[k][n]

  const int t = threadIdx.x;
  const int row0 = blockIdx.y * kBlockM, col0 = blockIdx.x * kBlockN;
  const int thread_col = t % kBlockN;             // my column inside the tile
  const int thread_row = (t / kBlockN) * kThreadM;  // my first row inside the tile
  const int a_row = t / kBlockK, a_col = t % kBlockK;  // the A element I copy
  const int b_row = t / kBlockN, b_col = t % kBlockN;  // the B element I copy

  float acc[kThreadM] = {};
  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    As[a_row][a_col] = gpu::load_or_zero(A, M, K, row0 + a_row, k0 + a_col);
    Bs[b_row][b_col] = gpu::load_or_zero(B, K, N, k0 + b_row, col0 + b_col);
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      const float b = Bs[kk][thread_col];  // loaded once, used kThreadM times
      #pragma unroll
      for (int i = 0; i < kThreadM; ++i) acc[i] += As[thread_row + i][kk] * b;
    }
    __syncthreads();
  }
  #pragma unroll
  for (int i = 0; i < kThreadM; ++i)
    gpu::store_if_inside(C, M, N, row0 + thread_row + i, col0 + thread_col, acc[i]);
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
  gemm_register_blocking_1d<<<grid_for(p), kThreads>>>(p.M, p.N, p.K, A, B, C);
  gpu::check_launch("gemm_register_blocking_1d");
}

const Register<GemmProblem> reg{{
    .name = "03i_register_blocking_1d",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "64x64x8 block tile, 8 outputs per thread in one column: one B load feeds 8 FMAs",
}};

}  // namespace
}  // namespace convlab
