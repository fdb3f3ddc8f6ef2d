// gpu/lib/ffn_hidden_loop.cuh — Eq. 32's loop over hidden chunks on mma.sync, written once.
//
// The block-level piece that lesson 08's fused FFN (gpu/ffn/08c_fused_tensor_core.cu)
// and lesson 10's fused ConvFirst block (gpu/convfirst/10b_fused.cu) both run after
// they have their A tile in shared memory (X for the FFN, the conv output T for the
// block):
//
//   plain loop                                  here, per warp and its kMTiles m16 tiles
//     for r in chunks of TH:                      U^r, V_r: cp.async into stage r % 2 (two stages)
//       H = φ(A_tile · U^r + a_r)                 mma.sync m16n8k16, fp32 accumulators in registers
//       Z += H · V_r                              mma.sync, A operand = H's accumulators rounded in place
//
// The hand-over that keeps H in registers: the fp32 accumulator of an m16n8
// mma (lane (g, t): rows g and g+8, columns 2t, 2t+1), for two neighbouring n8
// tiles, is exactly the A fragment of the next m16k16 mma (mma.cuh: mma_c_coord
// against mma_a_coord; tests/lesson08_ffn_test.cpp checks it on the host):
//
//   A reg 0 = pack(D[2kk][0], D[2kk][1])       row g,   k 2t, 2t+1
//   A reg 1 = pack(D[2kk][2], D[2kk][3])       row g+8, k 2t, 2t+1
//   A reg 2 = pack(D[2kk+1][0], D[2kk+1][1])   row g,   k 8+2t, 9+2t
//   A reg 3 = pack(D[2kk+1][2], D[2kk+1][3])   row g+8, k 8+2t, 9+2t
//
// Each warp owns whole rows (all TH hidden columns of them, all C_out output
// columns), so the hand-over is warp-local.
//
// Contract.
//   FfnLoopConfig<C, Warps, WarpRows, Chunk, MinBlocks, COut = C>: the tile sizes (one per channel
//     count; the callers pick them) and the shared-memory layout of a stage:
//       stage s at stages_base + s·kStageBytes: [U^r: C rows × TH, swizzled][V_r: TH rows × kVRowElems, swizzled]
//     COut is the output width (V's columns, Z's columns); it equals C except in lesson 10's
//     stride-2 block, whose shortcut projection widens the channels.
//   The A tile: kBlockRows rows of kRowElems elements (C, padded to 32 so that a row is at least 64 bytes),
//     16-byte chunks XOR-swizzled by ChunkSwizzle<kARowChunks>, at a_base; row w·kWarpRows + i belongs to warp w.
//   U [C, hidden], V [hidden, COut] row-major, a [hidden]; hidden % 8 == 0 (whole 16-byte pieces): columns
//     and rows ≥ hidden are zero-filled, and φ(0 + 0)·0 adds nothing, so a partial last chunk is exact
//     for any φ with φ(0) finite (the bias of a missing column is read as 0).
//   The bias a: a pointer to a [hidden] in global memory (GlobalBias), or a SharedBias whose fp32 copy
//     the caller staged in shared memory, zero-padded to whole chunks and published by a barrier
//     before the loop (the loop's first __syncthreads does that for copies made before it).
//   Commit groups on entry to ffn_hidden_loop: the caller has issued two, in this order:
//       [its A-tile copies, if any, + load_ffn_chunk(stage 0, chunk 0)]  [load_ffn_chunk(stage 1, chunk 1) or nothing]
//     and nothing after them. On return no copy is pending.
//   z_acc: the warp's Z fragments (mma_c_coord), kMTiles × kZTiles × 4 fp32 (kZTiles = COut / 8), starting wherever the caller
//     wants (zero, the bias, the residual); the loop adds H·V to them.
//   phi(h): the caller's activation, applied to the warp's whole H_r accumulator array
//     (float[kMTiles][kHTiles][4]) in place; a switch on a run-time activation belongs inside it
//     (uniform over the grid), so the loop is compiled once.
//   Barriers: two __syncthreads per chunk; every thread of the block must call the loop.
//   After the loop: store_z writes Z, rounded once, to the caller's output rows (lesson 10's blocks;
//     the FFN adds b as it stores and keeps its own store). ReluOrSilu is lesson 10's phi.
#pragma once

