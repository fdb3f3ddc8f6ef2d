// gpu/gemm/03k_vectorized.cu — lesson 03, GPU rung 03k: 16-byte loads, A transposed in shared memory.
//
// Idea over 03j_register_blocking_2d: move data in float4 pieces everywhere.
//   - Global → shared: each thread fetches its share of the A and B tiles as
//     one 16-byte load each (LDG.128) instead of four 4-byte loads.
//   - A is stored TRANSPOSED in shared memory, As[k][m]. The 8 values a thread
//     needs per k (a column piece of A: rows r..r+7 at one k) are then
//     contiguous, so they come in two LDS.128 instead of eight LDS.32; B's 8
//     values Bs[k][c..c+7] already were contiguous:
//
//       05: a[i] = As[r + i][kk]          8 scalar loads, 2-way bank conflict
//       06: a[0..3] = As[kk][r..r+3]      one float4 load
//           a[4..7] = As[kk][r+4..r+7]    one float4 load
//   - C is written as float4 stores.
// Shared-memory instructions per 64 FMAs fall from 16 to 4.
//
// The catch is the edge: a 16-byte access must be 16-byte aligned and lie
// wholly inside the row. That holds for every row exactly when K % 4 == 0 (A's
// rows) and N % 4 == 0 (B's and C's rows) and the buffers are 16-byte aligned
// (cudaMalloc gives 256). The kernel is therefore compiled twice:
// kVectorized = true for such problems, and kVectorized = false, which keeps
// the same tiles and shared-memory layout but fills and drains them with
// predicated scalar accesses, for all others (gpu/lib/gemm_tiles.cuh).
// run() picks one per launch; the test table exercises both (64³ and 256³ take
// the float4 path; 31×63×65, 7×5×3, ... the scalar one).
//
// Supported: fp32, any M, N, K; ceil(M/128) must fit in gridDim.y.
// Run just this: build/convlab run gemm/gpu/03k_vectorized
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
constexpr int kThreadsN = kBlockN / kThreadN;               // 16 threads across
constexpr int kThreads = (kBlockM / kThreadM) * kThreadsN;  // 256
static_assert(kBlockK % 4 == 0 && kBlockN % 4 == 0, "tiles are fetched in float4 pieces along K (A) and N (B)");
static_assert(kThreadM % 4 == 0 && kThreadN % 4 == 0, "micro-tile rows and columns are read as float4");
static_assert(kBlockM * kBlockK / 4 == kThreads, "each thread fetches exactly one float4 of the A tile");
static_assert(kBlockK * kBlockN / 4 == kThreads, "each thread fetches exactly one float4 of the B tile");
static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads per block");

// Kernel contract:
//   A [M,K], B [K,N], C [M,N] row-major fp32; 1-D blocks of 256 threads.
//   kVectorized = true requires K % 4 == 0, N % 4 == 0 and 16-byte aligned
//   A, B, C (gpu::can_use_float4); kVectorized = false requires nothing.
//   Block (bx, by) owns the 128×128 tile of C at (by·128, bx·128); thread t
//   the 8×8 micro-tile at (t / 16)·8, (t % 16)·8 inside it, as in rung 03j.
//   Per K slice k0, thread t fetches
//     A[row0 + t/2][k0 + (t%2)·4 ..+3]  → As[k0-relative k][m]   (transposed)
//     B[k0 + t/32][col0 + (t%32)·4 ..+3] → Bs[k][n]
//
//        As (transposed A tile)           Bs (B tile)
//     k ┌──────── 128 m ────────┐      k ┌──────── 128 n ────────┐
//     ↓ │ a thread reads 8 m    │      ↓ │ a thread reads 8 n    │   8 rows each
//       └───────────────────────┘        └───────────────────────┘
//   Edge duties: elements outside A or B are fetched as 0; every thread
//   fetches and meets both barriers; outputs outside C are not stored.
template <bool kVectorized>
__global__ void __launch_bounds__(kThreads)
    gemm_vectorized(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                    float* __restrict__ C) {
  __shared__ __align__(16) float As[kBlockK][kBlockM];  // As[k][m]: A's tile, transposed
  __shared__ __align__(16) float Bs[kBlockK][kBlockN];  // Bs[k][n]

  const int t = threadIdx.x;
  const int row0 = blockIdx.y * kBlockM, col0 = blockIdx.x * kBlockN;
  const int thread_row = (t / kThreadsN) * kThreadM;
  const int thread_col = (t % kThreadsN) * kThreadN;
  const int a_row = t / (kBlockK / 4), a_col = (t % (kBlockK / 4)) * 4;  // my float4 of the A tile
  const int b_row = t / (kBlockN / 4), b_col = (t % (kBlockN / 4)) * 4;  // my float4 of the B tile

  float acc[kThreadM][kThreadN] = {};
  float a[kThreadM], b[kThreadN];
  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    const float4 a4 = gpu::load4_or_zero<kVectorized>(A, M, K, row0 + a_row, k0 + a_col);
    As[a_col + 0][a_row] = a4.x;  // TUTORIAL: a row piece of A becomes a column piece of As
    As[a_col + 1][a_row] = a4.y;
    As[a_col + 2][a_row] = a4.z;
    As[a_col + 3][a_row] = a4.w;
    *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = gpu::load4_or_zero<kVectorized>(B, K, N, k0 + b_row, col0 + b_col);
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      #pragma unroll
      for (int i = 0; i < kThreadM; i += 4)
        *reinterpret_cast<float4*>(&a[i]) = *reinterpret_cast<const float4*>(&As[kk][thread_row + i]);
      #pragma unroll
      for (int j = 0; j < kThreadN; j += 4)
        *reinterpret_cast<float4*>(&b[j]) = *reinterpret_cast<const float4*>(&Bs[kk][thread_col + j]);
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
    for (int j = 0; j < kThreadN; j += 4)
      gpu::store4_if_inside<kVectorized>(C, M, N, row0 + thread_row + i, col0 + thread_col + j,
                                         make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
}

dim3 grid_for(const GemmProblem& p) {
  return dim3(unsigned(gpu::ceil_div(p.N, kBlockN)), unsigned(gpu::ceil_div(p.M, kBlockM)));
}

bool supports(const GemmProblem& p) {
  return p.dtype == DType::f32 && gpu::ceil_div<int64_t>(p.M, kBlockM) <= gpu::kMaxGridYZ;
}

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const auto* A = static_cast<const float*>(a.a);
  const auto* B = static_cast<const float*>(a.b);
  auto* C = static_cast<float*>(a.c);
  if (gpu::can_use_float4(p.K, p.N, A, B, C)) {
    gemm_vectorized<true><<<grid_for(p), kThreads>>>(p.M, p.N, p.K, A, B, C);
  } else {
    gemm_vectorized<false><<<grid_for(p), kThreads>>>(p.M, p.N, p.K, A, B, C);
  }
  gpu::check_launch("gemm_vectorized");
}

const Register<GemmProblem> reg{{
    .name = "03k_vectorized",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "rung 03j with float4 global and shared accesses, A transposed in shared memory; scalar path for odd K/N",
}};

}  // namespace
}  // namespace convlab
