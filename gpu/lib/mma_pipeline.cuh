// gpu/lib/mma_pipeline.cuh — the tensor-core main loop: a cp.async ring of
// shared-memory stages, ldmatrix fragments double-buffered in registers, and
// mma.sync m16n8k16 over a warp's tile. One piece, used by
// gemm/gpu/03o_tensor_core_pipelined (lesson 03) and by the tensor-core
// implicit GEMM of gpu/lib/implicit_gemm_tensor_core.cuh (lessons 04, 06, 07).
//
// The caller keeps what differs between them: how a k tile reaches shared
// memory (load_tile: a plain matrix, or the im2col view) and how fragments
// come out of it (load_fragments: B stored [k][n] and read with .trans, or
// [n][k] without). This piece owns only the schedule.
//
// Contract.
//   load_tile(stage, k_tile)        issue the cp.async copies of k tile `k_tile`
//                                   into ring stage `stage`; called for k_tile
//                                   0, 1, 2, ... in order, once each, and never
//                                   for k_tile >= k_tiles
//   load_fragments(buf, base, step) ldmatrix k16 step `step` of the stage at
//                                   shared address `base` into a_frag[buf], b_frag[buf]
//   acc[mi][ni]                     the warp's D fragments (gpu::mma_c_coord),
//                                   accumulated in place (the caller zeroes them)
// Every thread of the block calls it (it has block-wide barriers). On return
// no copy is pending; the ring may still be read by other warps' last
// ldmatrix, so a caller reusing the shared memory needs its own barrier.
#pragma once

#include <cstdint>

#include "gpu/lib/check.cuh"
#include "gpu/lib/mma.cuh"

