// gpu/lib/sgemm_double_buffered.cuh — lesson 03's GPU rung 03m kernel, shared.
//
// The fp32 SGEMM kernel of gpu/gemm/03m_double_buffering.cu (two shared-memory
// stages, register prefetch of the next K slice, double-buffered fragments),
// kept here so that other variants can call the suite's own GEMM:
// lesson 02's gpu/conv2d/02b_im2col_gemm.cu runs it on the im2col patch
// matrix, and lesson 05's Winograd rungs (gpu/lib/winograd.cuh) run their
// 16 or 36 per-point GEMMs as one batched launch (launch_batched, blockIdx.z
// picks the product; the kernel body is shared with the plain launch).
// The idea, its cost and the measurements are told in 08's header;
// this file holds the tunables, the kernel with its contract, and its
// launch (the float4-or-scalar choice). 03m_double_buffering.cu keeps the
// registration.
#pragma once

#include <cstdint>

#include "gpu/lib/check.cuh"
#include "gpu/lib/gemm_tiles.cuh"

namespace convlab::gpu::double_buffered {

// ---- tunables -------------------------------------------------------------------
// The tile shapes are a template parameter so that they can be swept
// (bench/tune_sgemm_tiles.cu runs several on the GPU in one go) and so that an
// exercise can change them without touching the kernel. DefaultTiles, below,
// is what rung 03m and lesson 02's GPU rung use.
//
//   BM × BN   block tile of C          BK        the K slice per stage
//   WM × WN   warp tile of C           MinBlocks blocks per SM promised to ptxas
//                                                (it caps registers at 65536 / (threads · MinBlocks))
template <int BM, int BN, int BK, int WM, int WN, int MinBlocks>
struct Tiles {
  static constexpr int kBlockM = BM, kBlockN = BN, kBlockK = BK;
  static constexpr int kWarpM = WM, kWarpN = WN;
  static constexpr int kMinBlocks = MinBlocks;
  static constexpr int kLanesM = 8, kLanesN = 4;  // a warp's lanes as an 8×4 grid
  static constexpr int kPiece = 4;                // a lane's outputs come in 4×4 pieces (float4 wide)
  static constexpr int kAPad = 4;                 // floats of padding per As row
  // derived
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = kWarpsM * kWarpsN * 32;
  static constexpr int kRepeatM = WM / (kLanesM * kPiece);  // 4×4 pieces down a lane's share
  static constexpr int kRepeatN = WN / (kLanesN * kPiece);  // and across
  static constexpr int kThreadM = kRepeatM * kPiece, kThreadN = kRepeatN * kPiece;  // outputs per thread
  static constexpr int kLoadsA = BM * BK / 4 / kThreads;    // float4s of the A tile each thread fetches
  static constexpr int kLoadsB = BK * BN / 4 / kThreads;    // and of the B tile

  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
  static_assert(kLanesM * kLanesN == 32, "the lane grid is one warp");
  static_assert(WM % (kLanesM * kPiece) == 0 && WN % (kLanesN * kPiece) == 0,
                "the lanes' 4×4 pieces must tile the warp tile");
  static_assert(kLanesM * kPiece * 4 == 128, "one A fragment read per warp = 128 contiguous bytes: conflict-free");
  static_assert(BK % 4 == 0 && BN % 4 == 0, "tiles are fetched in float4s");
  static_assert(kLoadsA * kThreads * 4 == BM * BK && kLoadsB * kThreads * 4 == BK * BN,
                "the threads must share the A and B tiles' float4s evenly");
  static_assert(kAPad % 4 == 0, "padding must keep every As row 16-byte aligned for float4 reads");
  // With a row stride ≡ 4 banks, the transposed stores As[k][m] of one warp hit
  // 32 different banks when BK = 8 (k ∈ {0, 4}: 16 banks apart, m over 16 rows);
  // for BK = 16 they collide in pairs: the 16 scalar stores of a slice cost 32
  // wavefronts instead of 16, next to the slice's ~100 conflict-free vector
  // accesses (4 STS.128 and, for DefaultTiles, 16 k-steps × 6 LDS.128).
  static_assert((BM + kAPad) % 32 == 4, "row stride ≡ 4 banks (see above)");
  static_assert(2 * BK * (BM + kAPad + BN) * sizeof(float) <= 48 * 1024,
                "static shared memory is capped at 48 KiB");
};

using DefaultTiles = Tiles<128, 128, 16, 64, 64, 2>;

// The default tile sizes, for callers that size grids or check limits.
inline constexpr int kBlockM = DefaultTiles::kBlockM, kBlockN = DefaultTiles::kBlockN;

// One thread's share of a K slice, between the global fetch and the shared store.
template <class Cfg>
struct SliceInFlight {
  float4 a[Cfg::kLoadsA];  // float4s of the A tile (see the kernel contract for which)
  float4 b[Cfg::kLoadsB];  // float4s of the B tile
};

// Kernel contract:
//   A [M,K], B [K,N], C [M,N] row-major fp32; 1-D blocks of Cfg::kThreads threads.
//   kVectorized = true requires gpu::can_use_float4(K, N, A, B, C); false
//   requires nothing. Block (bx, by) owns the BM×BN tile of C at
//   (by·BM, bx·BN); warp w the WM×WN warp tile at ((w / kWarpsN)·WM, (w % kWarpsN)·WN);
//   lane (lm, ln) = (lane / 4, lane % 4) owns the 4×4 pieces at rows
//   i·32 + lm·4 and columns j·16 + ln·4 of its warp tile (the picture
//   in 03l_warp_tiling; for DefaultTiles i ∈ {0, 1}, j ∈ {0, 1, 2, 3}). Per K slice k0, float4
//   number f = t + l·kThreads of the A tile is A[row0 + f / (BK/4)][k0 + (f % (BK/4))·4 ..+3],
//   and of the B tile B[k0 + f / (BN/4)][col0 + (f % (BN/4))·4 ..+3].
//
//     stage 0: As[0][k][m], Bs[0][k][n]   ← being read by slice s   (s even)
//     stage 1: As[1][k][m], Bs[1][k][n]   ← being filled with slice s+1
//
//   Edge duties: elements outside A or B are fetched as 0 (so the last,
//   partial slice adds zeros); every thread fetches and meets every barrier;
//   outputs outside C are not stored.
//
//   The body is a device function so that the plain kernel and the batched
//   one (below: lesson 05's Winograd GEMMs, one per blockIdx.z) are the same
//   code; it is inlined into each.
template <class Cfg, bool kVectorized>
__device__ __forceinline__ void gemm_block_tile(int M, int N, int K, const float* __restrict__ A,
                                                const float* __restrict__ B, float* __restrict__ C) {
  constexpr int BM = Cfg::kBlockM, BN = Cfg::kBlockN, BK = Cfg::kBlockK;
  constexpr int kPiece = Cfg::kPiece, kLanesM = Cfg::kLanesM, kLanesN = Cfg::kLanesN;
  constexpr int kThreadM = Cfg::kThreadM, kThreadN = Cfg::kThreadN;
  __shared__ __align__(16) float As[2][BK][BM + Cfg::kAPad];  // As[stage][k][m]: A transposed
  __shared__ __align__(16) float Bs[2][BK][BN];               // Bs[stage][k][n]

  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  const int warp_row = (warp / Cfg::kWarpsN) * Cfg::kWarpM, warp_col = (warp % Cfg::kWarpsN) * Cfg::kWarpN;
  const int lane_row = (lane / kLanesN) * kPiece, lane_col = (lane % kLanesN) * kPiece;
  // Where my l-th float4 of each tile sits inside the tile.
  const auto a_row = [&](int l) { return (t + l * Cfg::kThreads) / (BK / 4); };
  const auto a_col = [&](int l) { return (t + l * Cfg::kThreads) % (BK / 4) * 4; };
  const auto b_row = [&](int l) { return (t + l * Cfg::kThreads) / (BN / 4); };
  const auto b_col = [&](int l) { return (t + l * Cfg::kThreads) % (BN / 4) * 4; };

  const auto fetch = [&](int k0) {
    SliceInFlight<Cfg> s;
    #pragma unroll
    for (int l = 0; l < Cfg::kLoadsA; ++l)
      s.a[l] = gpu::load4_or_zero<kVectorized>(A, M, K, row0 + a_row(l), k0 + a_col(l));
    #pragma unroll
    for (int l = 0; l < Cfg::kLoadsB; ++l)
      s.b[l] = gpu::load4_or_zero<kVectorized>(B, K, N, k0 + b_row(l), col0 + b_col(l));
    return s;
  };
  const auto store = [&](int stage, const SliceInFlight<Cfg>& s) {
    #pragma unroll
    for (int l = 0; l < Cfg::kLoadsA; ++l) {
      As[stage][a_col(l) + 0][a_row(l)] = s.a[l].x;  // A is transposed on its way into shared memory
      As[stage][a_col(l) + 1][a_row(l)] = s.a[l].y;
      As[stage][a_col(l) + 2][a_row(l)] = s.a[l].z;
      As[stage][a_col(l) + 3][a_row(l)] = s.a[l].w;
    }
    #pragma unroll
    for (int l = 0; l < Cfg::kLoadsB; ++l) *reinterpret_cast<float4*>(&Bs[stage][b_row(l)][b_col(l)]) = s.b[l];
  };
  // Fragments of k-step kk: a[i·4 + q] = row warp_row + i·32 + lane_row + q of the tile, likewise b.
  float a[2][kThreadM], b[2][kThreadN];
  const auto read_fragments = [&](int stage, int kk, float* a_frag, float* b_frag) {
    #pragma unroll
    for (int i = 0; i < Cfg::kRepeatM; ++i)
      *reinterpret_cast<float4*>(&a_frag[i * kPiece]) =
          *reinterpret_cast<const float4*>(&As[stage][kk][warp_row + i * kLanesM * kPiece + lane_row]);
    #pragma unroll
    for (int j = 0; j < Cfg::kRepeatN; ++j)
      *reinterpret_cast<float4*>(&b_frag[j * kPiece]) =
          *reinterpret_cast<const float4*>(&Bs[stage][kk][warp_col + j * kLanesN * kPiece + lane_col]);
  };

  float acc[kThreadM][kThreadN] = {};

  store(0, fetch(0));  // prologue: slice 0 into stage 0
  __syncthreads();

  int stage = 0;
  for (int k0 = 0; k0 < K; k0 += BK, stage ^= 1) {
    const bool has_next = k0 + BK < K;  // the same for every thread: no divergence
    SliceInFlight<Cfg> next{};
    if (has_next) next = fetch(k0 + BK);  // issued now, consumed after the math

    read_fragments(stage, 0, a[0], b[0]);
    #pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      // TUTORIAL: fragments of kk+1 are requested before the FMAs of kk use
      // the other register set; with the loop unrolled, [kk % 2] is a fixed register name.
      if (kk + 1 < BK) read_fragments(stage, kk + 1, a[(kk + 1) % 2], b[(kk + 1) % 2]);
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

template <class Cfg, bool kVectorized>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    gemm_double_buffering(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                          float* __restrict__ C) {
  gemm_block_tile<Cfg, kVectorized>(M, N, K, A, B, C);
}

// A batch of equally shaped products, C_z = A_z · B_z for z = blockIdx.z, the
// operands stride_a / stride_b / stride_c floats apart (a stride of 0 shares
// one operand among all z).
template <class Cfg, bool kVectorized>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    gemm_double_buffering_batched(int M, int N, int K, const float* __restrict__ A, int64_t stride_a,
                                  const float* __restrict__ B, int64_t stride_b, float* __restrict__ C,
                                  int64_t stride_c) {
  const int64_t z = blockIdx.z;
  gemm_block_tile<Cfg, kVectorized>(M, N, K, A + z * stride_a, B + z * stride_b, C + z * stride_c);
}

// C = A·B with the tile shapes Cfg: A [M,K], B [K,N],
// C [M,N] row-major fp32, float4 kernel when gpu::can_use_float4 allows,
// predicated scalar kernel otherwise. Requires ceil(M/BM) ≤ gpu::kMaxGridYZ.
// launch_tiles_on takes the stream (lesson 12's Tucker layer passes the one its oracle
// captures); launch_tiles keeps the plain signature bench/tune_sgemm_tiles.cu stores.
template <class Cfg>
void launch_tiles_on(cudaStream_t stream, int M, int N, int K, const float* A, const float* B, float* C) {
  const dim3 grid(unsigned(gpu::ceil_div(N, Cfg::kBlockN)), unsigned(gpu::ceil_div(M, Cfg::kBlockM)));
  if (gpu::can_use_float4(K, N, A, B, C)) {
    gemm_double_buffering<Cfg, true><<<grid, Cfg::kThreads, 0, stream>>>(M, N, K, A, B, C);
  } else {
    gemm_double_buffering<Cfg, false><<<grid, Cfg::kThreads, 0, stream>>>(M, N, K, A, B, C);
  }
  gpu::check_launch("gemm_double_buffering");
}

template <class Cfg>
void launch_tiles(int M, int N, int K, const float* A, const float* B, float* C) {
  launch_tiles_on<Cfg>(0, M, N, K, A, B, C);
}

// The same with DefaultTiles: what rung 03m and lesson 02's GPU rung call.
inline void launch(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream = 0) {
  launch_tiles_on<DefaultTiles>(stream, M, N, K, A, B, C);
}

// `batch` products C_z = A_z · B_z (z < batch) in one launch with DefaultTiles,
// operands stride_* floats apart; float4 kernel when every A_z, B_z, C_z allows it.
// Requires ceil(M/BM) ≤ gpu::kMaxGridYZ and batch ≤ gpu::kMaxGridYZ.
inline void launch_batched(int batch, int M, int N, int K, const float* A, int64_t stride_a, const float* B,
                           int64_t stride_b, float* C, int64_t stride_c) {
  using Cfg = DefaultTiles;
  const dim3 grid(unsigned(gpu::ceil_div(N, Cfg::kBlockN)), unsigned(gpu::ceil_div(M, Cfg::kBlockM)),
                  unsigned(batch));
  const bool strides_keep_alignment = stride_a % 4 == 0 && stride_b % 4 == 0 && stride_c % 4 == 0;
  if (gpu::can_use_float4(K, N, A, B, C) && strides_keep_alignment) {
    gemm_double_buffering_batched<Cfg, true><<<grid, Cfg::kThreads>>>(M, N, K, A, stride_a, B, stride_b, C, stride_c);
  } else {
    gemm_double_buffering_batched<Cfg, false>
        <<<grid, Cfg::kThreads>>>(M, N, K, A, stride_a, B, stride_b, C, stride_c);
  }
  gpu::check_launch("gemm_double_buffering_batched");
}

}  // namespace convlab::gpu::double_buffered
