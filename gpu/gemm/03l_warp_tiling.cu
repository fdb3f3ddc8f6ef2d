// gpu/gemm/03l_warp_tiling.cu — lesson 03, GPU rung 03l: warp tiles and a conflict-free thread layout.
//
// Idea over 03k_vectorized: add the level of the hierarchy that actually issues
// instructions, the warp. The 128×128 block tile is cut into eight 64×32 warp
// tiles, and inside a warp tile each lane's 8×8 outputs are NOT one contiguous
// 8×8 square but four 4×4 pieces, 32 rows and 16 columns apart:
//
//   warp tile 64 × 32, lane (lm, ln) = (lane / 4, lane % 4)
//          ← 16 cols →← 16 cols →
//     ┌───────────────┬───────────────┐ ↑
//     │ 8×4 lanes,    │ same lanes,   │ 32 rows: lane (lm, ln) owns the 4×4 at
//     │ 4×4 each      │ next 4×4      │          rows lm·4.., columns ln·4..
//     ├───────────────┼───────────────┤ ↓
//     │ same lanes    │ same lanes    │ 32 rows
//     └───────────────┴───────────────┘
//
// Why: per k, a warp reads its A fragments from As[k][warp_row + rm·32 + lm·4 ..+3]
// — 8 distinct float4s, 128 contiguous bytes — and its B fragments from
// Bs[k][warp_col + rn·16 + ln·4 ..+3] — 4 distinct float4s, 64 contiguous
// bytes. Every LDS.128 is one conflict-free wavefront plus broadcasts, where
// rung 03k's contiguous 8×8 squares spread a warp's B reads over 512 bytes with
// 2-way conflicts. The same reasoning placed the writes: As gets kAPad floats
// of padding per row, so the transposed A store (threads 2r and 2r+1 write
// As[j][r] and As[j+4][r], 4·128 floats apart: the same bank) becomes
// conflict-free (bank = (4·k + m) mod 32).
//
//   plain (rung 03k):   rows  thread_row + [0, 8),             cols thread_col + [0, 8)
//   warp-tiled:       rows  warp_row + {0, 32} + lm·4 + [0,4), cols warp_col + {0, 16} + ln·4 + [0,4)
//
// Supported: fp32, any M, N, K (float4 path when K % 4 == 0 and N % 4 == 0
// with 16-byte aligned buffers, predicated scalar path otherwise; both tested);
// ceil(M/128) must fit in gridDim.y.
// Run just this: build/convlab run gemm/gpu/03l_warp_tiling
#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/gemm_tiles.cuh"