namespace convlab::gpu {

// The pieces both users are built from, fixed by the hardware: the mma.sync
// m16n8k16 tile and the 16-byte chunk (8 f16/bf16 elements) that cp.async
// copies and ldmatrix reads as one row.
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int kChunkElems = 8;
constexpr int kElemBytes = 2;

// What a block tile of kBlockM x kBlockN (k tiles of kBlockK) split among
// kWarpsM x kWarpsN warps comes to: each warp a kWarpM x kWarpN piece of
// kMmaTilesM x kMmaTilesN mma tiles, kKSteps k16 steps per k tile.
template <int kBlockM, int kBlockN, int kBlockK, int kWarpsM, int kWarpsN> struct WarpTiling {
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kWarpM = kBlockM / kWarpsM;
  static constexpr int kWarpN = kBlockN / kWarpsN;
  static constexpr int kMmaTilesM = kWarpM / kMmaM;
  static constexpr int kMmaTilesN = kWarpN / kMmaN;
  static constexpr int kKSteps = kBlockK / kMmaK;
  static_assert(kBlockM % (kWarpsM * kMmaM) == 0 && kBlockN % (kWarpsN * kMmaN) == 0,
                "the warps must tile the block tile in whole mma tiles");
  static_assert(kBlockK % kMmaK == 0, "whole k16 steps per k tile");
};

// Where this block's output tile and this warp's piece of it start: blocks
// walk the tiles in bands of kGroupM tile rows (gpu::grouped_tile, for L2
// reuse), warps sit row-major kWarpsN to a row. Plain form:
//   tile = grouped_tile(blockIdx.x, ceil(rows / kBlockM), ceil(cols / kBlockN), kGroupM)
//   block origin = tile · (kBlockM, kBlockN),  warp origin = (warp / kWarpsN, warp % kWarpsN) · (kWarpM, kWarpN)
struct WarpTileOrigin {
  int block_m0, block_n0;  // the block's tile in the output
  int warp_m0, warp_n0;    // the warp's piece, within the block's tile
};
template <int kBlockM, int kBlockN, int kWarpM, int kWarpN, int kWarpsN, int kGroupM>
__device__ __forceinline__ WarpTileOrigin warp_tile_origin(int rows, int cols, int warp) {
  const TileCoord tile = grouped_tile(blockIdx.x, ceil_div(rows, kBlockM), ceil_div(cols, kBlockN), kGroupM);
  return {tile.m * kBlockM, tile.n * kBlockN, (warp / kWarpsN) * kWarpM, (warp % kWarpsN) * kWarpN};
}

// ldmatrix.x4 of a warp's kTilesM m16 tiles of A for one k16 step, from a
// tile stored [m][k] in rows of kRowBytes: tile mi starts mi·16 rows below
// tile 0, whose address for this lane (gpu::ldmatrix_x4_row_address) is `lane_address`.
template <int kTilesM, int kRowBytes>
__device__ __forceinline__ void load_a_fragments(uint32_t (&a)[kTilesM][4], uint32_t lane_address) {
#pragma unroll
  for (int mi = 0; mi < kTilesM; ++mi) ldmatrix_x4(a[mi], lane_address + mi * kMmaM * kRowBytes);
}

// ldmatrix.x4 of B for one k16 step and the n8 tiles 2·nj and 2·nj + 1 (16
// columns n) into b[2nj], b[2nj+1] (gpu::mma_b_coord's registers), from this
// lane's address (gpu::ldmatrix_x4_row_address) in a tile stored
//   kStoredKN = true:  [k][n] (B row-major as GEMM has it): read with .trans;
//                      the x4's matrices are (k 0-7, n 0-7), (k 8-15, n 0-7),
//                      (k 0-7, n 8-15), (k 8-15, n 8-15)
//   kStoredKN = false: [n][k] (a KRSC weight: the "col" operand mma wants):
//                      no .trans; lane 4g + t gets (n = g, k = 2t, 2t+1) of each
//                      8x8 matrix, the matrices being (n 0-7, k 0-7), (n 8-15,
//                      k 0-7), (n 0-7, k 8-15), (n 8-15, k 8-15)
// (both orders checked on the host in tests/mma_layout_test.cpp and
// tests/lesson04_implicit_gemm_test.cpp).
template <bool kStoredKN, int kTilesN>
__device__ __forceinline__ void load_b_fragment_pair(uint32_t (&b)[kTilesN][2], int nj, uint32_t lane_address) {
  uint32_t r[4];
  if constexpr (kStoredKN) {
    ldmatrix_x4_trans(r, lane_address);
    b[2 * nj][0] = r[0];      // k 0-7,  n 0-7 of the pair
    b[2 * nj][1] = r[1];      // k 8-15, n 0-7
    b[2 * nj + 1][0] = r[2];  // k 0-7,  n 8-15
    b[2 * nj + 1][1] = r[3];  // k 8-15, n 8-15
  } else {
    ldmatrix_x4(r, lane_address);
    b[2 * nj][0] = r[0];      // n 0-7 of the pair, k 0-7
    b[2 * nj + 1][0] = r[1];  // n 8-15,            k 0-7
    b[2 * nj][1] = r[2];      // n 0-7,             k 8-15
    b[2 * nj + 1][1] = r[3];  // n 8-15,            k 8-15
  }
}

template <int kStages, int kKSteps, int kStageBytes, class Element, int kTilesM, int kTilesN, class LoadTile,
          class LoadFragments>
__device__ __forceinline__ void mma_pipeline(uint32_t shared_base, int k_tiles, const LoadTile& load_tile,
                                             const LoadFragments& load_fragments,
                                             const uint32_t (&a_frag)[2][kTilesM][4],
                                             const uint32_t (&b_frag)[2][kTilesN][2],
                                             float (&acc)[kTilesM][kTilesN][4]) {
  static_assert(kKSteps % 2 == 0,
                "an even number of k16 steps per stage: the two fragment buffers alternate "
                "and step 0 of every stage must land in buffer 0");
  static_assert(kStages >= 3,
                "tile k+1 is read while tile k+kStages-1 is written into the stage tile k-1 vacated; "
                "with 2 stages those would be the same buffer");

  // TUTORIAL: the plain loop is gemm rung 03n's
  //
  //     for (kt = 0; kt < k_tiles; ++kt) { load tile kt; sync; compute tile kt; sync; }
  //
  // Here tile kt lives in stage kt % kStages, and loads run kStages-1 tiles
  // ahead of the math:
  //
  //     prologue: start tiles 0 .. kStages-2 (one commit group each)
  //     for kt:   step 0:  start tile kt+kStages-1 into the stage tile kt-1 left
  //               steps:   ldmatrix step s+1 while the mma of step s run
  //               last step: wait until tile kt+1 has landed, barrier, then
  //                          ldmatrix its step 0 (while the mma of our last step run)
  //
  // One commit group per tile, even an empty one past the end of K, so "tile
  // kt+1 has landed" is always "at most kStages-2 groups still pending".
  // The single barrier per tile does two jobs: it publishes tile kt+1 (every
  // thread waited for its own copies of it), and it certifies that every warp
  // finished reading tile kt-1 (its last ldmatrix came before), so the copy
  // into that stage at the next step 0 overwrites nothing still needed.
#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < k_tiles) load_tile(t, t);
    cp_async_commit();
  }
  cp_async_wait<kStages - 2>();
  __syncthreads();

  int read_stage = 0;             // stage holding tile kt
  int write_stage = kStages - 1;  // stage that receives tile kt + kStages - 1
  uint32_t read_base = shared_base;
  load_fragments(0, read_base, 0);

  for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
    for (int step = 0; step < kKSteps; ++step) {
      if (step == kKSteps - 1) {
        cp_async_wait<kStages - 2>();  // my copies of tile kt+1 are done
        __syncthreads();               // everyone's are; everyone is past tile kt-1
        read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
        read_base = shared_base + read_stage * kStageBytes;
      }
      // The next step's fragments: of this tile, or step 0 of tile kt+1. (After
      // the last tile this reads a stage that holds nothing useful; harmless.)
      load_fragments((step + 1) % 2, read_base, (step + 1) % kKSteps);

      if (step == 0) {
        const int next = kt + kStages - 1;
        if (next < k_tiles) load_tile(write_stage, next);
        cp_async_commit();
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
      }

#pragma unroll
      for (int mi = 0; mi < kTilesM; ++mi)
#pragma unroll
        for (int ni = 0; ni < kTilesN; ++ni) {
          // Serpentine order over n: consecutive mma share an A or B fragment.
          const int n = (mi % 2 == 0) ? ni : kTilesN - 1 - ni;
          mma_m16n8k16<Element>(acc[mi][n], a_frag[step % 2][mi], b_frag[step % 2][n]);
        }
    }
  }
  cp_async_wait<0>();  // nothing real is pending (only empty groups); leave no copy behind
}

}  // namespace convlab::gpu
