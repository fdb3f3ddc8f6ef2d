// gpu/gemm/03g_coalesced.cu — lesson 03, GPU rung 03g: columns along the warp (coalescing).
//
// Idea over 03a_naive: the same one-thread-per-output kernel with one change —
// threadIdx.x, the index that runs along a warp, now picks the COLUMN j.
// The 32 threads of a warp share one row i and take 32 consecutive columns:
//
//   03a_naive:     row = ...threadIdx.x, col = ...threadIdx.y   (warp = 32 rows)
//   03g_coalesced: row = ...threadIdx.y, col = ...threadIdx.x   (warp = 32 columns)
//
// so per k step a warp
//   - loads A[i][k] once for all 32 threads (a broadcast),
//   - loads B[k][j..j+31]: 128 consecutive bytes, four full sectors,
//   - and finally stores C[i][j..j+31] in one 128-byte piece.
// Every sector fetched is now fully used: "coalesced" access.
//
// Supported: fp32, any M, N, K, as long as ceil(M/32) fits in gridDim.y
// (M ≤ 2 097 120).
// Run just this: build/convlab run gemm/gpu/03g_coalesced
#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"

namespace convlab {
namespace {

// ---- tunables ----------------------------------------------------------------
constexpr int kBlockCols = 32;  // columns of C per block: threadIdx.x, the fast index
constexpr int kBlockRows = 32;  // rows of C per block: threadIdx.y
static_assert(kBlockCols % 32 == 0, "a warp must cover 32 consecutive columns for a 128-byte access");
static_assert(kBlockRows * kBlockCols <= 1024, "CUDA allows at most 1024 threads per block");

// Kernel contract:
//   A [M,K], B [K,N], C [M,N] row-major fp32. Block (bx, by) owns the 32×32
//   tile of C at rows by·32.., columns bx·32..; thread (tx, ty) its element
//   (by·32 + ty, bx·32 + tx), with the full dot product over k.
//
//           N →                 threadIdx.x → columns (a warp = one row, 32 columns)
//     M  ┌──────────┐           threadIdx.y ↓ rows
//     ↓  │ 32×32 ...│
//        └──────────┘
//   Edge duties: threads whose (row, col) lies outside C return; no others.
__global__ void __launch_bounds__(kBlockRows * kBlockCols)
    gemm_coalesced(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                   float* __restrict__ C) {
  const int col = blockIdx.x * kBlockCols + threadIdx.x;  // fast index -> column: coalesced
  const int row = blockIdx.y * kBlockRows + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a_row = A + int64_t(row) * K;  // A[row][*]
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += a_row[k] * B[int64_t(k) * N + col];
  C[int64_t(row) * N + col] = acc;
}

dim3 grid_for(const GemmProblem& p) {
  return dim3(unsigned(gpu::ceil_div(p.N, kBlockCols)), unsigned(gpu::ceil_div(p.M, kBlockRows)));
}

bool supports(const GemmProblem& p) {
  return p.dtype == DType::f32 && gpu::ceil_div<int64_t>(p.M, kBlockRows) <= gpu::kMaxGridYZ;
}

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const auto* A = static_cast<const float*>(a.a);  // [M,K] row-major
  const auto* B = static_cast<const float*>(a.b);  // [K,N] row-major
  auto* C = static_cast<float*>(a.c);              // [M,N] row-major
  gemm_coalesced<<<grid_for(p), dim3(kBlockCols, kBlockRows)>>>(p.M, p.N, p.K, A, B, C);
  gpu::check_launch("gemm_coalesced");
}

const Register<GemmProblem> reg{{
    .name = "03g_coalesced",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "one thread per C element, threadIdx.x along columns: B loads and C stores coalesce",
}};

}  // namespace
}  // namespace convlab