#include <cstdint>

#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"

namespace convlab::gpu {

// ---- tunables (the caller's, one per channel count) ------------------------------------
//   Warps      warps per block; each owns WarpRows consecutive rows of the tile
//   WarpRows   rows per warp (whole m16 tiles): B fragments are reused WarpRows/16 times
//   Chunk      TH, hidden channels per loop step
//   MinBlocks  blocks per SM promised to ptxas (caps registers at 65536 / (32·Warps·MinBlocks))
//   COut       output channels (Z's and V's columns); C unless the caller's block widens them
// Registers per lane: Z kMTiles·kZTiles·4 and H_r kMTiles·kHTiles·4 fp32.
template <int C, int Warps, int WarpRows, int Chunk, int MinBlocks, int COut = C> struct FfnLoopConfig {
  static constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
  static constexpr int kChunkElems = 8;  // one 16-byte cp.async / ldmatrix row piece of f16/bf16
  static constexpr int kElemBytes = 2;

  static constexpr int kC = C, kCOut = COut;
  static constexpr int kWarps = Warps, kWarpRows = WarpRows, kChunk = Chunk, kMinBlocks = MinBlocks;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kBlockRows = kWarps * kWarpRows;
  static constexpr int kMTiles = WarpRows / kMmaM;  // m16 tiles per warp
  static constexpr int kHTiles = Chunk / kMmaN;     // n8 tiles of H_r per warp (all TH columns)
  static constexpr int kZTiles = COut / kMmaN;      // n8 tiles of Z per warp (all COut columns)
  static constexpr int kKSteps1 = C / kMmaK;        // k16 steps of the expand GEMM (over C)
  static constexpr int kKSteps2 = Chunk / kMmaK;    // k16 steps of the project GEMM (over the chunk)
  static constexpr int kRowElems = C < 32 ? 32 : C;            // A-tile rows, padded to 64 bytes for ChunkSwizzle
  static constexpr int kVRowElems = COut < 32 ? 32 : COut;     // V rows, likewise
  static constexpr int kARowChunks = kRowElems / kChunkElems;
  static constexpr int kURowChunks = Chunk / kChunkElems;
  static constexpr int kVRowChunks = kVRowElems / kChunkElems;
  static constexpr int kATileBytes = kBlockRows * kRowElems * kElemBytes;
  static constexpr int kUTileBytes = C * Chunk * kElemBytes;
  static constexpr int kVTileBytes = Chunk * kVRowElems * kElemBytes;
  static constexpr int kStageBytes = kUTileBytes + kVTileBytes;

  static_assert(C % 16 == 0 && Chunk % 16 == 0, "whole k16 steps, and n16 pairs for ldmatrix.x4.trans");
  static_assert(COut % 16 == 0, "n16 pairs of Z tiles for ldmatrix.x4.trans of V");
  static_assert(WarpRows % kMmaM == 0, "whole m16 tiles per warp");
  static_assert(kKSteps2 * 2 == kHTiles, "two n8 accumulator tiles make one k16 A fragment");
  static_assert(kARowChunks >= 4 && kURowChunks >= 4, "ChunkSwizzle needs rows of at least 64 bytes");
  static_assert((kARowChunks & (kARowChunks - 1)) == 0 && (kURowChunks & (kURowChunks - 1)) == 0 &&
                    (kVRowChunks & (kVRowChunks - 1)) == 0,
                "ChunkSwizzle needs a power of two of chunks per row");
  static_assert(kATileBytes % 128 == 0 && kUTileBytes % 128 == 0 && kVTileBytes % 128 == 0,
                "tiles start on 128-byte lines, so each tile's swizzle is its own");
  static_assert(kThreads <= 1024, "a CUDA block has at most 1024 threads");
};

#if defined(__CUDACC__)

// U^r (rows c < C, hidden columns r·TH ..) and V_r (hidden rows r·TH .., columns < COut) into stage
// `stage`, by every thread of the block, coalesced (consecutive threads, consecutive 16-byte
// pieces); pieces outside [0, hidden) are zero-filled. The caller commits.
template <class Cfg, class Element>
__device__ __forceinline__ void load_ffn_chunk(uint32_t stages_base, int stage, int r, int hidden,
                                               const Element* __restrict__ U, const Element* __restrict__ V) {
  constexpr int C = Cfg::kC, TH = Cfg::kChunk, kChunkElems = Cfg::kChunkElems;
  using SwizzleU = ChunkSwizzle<Cfg::kURowChunks>;
  using SwizzleV = ChunkSwizzle<Cfg::kVRowChunks>;
  const uint32_t u_base = stages_base + stage * Cfg::kStageBytes;
  const uint32_t v_base = u_base + Cfg::kUTileBytes;
  const int h0 = r * TH;
#pragma unroll
  for (int idx = threadIdx.x; idx < C * Cfg::kURowChunks; idx += Cfg::kThreads) {
    const int c = idx / Cfg::kURowChunks, piece = idx % Cfg::kURowChunks;
    const int col = h0 + piece * kChunkElems;
    const bool in = col < hidden;  // hidden % 8 == 0: a piece is wholly in or out
    cp_async_16(u_base + SwizzleU::byte_offset(c, piece), in ? U + int64_t(c) * hidden + col : U, in);
  }
  constexpr int COut = Cfg::kCOut;
  constexpr int kVPiecesPerRow = COut / kChunkElems;
#pragma unroll
  for (int idx = threadIdx.x; idx < TH * kVPiecesPerRow; idx += Cfg::kThreads) {
    const int k = idx / kVPiecesPerRow, piece = idx % kVPiecesPerRow;
    const int row = h0 + k;
    const bool in = row < hidden;
    cp_async_16(v_base + SwizzleV::byte_offset(k, piece), in ? V + int64_t(row) * COut + piece * kChunkElems : V, in);
  }
}

// The loop itself (see the contract above for the commit groups on entry).
//
// TUTORIAL: chunk r is read from stage r % 2 while chunk r+1 is in flight.
// "Chunk r has landed" = at most one commit group still pending (one group per
// chunk; past the end the groups are empty). The first barrier publishes
// everyone's copies of chunk r; the second certifies that every warp is done
// reading stage r % 2, and only then is chunk r+2 copied into it.
//
// Where the loop reads the bias a_r: `bias.pair(col)` returns a[col], a[col + 1] (col even) as fp32.
// GlobalBias reads a [hidden] from global memory (two 16-bit loads per pair, 0 past hidden);
// SharedBias reads an fp32 copy the caller staged in shared memory, zero-padded to whole chunks
// (one 8-byte load, nothing to convert: lesson 10's stride-2 block, after 10c's finding that the
// global loads at the top of every chunk cost a quarter of its time).
template <class Element> struct GlobalBias {
  const Element* __restrict__ a;
  int hidden;
  __device__ __forceinline__ float2 pair(int col) const {
    return float2{col < hidden ? to_float(a[col]) : 0.0f, col < hidden ? to_float(a[col + 1]) : 0.0f};
  }
};
struct SharedBias {
  const float* a;  // generic pointer into shared memory, 8-byte aligned
  __device__ __forceinline__ float2 pair(int col) const { return *reinterpret_cast<const float2*>(a + col); }
};

template <class Cfg, class Bias, class Element, class Phi>
__device__ __forceinline__ void ffn_hidden_loop(float (&z_acc)[Cfg::kMTiles][Cfg::kZTiles][4], uint32_t a_base,
                                                uint32_t stages_base, int warp_row0, int hidden, const Bias& bias,
                                                const Element* __restrict__ U, const Element* __restrict__ V,
                                                Phi&& phi) {
  constexpr int TH = Cfg::kChunk;
  constexpr int kMmaM = Cfg::kMmaM, kMmaN = Cfg::kMmaN, kMmaK = Cfg::kMmaK, kChunkElems = Cfg::kChunkElems;
  using SwizzleA = ChunkSwizzle<Cfg::kARowChunks>;
  using SwizzleU = ChunkSwizzle<Cfg::kURowChunks>;
  using SwizzleV = ChunkSwizzle<Cfg::kVRowChunks>;
  const int lane = threadIdx.x % 32, t = lane % 4;
  const int chunks = ceil_div(hidden, TH);
  const MatrixCoord lane_row = ldmatrix_x4_row_address(lane);  // row lane % 16, column 8·(lane / 16)

  for (int r = 0; r < chunks; ++r) {
    cp_async_wait<1>();  // my copies of chunk r (and of the caller's tile) are done
    __syncthreads();     // everyone's are

    const uint32_t u_base = stages_base + (r % 2) * Cfg::kStageBytes;
    const uint32_t v_base = u_base + Cfg::kUTileBytes;
    const int h0 = r * TH;

    // H_r starts as the bias a_r: element (row, 2t + e) of n8 tile ni is a[h0 + 8·ni + 2t + e].
    float h[Cfg::kMTiles][Cfg::kHTiles][4];
#pragma unroll
    for (int ni = 0; ni < Cfg::kHTiles; ++ni) {
      const float2 a = bias.pair(h0 + ni * kMmaN + 2 * t);  // even column; hidden even: the pair is whole
#pragma unroll
      for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
        h[mi][ni][0] = a.x, h[mi][ni][1] = a.y;  // row g
        h[mi][ni][2] = a.x, h[mi][ni][3] = a.y;  // row g + 8
      }
    }

    // Expand: H_r += A_tile · U^r over C in k16 steps. A from the tile (ldmatrix), B from U^r (ldmatrix.trans).
#pragma unroll
    for (int s = 0; s < Cfg::kKSteps1; ++s) {
      uint32_t a_frag[Cfg::kMTiles][4];
#pragma unroll
      for (int mi = 0; mi < Cfg::kMTiles; ++mi)
        ldmatrix_x4(a_frag[mi], a_base + SwizzleA::byte_offset(warp_row0 + mi * kMmaM + lane_row.row,
                                                               (s * kMmaK + lane_row.col) / kChunkElems));
#pragma unroll
      for (int nj = 0; nj < Cfg::kHTiles / 2; ++nj) {
        uint32_t u_frag[4];  // B fragments of n8 tiles 2nj (regs 0, 1) and 2nj+1 (regs 2, 3)
        ldmatrix_x4_trans(u_frag, u_base + SwizzleU::byte_offset(s * kMmaK + lane_row.row,
                                                                 (nj * 16 + lane_row.col) / kChunkElems));
        const uint32_t b_lo[2] = {u_frag[0], u_frag[1]}, b_hi[2] = {u_frag[2], u_frag[3]};
#pragma unroll
        for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
          mma_m16n8k16<Element>(h[mi][2 * nj], a_frag[mi], b_lo);
          mma_m16n8k16<Element>(h[mi][2 * nj + 1], a_frag[mi], b_hi);
        }
      }
    }

