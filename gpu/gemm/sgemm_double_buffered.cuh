// gpu/gemm/sgemm_double_buffered.cuh — lesson 03's GPU rung 8 kernel, shared.
//
// The fp32 SGEMM kernel of gpu/gemm/08_double_buffering.cu (two shared-memory
// stages, register prefetch of the next K slice, double-buffered fragments),
// moved here unchanged so that other variants can call the suite's own GEMM:
// lesson 02's gpu/conv2d/03_im2col_gemm.cu runs it on the im2col patch
// matrix, and lesson 05's Winograd rungs (gpu/conv2d/winograd.cuh) run their
// 16 or 36 per-point GEMMs as one batched launch (launch_batched, blockIdx.z
// picks the product; the kernel body is shared with the plain launch).
// The idea, its cost and the measurements are told in 08's header;
// this file holds the tunables, the kernel with its contract, and its
// launch (the float4-or-scalar choice). 08_double_buffering.cu keeps the
// registration.
#pragma once

#include <cstdint>

#include "gpu/common/check.cuh"
#include "gpu/common/gemm_tiles.cuh"

namespace convlab::gpu::double_buffered {

// ---- tunables (the tile shapes of rung 7, now with two stages) ----------------
inline constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 8;  // block tile of C, and the K slice
inline constexpr int kWarpM = 64, kWarpN = 32;                   // warp tile of C
inline constexpr int kLanesM = 8, kLanesN = 4;                   // a warp's lanes as an 8×4 grid
inline constexpr int kPiece = 4;                                 // a lane's outputs come in 4×4 pieces (float4 wide)
inline constexpr int kAPad = 4;                                  // floats of padding per As row
inline constexpr int kStages = 2;                                // shared-memory buffers
// derived
inline constexpr int kWarpsM = kBlockM / kWarpM, kWarpsN = kBlockN / kWarpN;  // 2 × 4 warps
inline constexpr int kThreads = kWarpsM * kWarpsN * 32;                        // 256
inline constexpr int kRepeatM = kWarpM / (kLanesM * kPiece);                   // 2 pieces down
inline constexpr int kRepeatN = kWarpN / (kLanesN * kPiece);                   // 2 pieces across
inline constexpr int kThreadM = kRepeatM * kPiece, kThreadN = kRepeatN * kPiece;  // 8 × 8 outputs per thread
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
static_assert(kStages == 2, "the loop below alternates between exactly two stages");
static_assert(kStages * kBlockK * (kBlockM + kAPad + kBlockN) * sizeof(float) <= 48 * 1024,
              "static shared memory is capped at 48 KiB (and 2 blocks must fit in an SM)");

// One thread's share of a K slice, between the global fetch and the shared store.
struct SliceInFlight {
  float4 a;  // A[row0 + a_row][k0 + a_col ..+3]
  float4 b;  // B[k0 + b_row][col0 + b_col ..+3]
};

// Kernel contract:
//   A [M,K], B [K,N], C [M,N] row-major fp32; 1-D blocks of 256 threads.
//   kVectorized = true requires gpu::can_use_float4(K, N, A, B, C); false
//   requires nothing. Block (bx, by) owns the 128×128 tile of C at
//   (by·128, bx·128); warp w the 64×32 warp tile at ((w / 4)·64, (w % 4)·32);
//   lane (lm, ln) = (lane / 4, lane % 4) owns the 4×4 pieces at rows
//   {0, 32} + lm·4 and columns {0, 16} + ln·4 of its warp tile (the picture
//   in 07_warp_tiling). Per K slice k0, thread t fetches
//   A[row0 + t/2][k0 + (t%2)·4 ..+3] and B[k0 + t/32][col0 + (t%32)·4 ..+3].
//
//     stage 0: As[0][k][m], Bs[0][k][n]   ← being read by slice s   (s even)
//     stage 1: As[1][k][m], Bs[1][k][n]   ← being filled with slice s+1
//
//   Edge duties: elements outside A or B are fetched as 0 (so the last,
//   partial slice adds zeros); every thread fetches and meets every barrier;
//   outputs outside C are not stored.
//
//   The body is a device function so that the plain kernel and the batched
//   one (below: lesson 05's 16 Winograd GEMMs, one per blockIdx.z) are the
//   same code; it is inlined into each.
template <bool kVectorized>
__device__ __forceinline__ void gemm_block_tile(int M, int N, int K, const float* __restrict__ A,
                                                const float* __restrict__ B, float* __restrict__ C) {
  __shared__ __align__(16) float As[kStages][kBlockK][kBlockM + kAPad];  // As[stage][k][m]: A transposed
  __shared__ __align__(16) float Bs[kStages][kBlockK][kBlockN];          // Bs[stage][k][n]

  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int row0 = blockIdx.y * kBlockM, col0 = blockIdx.x * kBlockN;
  const int warp_row = (warp / kWarpsN) * kWarpM, warp_col = (warp % kWarpsN) * kWarpN;
  const int lane_row = (lane / kLanesN) * kPiece, lane_col = (lane % kLanesN) * kPiece;
  const int a_row = t / (kBlockK / 4), a_col = (t % (kBlockK / 4)) * 4;  // my float4 of the A tile
  const int b_row = t / (kBlockN / 4), b_col = (t % (kBlockN / 4)) * 4;  // my float4 of the B tile

  const auto fetch = [&](int k0) {
    return SliceInFlight{gpu::load4_or_zero<kVectorized>(A, M, K, row0 + a_row, k0 + a_col),
                         gpu::load4_or_zero<kVectorized>(B, K, N, k0 + b_row, col0 + b_col)};
  };
  const auto store = [&](int stage, const SliceInFlight& s) {
    As[stage][a_col + 0][a_row] = s.a.x;  // A is transposed on its way into shared memory
    As[stage][a_col + 1][a_row] = s.a.y;
    As[stage][a_col + 2][a_row] = s.a.z;
    As[stage][a_col + 3][a_row] = s.a.w;
    *reinterpret_cast<float4*>(&Bs[stage][b_row][b_col]) = s.b;
  };
  // Fragments of k-step kk: a[i·4 + q] = row warp_row + i·32 + lane_row + q of the tile, likewise b.
  float a[2][kThreadM], b[2][kThreadN];
  const auto read_fragments = [&](int stage, int kk, float* a_frag, float* b_frag) {
    #pragma unroll
    for (int i = 0; i < kRepeatM; ++i)
      *reinterpret_cast<float4*>(&a_frag[i * kPiece]) =
          *reinterpret_cast<const float4*>(&As[stage][kk][warp_row + i * kLanesM * kPiece + lane_row]);
    #pragma unroll
    for (int j = 0; j < kRepeatN; ++j)
      *reinterpret_cast<float4*>(&b_frag[j * kPiece]) =
          *reinterpret_cast<const float4*>(&Bs[stage][kk][warp_col + j * kLanesN * kPiece + lane_col]);
  };

  float acc[kThreadM][kThreadN] = {};

  store(0, fetch(0));  // prologue: slice 0 into stage 0
  __syncthreads();

  int stage = 0;
  for (int k0 = 0; k0 < K; k0 += kBlockK, stage ^= 1) {
    const bool has_next = k0 + kBlockK < K;  // the same for every thread: no divergence
    SliceInFlight next{};
    if (has_next) next = fetch(k0 + kBlockK);  // issued now, consumed after the math

    read_fragments(stage, 0, a[0], b[0]);
    #pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      // TUTORIAL: fragments of kk+1 are requested before the FMAs of kk use
      // the other register set; with the loop unrolled, [kk % 2] is a fixed register name.
      if (kk + 1 < kBlockK) read_fragments(stage, kk + 1, a[(kk + 1) % 2], b[(kk + 1) % 2]);
      #pragma unroll
      for (int i = 0; i < kThreadM; ++i)
        #pragma unroll
        for (int j = 0; j < kThreadN; ++j) acc[i][j] += a[kk % 2][i] * b[kk % 2][j];
    }

    if (has_next) store(stage ^ 1, next);  // stage^1 was last read in the previous slice: safe
    __syncthreads();                       // slice s+1 is complete; stage is free again
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

template <bool kVectorized>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_double_buffering(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                          float* __restrict__ C) {
  gemm_block_tile<kVectorized>(M, N, K, A, B, C);
}

// A batch of equally shaped products, C_z = A_z · B_z for z = blockIdx.z, the
// operands stride_a / stride_b / stride_c floats apart (a stride of 0 shares
// one operand among all z).
template <bool kVectorized>
__global__ void __launch_bounds__(kThreads, 2)
    gemm_double_buffering_batched(int M, int N, int K, const float* __restrict__ A, int64_t stride_a,
                                  const float* __restrict__ B, int64_t stride_b, float* __restrict__ C,
                                  int64_t stride_c) {
  const int64_t z = blockIdx.z;
  gemm_block_tile<kVectorized>(M, N, K, A + z * stride_a, B + z * stride_b, C + z * stride_c);
}

// C = A·B on the default stream: A [M,K], B [K,N], C [M,N] row-major fp32,
// float4 kernel when gpu::can_use_float4 allows, predicated scalar kernel
// otherwise. Requires ceil(M/128) ≤ gpu::kMaxGridYZ (the grid's y dimension).
inline void launch(int M, int N, int K, const float* A, const float* B, float* C) {
  const dim3 grid(unsigned(gpu::ceil_div(N, kBlockN)), unsigned(gpu::ceil_div(M, kBlockM)));
  if (gpu::can_use_float4(K, N, A, B, C)) {
    gemm_double_buffering<true><<<grid, kThreads>>>(M, N, K, A, B, C);
  } else {
    gemm_double_buffering<false><<<grid, kThreads>>>(M, N, K, A, B, C);
  }
  gpu::check_launch("gemm_double_buffering");
}

// `batch` products C_z = A_z · B_z (z < batch) in one launch, operands
// stride_* floats apart; float4 kernel when every A_z, B_z, C_z allows it.
// Requires ceil(M/128) ≤ gpu::kMaxGridYZ and batch ≤ gpu::kMaxGridYZ.
inline void launch_batched(int batch, int M, int N, int K, const float* A, int64_t stride_a, const float* B,
                           int64_t stride_b, float* C, int64_t stride_c) {
  const dim3 grid(unsigned(gpu::ceil_div(N, kBlockN)), unsigned(gpu::ceil_div(M, kBlockM)), unsigned(batch));
  const bool strides_keep_alignment = stride_a % 4 == 0 && stride_b % 4 == 0 && stride_c % 4 == 0;
  if (gpu::can_use_float4(K, N, A, B, C) && strides_keep_alignment) {
    gemm_double_buffering_batched<true><<<grid, kThreads>>>(M, N, K, A, stride_a, B, stride_b, C, stride_c);
  } else {
    gemm_double_buffering_batched<false><<<grid, kThreads>>>(M, N, K, A, stride_a, B, stride_b, C, stride_c);
  }
  gpu::check_launch("gemm_double_buffering_batched");
}

}  // namespace convlab::gpu::double_buffered
