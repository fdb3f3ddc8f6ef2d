// gpu/gemm/03a_naive.cu — lesson 03, GPU rung 03a: one thread per output, rows along the warp.
//
// Idea: the textbook triple loop with its two outer loops (i over rows of C,
// j over its columns) handed to the grid. Thread (i, j) runs the k loop alone:
//
//   for (int i = 0; i < M; ++i)            // -> threadIdx.x / blockIdx.x
//     for (int j = 0; j < N; ++j)          // -> threadIdx.y / blockIdx.y
//       for (int k = 0; k < K; ++k) C[i][j] += A[i][k] * B[k][j];
//
// The deliberate mistake: threadIdx.x, the index that runs fastest along a
// warp, picks the ROW i. The 32 threads of a warp then share one column j and
// touch 32 different rows, so
//   - their A[i][k] loads are K floats apart: 32 separate 32-byte sectors for
//     32 useful floats (1/8 of every sector is used);
//   - their C[i][j] stores are N floats apart: 32 transactions per warp;
//   - only B[k][j] is one address for the whole warp (a broadcast).
//
// Supported: fp32, any M, N, K (threads past the edge of C return at once),
// as long as ceil(N/32) fits in gridDim.y (N ≤ 2 097 120).
// Run just this: build/convlab run gemm/gpu/03a_naive
#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"

namespace convlab {
namespace {

// ---- tunables ----------------------------------------------------------------
constexpr int kBlockRows = 32;  // rows of C per block: threadIdx.x, the fast index
constexpr int kBlockCols = 32;  // columns of C per block: threadIdx.y
static_assert(kBlockRows % 32 == 0, "a warp spans rows here: whole warps of rows, or the lesson's point blurs");
static_assert(kBlockRows * kBlockCols <= 1024, "CUDA allows at most 1024 threads per block");

// Kernel contract:
//   A [M,K], B [K,N], C [M,N] row-major fp32. Block (bx, by) owns the 32×32
//   tile of C at rows bx·32.., columns by·32..; thread (tx, ty) its element
//   (bx·32 + tx, by·32 + ty), with the full dot product over k.
//
//           N →                 threadIdx.y → columns
//     M  ┌──────────┐           threadIdx.x ↓ rows   (a warp = one column, 32 rows)
//     ↓  │ 32×32 ...│
//        └──────────┘
//   Edge duties: threads whose (row, col) lies outside C return; no others.
__global__ void __launch_bounds__(kBlockRows * kBlockCols)
    gemm_naive(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C) {
  const int row = blockIdx.x * kBlockRows + threadIdx.x;  // fast index -> row: the uncoalesced choice
  const int col = blockIdx.y * kBlockCols + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[int64_t(row) * K + k] * B[int64_t(k) * N + col];
  C[int64_t(row) * N + col] = acc;
}

dim3 grid_for(const GemmProblem& p) {
  return dim3(unsigned(gpu::ceil_div(p.M, kBlockRows)), unsigned(gpu::ceil_div(p.N, kBlockCols)));
}

bool supports(const GemmProblem& p) {
  return p.dtype == DType::f32 && gpu::ceil_div<int64_t>(p.N, kBlockCols) <= gpu::kMaxGridYZ;
}

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const auto* A = static_cast<const float*>(a.a);  // [M,K] row-major
  const auto* B = static_cast<const float*>(a.b);  // [K,N] row-major
  auto* C = static_cast<float*>(a.c);              // [M,N] row-major
  gemm_naive<<<grid_for(p), dim3(kBlockRows, kBlockCols)>>>(p.M, p.N, p.K, A, B, C);
  gpu::check_launch("gemm_naive");
}

const Register<GemmProblem> reg{{
    .name = "03a_naive",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "one thread per C element, threadIdx.x along rows: uncoalesced A loads and C stores",
}};

}  // namespace
}  // namespace convlab