    phi(h);  // element-wise, fp32

    // Project: Z += H_r · V_r over the chunk in k16 steps; A = H_r's accumulator tiles 2kk, 2kk+1, rounded and paired.
#pragma unroll
    for (int kk = 0; kk < Cfg::kKSteps2; ++kk) {
      uint32_t h_frag[Cfg::kMTiles][4];
#pragma unroll
      for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
        h_frag[mi][0] = pack_pair<Element>(h[mi][2 * kk][0], h[mi][2 * kk][1]);
        h_frag[mi][1] = pack_pair<Element>(h[mi][2 * kk][2], h[mi][2 * kk][3]);
        h_frag[mi][2] = pack_pair<Element>(h[mi][2 * kk + 1][0], h[mi][2 * kk + 1][1]);
        h_frag[mi][3] = pack_pair<Element>(h[mi][2 * kk + 1][2], h[mi][2 * kk + 1][3]);
      }
#pragma unroll
      for (int nj = 0; nj < Cfg::kZTiles / 2; ++nj) {
        uint32_t v_frag[4];  // B fragments of Z's n8 tiles 2nj and 2nj+1
        ldmatrix_x4_trans(v_frag, v_base + SwizzleV::byte_offset(kk * kMmaK + lane_row.row,
                                                                 (nj * 16 + lane_row.col) / kChunkElems));
        const uint32_t b_lo[2] = {v_frag[0], v_frag[1]}, b_hi[2] = {v_frag[2], v_frag[3]};
#pragma unroll
        for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
          mma_m16n8k16<Element>(z_acc[mi][2 * nj], h_frag[mi], b_lo);
          mma_m16n8k16<Element>(z_acc[mi][2 * nj + 1], h_frag[mi], b_hi);
        }
      }
    }
    __syncthreads();  // every warp is done with stage r % 2
    if (r + 2 < chunks) load_ffn_chunk<Cfg>(stages_base, r % 2, r + 2, hidden, U, V);
    cp_async_commit();
  }
  cp_async_wait<0>();  // only empty groups can be pending; leave none behind
}
// The loop with a [hidden] read from global memory (lesson 08's FFN, 10b).
template <class Cfg, class Element, class Phi>
__device__ __forceinline__ void ffn_hidden_loop(float (&z_acc)[Cfg::kMTiles][Cfg::kZTiles][4], uint32_t a_base,
                                                uint32_t stages_base, int warp_row0, int hidden,
                                                const Element* __restrict__ A, const Element* __restrict__ U,
                                                const Element* __restrict__ V, Phi&& phi) {
  ffn_hidden_loop<Cfg>(z_acc, a_base, stages_base, warp_row0, hidden, GlobalBias<Element>{A, hidden}, U, V, phi);
}

