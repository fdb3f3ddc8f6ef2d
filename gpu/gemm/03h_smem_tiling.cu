// gpu/gemm/03h_smem_tiling.cu — lesson 03, GPU rung 03h: shared-memory tiling.
//
// Idea over 03g_coalesced: the 32×32 threads of a block all need the same 32
// rows of A and the same 32 columns of B. Instead of each thread fetching its
// own K-long row and column from global memory, the block walks K in slices of
// kTileK: it copies a 32×kTileK tile of A and a kTileK×32 tile of B into shared
// memory (one element per thread each, coalesced), waits, and then every
// thread runs its part of the dot product out of shared memory.
//
//   plain:  for k in [0, K):                 acc += A[i][k] * B[k][j]
//   tiled:  for k0 in [0, K) step kTileK:    As = A[i0.., k0..], Bs = B[k0.., j0..]; sync
//             for kk in [0, kTileK):         acc += As[ti][kk] * Bs[kk][tj];          sync
//
// Global loads fall from 2 per FMA to 2 per kTileK FMAs (each element fetched
// once per block, reused by 32 threads). In shared memory a warp (one row ti,
// 32 columns tj) reads As[ti][kk] as a broadcast and Bs[kk][tj..tj+31] from 32
// different banks: no bank conflicts.
//
// Supported: fp32, any M, N, K: out-of-range tile elements are loaded as 0
// (they add nothing) and out-of-range outputs are not stored. ceil(M/32) must
// fit in gridDim.y (M ≤ 2 097 120).
// Run just this: build/convlab run gemm/gpu/03h_smem_tiling
#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/gemm_tiles.cuh"

namespace convlab {
namespace {

// ---- tunables ----------------------------------------------------------------
constexpr int kTile = 32;   // C tile per block is kTile × kTile, one output per thread
constexpr int kTileK = 32;  // K slice staged per step
static_assert(kTile == 32, "one warp = one row of the tile: broadcast As reads, 32 banks of Bs");
static_assert(kTileK == kTile, "each thread loads exactly one element of each tile: needs a square tile");
static_assert(kTile * kTile <= 1024, "CUDA allows at most 1024 threads per block");
static_assert(2 * kTile * kTileK * sizeof(float) <= 48 * 1024, "static shared memory is capped at 48 KiB");

// Kernel contract:
//   A [M,K], B [K,N], C [M,N] row-major fp32. Block (bx, by) owns the
//   kTile×kTile tile of C at (by·kTile, bx·kTile); thread (tx, ty) its element
//   (by·kTile + ty, bx·kTile + tx). Per K slice k0:
//
//        A                 B                     thread (tx, ty) loads
//     ┌───────┐         k0 ┌────┐                  As[ty][tx] = A[row0 + ty][k0 + tx]
//   i0│  As   │  ·         │ Bs │ kTileK           Bs[ty][tx] = B[k0 + ty][col0 + tx]
//     └───────┘            └────┘
//      k0..+kTileK         j0..+kTile
//   Edge duties: loads outside A or B write 0 into the tile; every thread
//   (inside C or not) takes part in loading and in both barriers; only threads
//   inside C store.
__global__ void __launch_bounds__(kTile * kTile)
    gemm_smem_tiling(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                     float* __restrict__ C) {
  __shared__ float As[kTile][kTileK];  // As[m][k]: rows of A's tile
  __shared__ float Bs[kTileK][kTile];  // Bs[k][n]: rows of B's tile

  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;

  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += kTileK) {
    As[ty][tx] = gpu::load_or_zero(A, M, K, row0 + ty, k0 + tx);
    Bs[ty][tx] = gpu::load_or_zero(B, K, N, k0 + ty, col0 + tx);
    __syncthreads();  // the tiles are complete
    #pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) acc += As[ty][kk] * Bs[kk][tx];
    __syncthreads();  // nobody still reads the tiles the next step overwrites
  }
  gpu::store_if_inside(C, M, N, row0 + ty, col0 + tx, acc);
}

dim3 grid_for(const GemmProblem& p) {
  return dim3(unsigned(gpu::ceil_div(p.N, kTile)), unsigned(gpu::ceil_div(p.M, kTile)));
}

bool supports(const GemmProblem& p) {
  return p.dtype == DType::f32 && gpu::ceil_div<int64_t>(p.M, kTile) <= gpu::kMaxGridYZ;
}

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const auto* A = static_cast<const float*>(a.a);  // [M,K] row-major
  const auto* B = static_cast<const float*>(a.b);  // [K,N] row-major
  auto* C = static_cast<float*>(a.c);              // [M,N] row-major
  gemm_smem_tiling<<<grid_for(p), dim3(kTile, kTile)>>>(p.M, p.N, p.K, A, B, C);
  gpu::check_launch("gemm_smem_tiling");
}

const Register<GemmProblem> reg{{
    .name = "03h_smem_tiling",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "32x32 tiles of A and B staged in shared memory, one output per thread",
}};

}  // namespace
}  // namespace convlab