namespace convlab {
namespace {

// ---- tunables ----------------------------------------------------------------
constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 8;  // block tile of C, and the K slice
constexpr int kWarpM = 64, kWarpN = 32;                   // warp tile of C
constexpr int kLanesM = 8, kLanesN = 4;                   // a warp's lanes as an 8×4 grid
constexpr int kPiece = 4;                                 // a lane's outputs come in 4×4 pieces (float4 wide)
constexpr int kAPad = 4;                                  // floats of padding per As row
// derived
constexpr int kWarpsM = kBlockM / kWarpM, kWarpsN = kBlockN / kWarpN;  // 2 × 4 warps
constexpr int kThreads = kWarpsM * kWarpsN * 32;                        // 256
constexpr int kRepeatM = kWarpM / (kLanesM * kPiece);                   // 2 pieces down
constexpr int kRepeatN = kWarpN / (kLanesN * kPiece);                   // 2 pieces across
constexpr int kThreadM = kRepeatM * kPiece, kThreadN = kRepeatN * kPiece;  // 8 × 8 outputs per thread
static_assert(kBlockM % kWarpM == 0 && kBlockN % kWarpN == 0, "warp tiles must tile the block tile");
static_assert(kLanesM * kLanesN == 32, "the lane grid is one warp");
static_assert(kWarpM % (kLanesM * kPiece) == 0 && kWarpN % (kLanesN * kPiece) == 0,
              "the lanes' 4×4 pieces must tile the warp tile");
static_assert(kLanesM * kPiece * 4 == 128, "one A fragment read per warp = 128 contiguous bytes: conflict-free");
static_assert(kPiece == 4, "fragments and C stores are float4s");
static_assert(kBlockM * kBlockK / 4 == kThreads, "each thread fetches exactly one float4 of the A tile");
static_assert(kBlockK * kBlockN / 4 == kThreads, "each thread fetches exactly one float4 of the B tile");
static_assert(kAPad % 4 == 0, "padding must keep every As row 16-byte aligned for float4 reads");
static_assert((kBlockM + kAPad) % 32 == 4, "row stride ≡ 4 banks: As[j][r] and As[j+4][r] land 16 banks apart");
static_assert(kThreadM * kThreadN == 64, "64 accumulators + 16 fragments fit in 128 registers (2 blocks/SM)");

// Kernel contract:
//   A [M,K], B [K,N], C [M,N] row-major fp32; 1-D blocks of 256 threads.
//   kVectorized = true requires gpu::can_use_float4(K, N, A, B, C); false
//   requires nothing. Block (bx, by) owns the 128×128 tile of C at
//   (by·128, bx·128); warp w the 64×32 warp tile at ((w / 4)·64, (w % 4)·32)
//   inside it; lane (lm, ln) the four 4×4 pieces drawn above. Per K slice k0,
//   thread t fetches A[row0 + t/2][k0 + (t%2)·4 ..+3] into As (transposed) and
//   B[k0 + t/32][col0 + (t%32)·4 ..+3] into Bs, exactly as in rung 03k.
//   Edge duties: elements outside A or B are fetched as 0; every thread
//   fetches and meets both barriers; outputs outside C are not stored.
template <bool kVectorized>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_warp_tiling(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                     float* __restrict__ C) {
  __shared__ __align__(16) float As[kBlockK][kBlockM + kAPad];  // As[k][m]: A's tile, transposed
  __shared__ __align__(16) float Bs[kBlockK][kBlockN];          // Bs[k][n]

  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int row0 = blockIdx.y * kBlockM, col0 = blockIdx.x * kBlockN;
  // My outputs: rows  warp_row + rm·(kLanesM·4) + lane_row + [0,4) for rm < kRepeatM,
  //             cols  warp_col + rn·(kLanesN·4) + lane_col + [0,4) for rn < kRepeatN (all tile-relative).
  const int warp_row = (warp / kWarpsN) * kWarpM, warp_col = (warp % kWarpsN) * kWarpN;
  const int lane_row = (lane / kLanesN) * kPiece, lane_col = (lane % kLanesN) * kPiece;
  const int a_row = t / (kBlockK / 4), a_col = (t % (kBlockK / 4)) * 4;  // my float4 of the A tile
  const int b_row = t / (kBlockN / 4), b_col = (t % (kBlockN / 4)) * 4;  // my float4 of the B tile

  float acc[kThreadM][kThreadN] = {};
  float a[kThreadM], b[kThreadN];
  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    const float4 a4 = gpu::load4_or_zero<kVectorized>(A, M, K, row0 + a_row, k0 + a_col);
    As[a_col + 0][a_row] = a4.x;
    As[a_col + 1][a_row] = a4.y;
    As[a_col + 2][a_row] = a4.z;
    As[a_col + 3][a_row] = a4.w;
    *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = gpu::load4_or_zero<kVectorized>(B, K, N, k0 + b_row, col0 + b_col);
    __syncthreads();
    #pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      // TUTORIAL: fragment i·4 + q is row warp_row + i·32 + lane_row + q of the tile.
      #pragma unroll
      for (int i = 0; i < kRepeatM; ++i)
        *reinterpret_cast<float4*>(&a[i * kPiece]) =
            *reinterpret_cast<const float4*>(&As[kk][warp_row + i * kLanesM * kPiece + lane_row]);
      #pragma unroll
      for (int j = 0; j < kRepeatN; ++j)
        *reinterpret_cast<float4*>(&b[j * kPiece]) =
            *reinterpret_cast<const float4*>(&Bs[kk][warp_col + j * kLanesN * kPiece + lane_col]);
      #pragma unroll
      for (int i = 0; i < kThreadM; ++i)
        #pragma unroll
        for (int j = 0; j < kThreadN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
  #pragma unroll
  for (int i = 0; i < kThreadM; ++i) {
    const int row = row0 + warp_row + (i / kPiece) * kLanesM * kPiece + lane_row + i % kPiece;
    #pragma unroll
    for (int j = 0; j < kThreadN; j += kPiece) {
      const int col = col0 + warp_col + (j / kPiece) * kLanesN * kPiece + lane_col;
      gpu::store4_if_inside<kVectorized>(C, M, N, row, col,
                                         make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
    }
  }
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
    gemm_warp_tiling<true><<<grid_for(p), kThreads>>>(p.M, p.N, p.K, A, B, C);
  } else {
    gemm_warp_tiling<false><<<grid_for(p), kThreads>>>(p.M, p.N, p.K, A, B, C);
  }
  gpu::check_launch("gemm_warp_tiling");
}

const Register<GemmProblem> reg{{
    .name = "03l_warp_tiling",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "128x128x8 block, 64x32 warp tiles, 8x8 per thread as four 4x4 pieces: conflict-free float4 shared reads",
}};

}  // namespace
}  // namespace convlab