// φ for lesson 10's fused blocks: ReLU or SiLU over the warp's H_r accumulators in place, chosen
// at run time (uniform over the grid: no divergence); pass it as ffn_hidden_loop's phi.
struct ReluOrSilu {
  bool relu;
  template <int kMTiles, int kHTiles> __device__ __forceinline__ void operator()(float (&h)[kMTiles][kHTiles][4]) const {
    if (relu) {
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
        for (int ni = 0; ni < kHTiles; ++ni)
#pragma unroll
          for (int e = 0; e < 4; ++e) h[mi][ni][e] = fmaxf(h[mi][ni][e], 0.0f);
    } else {
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
        for (int ni = 0; ni < kHTiles; ++ni)
#pragma unroll
          for (int e = 0; e < 4; ++e) h[mi][ni][e] = h[mi][ni][e] / (1.0f + expf(-h[mi][ni][e]));
    }
  }
};

// Z, rounded once to Element, into rows row0 + (the warp's rows) of row-major Y [rows, COut]:
// lane (g, t) stores rows g and g+8 of each m16 tile, columns 8·ni + 2t, +1 as one 32-bit
// word (COut even, so the pair is 4-byte aligned); rows ≥ `rows` are not stored.
template <class Cfg, class Element>
__device__ __forceinline__ void store_z(Element* __restrict__ Y, const float (&z_acc)[Cfg::kMTiles][Cfg::kZTiles][4],
                                        int row0, int rows) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = row0 + mi * Cfg::kMmaM + g + 8 * half;
      if (m >= rows) continue;
#pragma unroll
      for (int ni = 0; ni < Cfg::kZTiles; ++ni) {
        const int col = ni * Cfg::kMmaN + 2 * t;
        *reinterpret_cast<uint32_t*>(Y + int64_t(m) * Cfg::kCOut + col) =
            pack_pair<Element>(z_acc[mi][ni][2 * half], z_acc[mi][ni][2 * half + 1]);
      }
    }
}

#endif  // __CUDACC__

}  // namespace convlab::gpu
