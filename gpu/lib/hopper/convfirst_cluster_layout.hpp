// gpu/lib/hopper/convfirst_cluster_layout.hpp — the tunables, supported set and
// shared-memory geometry of lesson 10's large-C ConvFirst block over a
// thread-block cluster (gpu/convfirst/10e_fused_cluster.cu), in plain C++ so
// that tests/hopper_lib_test.cpp checks on the host that
//   * the conv's fragments written into T by the cluster's CTAs cover every
//     channel of every pixel of the tile once, and the expand's descriptors
//     read T where they land,
//   * the U and V pieces land where the wgmma descriptors read them,
//   * the H exchange buffer gives every (warpgroup, source, thread, word) its
//     own 16-byte-aligned place, eight consecutive threads one 128-byte line.
//
// The cluster: S CTAs (S = 2 at C = 128 and 256, 4 at C = 512) share one tile
// of 64·Consumers pixels. CTA k (its rank) owns channels [kC/S, (k+1)C/S) of T
// and of y, and hidden columns [64k, 64k + 64) of every chunk of 64·S.
//
// Shared memory of one CTA (every region but the biases 1024-aligned):
//
//   [ barriers | T [tile px][C] | weight ring | H in | conv weights [C/S][9][8] | x buffers | biases ]
//
//   T       the whole tile's conv output, K-major A of the expand (128-byte
//           swizzle, C/64 panels); C/S channels written by this CTA, the rest by the peers
//   ring    Stages slots of one size, filled per chunk with UPieces pieces of
//           U^r[:, 64k + (0..63)] ([C/UPieces][64], MN-major B of the expand),
//           then VPieces pieces of V_r[rows of the chunk, channels of k]
//           ([64S/VPieces][C/S], MN-major B of the project). A U piece and a V
//           piece are the same size (C·128 bytes for one piece each).
//   H in    the peers' H of the current chunk, [warpgroup][source slot][quad][thread][4 words]
//   x       the halo rows of this CTA's channels (XStaging of C/S channels)
//   biases  fp32, staged once per CTA (at a run-time offset: the x buffers' size depends
//           on W, so the region is only 128-aligned): a [⌈hidden / Chunk⌉ · 64], this
//           CTA's 64 columns of each chunk (zero past hidden), then b [C/S] and
//           conv_b [C/S], this CTA's channels
#pragma once

#include <cstdint>

#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/hopper/convfirst_wgmma_layout.hpp"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"

namespace convlab::convfirst_cluster {

using convfirst_wgmma::kConvSteps;
using convfirst_wgmma::kGroupWidth;
using convfirst_wgmma::kMaxShared;
using convfirst_wgmma::kPanelCols;
using convfirst_wgmma::kWgmmaK;
using convfirst_wgmma::kWgmmaM;
using convfirst_wgmma::round_up_1024;

constexpr int kSliceCols = 64;                 // a CTA's columns of each hidden chunk: N of its expand
constexpr int kHSteps = kSliceCols / kWgmmaK;  // project k16 steps per slice (4)
constexpr int kHWords = 4 * kHSteps;           // packed H words per thread per slice (16)
constexpr int kHQuads = kHWords / 4;           // 16-byte pieces of them
constexpr int kProducerRegs = 40;

// ---- what both cuts of the pair (Layout, SplitLayout below) compute alike -----------------
//
// L is the layout deriving from this (its ring base and slot size, its T, U and V tiles, its
// channel share kOwn); the functions are instantiated only when called, once L is complete.
template <class L> struct PairGeometry {
  // Ring slot s's shared address, and column panel p of a V piece in it.
  CONVLAB_HOST_DEVICE static constexpr uint32_t slot(uint32_t base, int s) { return base + L::kRingBase + s * L::kSlotBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t v_box(uint32_t slot, int p) { return slot + p * L::VTile::kPanelBytes; }
  // Expand step ks (channels 16ks ..) of consumer warpgroup `consumer`'s 64 pixels.
  CONVLAB_HOST_DEVICE static constexpr uint64_t t_descriptor(uint32_t t_base, int consumer, int ks) {
    return gpu::k_major_descriptor<typename L::TTile>(t_base, consumer * kWgmmaM, ks * kWgmmaK);
  }
  // Step ks (rows 16ks ..) of a U piece.
  CONVLAB_HOST_DEVICE static constexpr uint64_t u_descriptor(uint32_t slot, int ks) {
    return gpu::mn_major_descriptor<typename L::UTile>(slot, ks * kWgmmaK);
  }
  // Step kk (rows 16kk ..) of a V piece.
  CONVLAB_HOST_DEVICE static constexpr uint64_t v_descriptor(uint32_t slot, int kk) {
    return gpu::mn_major_descriptor<typename L::VTile>(slot, kk * kWgmmaK);
  }
  // Where the conv's rounded accumulators go. Thread `thread` (0..127) of
  // consumer warpgroup `consumer` in CTA `rank` holds, for 16-channel piece
  // `pair` (groups 2·pair, 2·pair + 1 of the CTA), word `reg` of mma.sync's
  // m16n8 accumulators of both groups: rows g, g + 8 of its warp's 16 pixels,
  // channels 2tq, 2tq + 1 of the group (reg 0, 1 the lower group, 2, 3 the upper).
  CONVLAB_HOST_DEVICE static constexpr gpu::MatrixCoord t_fragment_coord(int consumer, int thread, int rank, int pair,
                                                                         int reg) {
    const int warp = thread / 32, lane = thread % 32, g = lane / 4, tq = lane % 4;
    return {consumer * kWgmmaM + 16 * warp + g + 8 * (reg & 1), rank * L::kOwn + 16 * pair + 8 * (reg >> 1) + 2 * tq};
  }
};

// ---- tunables, one configuration per C (= C_out) ----------------------------------------
//
//   Cluster           CTAs per cluster: the channel split (Z = C/S channels of 64 pixels per warpgroup)
//   Consumers         consumer warpgroups, 64 pixels each: the tile is 64·Consumers pixels
//   Stages            slots of the weight ring (U and V pieces in the order the consumers read them)
//   XBuffers          halo buffers (2: the next tile's rows land during this one's conv)
//   UPieces, VPieces  pieces a chunk's U slice and V slice arrive in (more pieces: smaller slots)
template <int C, int Cluster, int Consumers, int Stages, int XBuffers, int UPieces, int VPieces>
struct Layout : PairGeometry<Layout<C, Cluster, Consumers, Stages, XBuffers, UPieces, VPieces>> {
  static constexpr int kC = C, kCluster = Cluster, kOwn = C / Cluster;
  static constexpr int kConsumers = Consumers, kTileRows = kWgmmaM * Consumers;
  static constexpr int kThreads = (1 + Consumers) * gpu::hopper::kWarpgroupThreads;
  static constexpr int kConsumerWarps = 4 * Consumers;
  static constexpr int kChunk = kSliceCols * Cluster;  // hidden channels per loop step, over the cluster
  static constexpr int kStages = Stages, kXBuffers = XBuffers, kUPieces = UPieces, kVPieces = VPieces;
  static constexpr int kURows = C / UPieces;           // expand K rows per U piece
  static constexpr int kVRows = kChunk / VPieces;      // project K rows per V piece
  static constexpr int kSourcesPerVPiece = Cluster / VPieces;  // slices of H one V piece serves
  using TTile = gpu::Sw128Tile<kTileRows, C>;          // [pixel][c]           A of the expand, K-major
  using UTile = gpu::Sw128Tile<kURows, kSliceCols>;    // [c][h]               B of the expand, MN-major
  using VTile = gpu::Sw128Tile<kVRows, kOwn>;          // [h][c_out of k]      B of the project, MN-major
  static constexpr int kSlotBytes = UTile::kBytes > VTile::kBytes ? UTile::kBytes : VTile::kBytes;
  static constexpr int kGroups = kOwn / kGroupWidth;   // conv groups of this CTA
  static constexpr int kPairs = kGroups / 2;           // 16-channel pieces of T it writes
  static constexpr int kCSteps = C / kWgmmaK;          // k16 steps of the expand
  static constexpr int kPieceSteps = kURows / kWgmmaK; // of them per U piece
  static constexpr int kWeightWords = kOwn * 9 * kGroupWidth / 2;
  static constexpr int kSRegs = kSliceCols / 2;        // 32 fp32 expand accumulators per consumer thread
  static constexpr int kZRegs = kOwn / 2;              // fp32 project accumulators (this CTA's channels)
  static constexpr int kHBufferBytes = Consumers * (Cluster - 1) * gpu::hopper::kWarpgroupThreads * kHWords * 4;
  // A consumer warpgroup holding more registers than the launch cap needs setmaxnreg
  // (two consumers: 232, taken from the producer); one consumer has 255 at launch.
  static constexpr int kRegisterCap = gpu::hopper::launch_register_cap(1 + Consumers);
  static constexpr int kConsumerRegs = Consumers == 1 ? 256 : 232;

  // barrier region: x ring, weight ring, then T full[Consumers], H full[Consumers], H free[Consumers]
  static constexpr uint32_t kXPipeBase = 0;
  static constexpr uint32_t kWPipeBase = kXPipeBase + gpu::hopper::kPipelineBarrierBytes<XBuffers>;
  static constexpr uint32_t kTFullBase = kWPipeBase + gpu::hopper::kPipelineBarrierBytes<Stages>;
  static constexpr uint32_t kHFullBase = kTFullBase + Consumers * gpu::hopper::kMbarrierBytes;
  static constexpr uint32_t kHFreeBase = kHFullBase + Consumers * gpu::hopper::kMbarrierBytes;
  static constexpr uint32_t kBarrierBytes = kHFreeBase + Consumers * gpu::hopper::kMbarrierBytes;

  static constexpr uint32_t kTBase = convfirst_wgmma::kBarrierRegion;
  static constexpr uint32_t kRingBase = kTBase + TTile::kBytes;
  static constexpr uint32_t kHBase = kRingBase + uint32_t(Stages) * kSlotBytes;
  static constexpr uint32_t kWeightsBase = kHBase + kHBufferBytes;
  static constexpr uint32_t kXBase = kWeightsBase + round_up_1024(uint32_t(kWeightWords) * 4);

  static_assert(Cluster == 2 || Cluster == 4, "a pair, or four CTAs (the portable cluster sizes that divide C)");
  static_assert(Consumers == 1 || Consumers == 2, "one or two consumer warpgroups of 64 pixels");
  static_assert(kOwn % kPanelCols == 0, "each CTA's channels are whole 64-channel panels");
  static_assert(kOwn <= 128, "Z = 64 pixels x C/S fp32 per warpgroup: C/(2S) registers per thread, at most 64");
  static_assert(C % UPieces == 0 && kURows % 8 == 0 && kURows <= gpu::hopper::kTmaMaxBoxDim,
                "a U piece is one TMA box of at most 256 rows");
  static_assert(Cluster % VPieces == 0 && kVRows <= gpu::hopper::kTmaMaxBoxDim,
                "a V piece holds the rows of whole slices, boxes of at most 256 rows");
  static_assert(kGroups % 2 == 0, "two conv groups (n8 tiles) make one 16-channel piece of T");
  static_assert(UTile::kBytes % 1024 == 0 && VTile::kBytes % 1024 == 0 && TTile::kBytes % 1024 == 0 &&
                    kHBufferBytes % 1024 == 0,
                "every region starts on a swizzle atom");
  static_assert(kBarrierBytes <= uint32_t(convfirst_wgmma::kBarrierRegion), "all barriers fit the barrier region");
  // The launch's cap (168 registers at 384 threads, 255 at 256), a conservative bound where
  // the consumers raise theirs with setmaxnreg (ptxas allocates their code against 232): Z,
  // S, the fp32 bias pairs, our H and the peers' H must fit with room for addresses.
  static constexpr int kLoopRegs = kZRegs + kSRegs + kSRegs / 2 + Cluster * kHWords;
  static_assert(kLoopRegs <= kRegisterCap - 24, "the loop's live registers fit the cap with room for addresses");
  static_assert(gpu::hopper::register_budget_fits(kProducerRegs, kConsumerRegs, Consumers), "setmaxnreg budget");

  // The project's i-th slice of a chunk (i = 0: this CTA's own, then the peers in rank
  // order after it) comes from rank (rank + i) % S, its H from slot i − 1 of H in.
  // Its V rows are in V piece i / kSourcesPerVPiece, starting at project step
  // v_first_step(rank, i) of that piece.
  CONVLAB_HOST_DEVICE static constexpr int source_of(int rank, int i) { return (rank + i) % Cluster; }
  CONVLAB_HOST_DEVICE static constexpr int v_first_step(int rank, int i) {
    return (VPieces == 1 ? source_of(rank, i) : 0) * kHSteps;
  }
  // First chunk row of V piece q (in the order it is loaded and read) for CTA `rank`.
  CONVLAB_HOST_DEVICE static constexpr int v_piece_row(int rank, int q) {
    return VPieces == 1 ? 0 : source_of(rank, q * kSourcesPerVPiece) * kSliceCols;
  }


  // Byte offset, inside the H exchange buffer, of the 16-byte piece `quad` of
  // thread `thread` of consumer warpgroup `consumer`, sent by the peer that
  // fills slot `source_slot` (the sender of rank j writes slot (j − k − 1) mod S
  // of CTA k). Thread-minor, so that the eight threads of one quarter-warp store
  // one 128-byte line (no bank conflict); [thread][word] would put lanes 64
  // bytes apart (four-way conflicts).
  CONVLAB_HOST_DEVICE static constexpr uint32_t h_exchange_offset(int consumer, int source_slot, int thread, int quad) {
    return uint32_t((((consumer * (Cluster - 1) + source_slot) * kHQuads + quad) * gpu::hopper::kWarpgroupThreads +
                     thread) *
                    16);
  }
  CONVLAB_HOST_DEVICE static constexpr int slot_in(int receiver, int sender) {
    return (sender - receiver - 1 + Cluster) % Cluster;
  }
};

// C = 128 and 256: a pair, 128-pixel tiles. At C = 128 one U and one V piece per chunk (the
// ring alternates them, so 2s slots behave as s U slots and s V slots). At C = 256 a chunk's
// U and V slices are 32 KB each and the ring holds one chunk (what is left of shared memory
// at W = 14): as two pieces each in four 16 KB slots, a piece's slot goes back once half the
// expand (or the own slice's project) has read it, so the next chunk's first pieces load
// sooner than whole 32 KB slices would (lesson 10's NOTES.md has the measurement).
using ClusterLayout128 = Layout<128, 2, 2, 4, 2, 1, 1>;
using ClusterLayout256 = Layout<256, 2, 2, 4, 1, 2, 2>;
// C = 512: four CTAs of 128 channels, 64-pixel tiles (T is 64 KB; 128 pixels would be
// 128 KB), U in four pieces of 128 rows and V in one piece per slice, 16 KB each.
using ClusterLayout512 = Layout<512, 4, 1, 5, 1, 4, 4>;

// ---- the pair split by hidden columns (gpu/convfirst/10g_fused_cluster_split_hidden.cu) ----
//
// The same pair, tile, T, conv and halo as Layout<C, 2, 2, ...>, but the pair splits the
// FFN by hidden columns instead of output channels: CTA k expands and projects only its 64
// columns of each 128-column chunk, into a Z of ALL C channels (a partial sum over half the
// hidden columns). Nothing crosses the pair inside the chunk loop; once per tile each CTA
// sends the half of Z that the peer stores (C/4 fp32 per thread) into the peer's T rows of
// the same warpgroup, which are dead by then, and adds the half it receives to its own.
//
//   [ barriers | T [128 px][C] (Z exchange at the tile's end) | weight ring | conv weights | x buffers | biases ]
//
//   ring    Stages slots, per chunk UPieces pieces of U^r[:, 64k + (0..63)] ([C/UPieces][64])
//           then VPieces column pieces of V_r[64k + (0..63), all C] ([64][C/VPieces]), the
//           columns rotated so that this CTA's own channels come first: Z's registers
//           0 .. C/4 − 1 are always the channels this CTA stores. Column pieces rather than
//           row pieces: a TMA box is at most 64 columns wide (128-byte swizzle) and costs
//           about the same whatever its height, so 64-row boxes are the fewest.
//
// Threads: two warpgroups (pixels 0-63 and 64-127) and no producer warpgroup: 256 threads,
// so the launch's cap is 255 registers a thread (Z of all C channels is C/2 registers: 128
// at C = 256; the choice was made believing a producer warpgroup would cap every warp at 168,
// which setmaxnreg does not: docs/gpu-method.md). Each ring slot and halo buffer
// has a release counter: the consumer warp whose release is the slot's last (of eight)
// issues the copy of the item that comes into it next.
template <int C, int Stages, int XBuffers, int UPieces, int VPieces>
struct SplitLayout : PairGeometry<SplitLayout<C, Stages, XBuffers, UPieces, VPieces>> {
  static constexpr int kC = C, kCluster = 2, kOwn = C / 2;
  static constexpr int kConsumers = 2, kTileRows = kWgmmaM * kConsumers;
  static constexpr int kThreads = kConsumers * gpu::hopper::kWarpgroupThreads;
  static constexpr int kConsumerWarps = 4 * kConsumers;
  static constexpr int kChunk = kSliceCols * kCluster;
  static constexpr int kStages = Stages, kXBuffers = XBuffers, kUPieces = UPieces, kVPieces = VPieces;
  static constexpr int kURows = C / UPieces;
  static constexpr int kVRows = kSliceCols;      // a V piece: all 64 rows of our slice
  static constexpr int kVCols = C / VPieces;      // .. and C/VPieces of the (rotated) channels
  using TTile = gpu::Sw128Tile<kTileRows, C>;
  using UTile = gpu::Sw128Tile<kURows, kSliceCols>;
  using VTile = gpu::Sw128Tile<kVRows, kVCols>;         // [h][c_out piece], MN-major B of the project
  static constexpr int kSlotBytes = UTile::kBytes > VTile::kBytes ? UTile::kBytes : VTile::kBytes;
  static constexpr int kGroups = kOwn / kGroupWidth;
  static constexpr int kPairs = kGroups / 2;
  static constexpr int kCSteps = C / kWgmmaK;
  static constexpr int kPieceSteps = kURows / kWgmmaK;
  static constexpr int kVSteps = kVRows / kWgmmaK;  // project k16 steps per V piece (4)
  static constexpr int kWeightWords = kOwn * 9 * kGroupWidth / 2;
  static constexpr int kSRegs = kSliceCols / 2;
  static constexpr int kZRegs = C / 2;       // Z of 64 pixels x C channels per warpgroup
  static constexpr int kZOwnRegs = C / 4;    // registers 0 .. C/4 − 1: this CTA's channels
  static constexpr int kZQuads = kZOwnRegs / 4;  // 16-byte pieces of the half that is sent
  static constexpr int kPieces = UPieces + VPieces;  // ring items per chunk
  static constexpr int kRegisterCap = gpu::hopper::launch_register_cap(kConsumers);

  // barriers: x ring, weight ring, then T full, Z full, Z space, T free (one each per
  // warpgroup), then the release counters (4 bytes each: the weight ring's, the halo buffers')
  static constexpr uint32_t kXPipeBase = 0;
  static constexpr uint32_t kWPipeBase = kXPipeBase + gpu::hopper::kPipelineBarrierBytes<XBuffers>;
  static constexpr uint32_t kTFullBase = kWPipeBase + gpu::hopper::kPipelineBarrierBytes<Stages>;
  static constexpr uint32_t kZFullBase = kTFullBase + kConsumers * gpu::hopper::kMbarrierBytes;
  static constexpr uint32_t kZSpaceBase = kZFullBase + kConsumers * gpu::hopper::kMbarrierBytes;
  static constexpr uint32_t kTFreeBase = kZSpaceBase + kConsumers * gpu::hopper::kMbarrierBytes;
  static constexpr uint32_t kCountBase = kTFreeBase + kConsumers * gpu::hopper::kMbarrierBytes;
  static constexpr uint32_t kBarrierBytes = kCountBase + uint32_t(Stages + XBuffers) * 4;

  static constexpr uint32_t kTBase = convfirst_wgmma::kBarrierRegion;
  static constexpr uint32_t kRingBase = kTBase + TTile::kBytes;
  static constexpr uint32_t kWeightsBase = kRingBase + uint32_t(Stages) * kSlotBytes;
  static constexpr uint32_t kXBase = kWeightsBase + round_up_1024(uint32_t(kWeightWords) * 4);

  static_assert(C == 128 || C == 256, "Z of all C channels is C/2 registers a thread: at most 128");
  static_assert(C % UPieces == 0 && kURows % 8 == 0 && kURows <= gpu::hopper::kTmaMaxBoxDim, "U pieces: TMA boxes");
  static_assert(C % VPieces == 0 && kVCols % kPanelCols == 0 && (kVCols == 64 || kVCols == 128 || kVCols == 256),
                "a V piece is whole 64-column boxes and one wgmma's N");
  static_assert(UTile::kBytes % 1024 == 0 && VTile::kBytes % 1024 == 0 && TTile::kBytes % 1024 == 0,
                "every region starts on a swizzle atom");
  static_assert(kBarrierBytes <= uint32_t(convfirst_wgmma::kBarrierRegion), "all barriers fit the barrier region");
  // The Z half one warpgroup sends (64 px x C/2 fp32) fills exactly its 64 rows of T (64 px x C f16).
  static_assert(kWgmmaM * kOwn * 4 == kWgmmaM * C * 2, "the sent half of Z fills the warpgroup's T rows");
  // Live in the chunk loop: Z, S, the fp32 bias pairs and H, with room for addresses.
  static constexpr int kLoopRegs = kZRegs + kSRegs + kSRegs / 2 + kHWords;
  static_assert(kLoopRegs <= kRegisterCap - 24, "the loop's live registers fit the cap with room for addresses");

  // Output channel of column panel p of V piece q in CTA `rank`'s slots: its own half first.
  CONVLAB_HOST_DEVICE static constexpr int v_panel_col(int rank, int q, int p) {
    return (rank * kOwn + q * kVCols + p * kPanelCols) % C;
  }
  // Byte offset from T's base of piece `quad` (Z registers C/4 + 4·quad .. + 3 of the
  // sender, 0 + 4·quad .. of the receiver) of thread `thread` of warpgroup `consumer`:
  // 2 KB blocks thread-minor (a quarter-warp stores one 128-byte line), four blocks in each
  // column panel's 64 rows of this warpgroup (8 KB there).
  CONVLAB_HOST_DEVICE static constexpr uint32_t z_exchange_offset(int consumer, int thread, int quad) {
    return uint32_t((quad / 4) * TTile::kPanelBytes + consumer * kWgmmaM * TTile::kRowBytes +
                    (quad % 4) * gpu::hopper::kWarpgroupThreads * 16 + thread * 16);
  }
};

// C = 128: one U piece and one V piece a chunk, two halo buffers; C = 256: U in two row
// pieces and V in two column pieces, 16 KB each, through five slots (the H exchange buffer of
// Layout is not needed, and its 16 KB hold the fifth slot): six boxes a chunk, as 10e.
using SplitLayout128 = SplitLayout<128, 4, 2, 1, 1>;
using SplitLayout256 = SplitLayout<256, 5, 1, 2, 2>;

// The fp32 biases of one CTA (gpu::stage_biases with slice = 64, first = 64·rank, c0 = C/S·rank).
template <class L> constexpr std::size_t cluster_bias_floats(int hidden) {
  return convfirst_wgmma::staged_bias_floats(hidden, L::kChunk, kSliceCols, L::kOwn);
}
template <class L> CONVLAB_HOST_DEVICE constexpr uint32_t cluster_bias_offset(const convfirst_wgmma::XStaging& s) {
  return L::kXBase + uint32_t(L::kXBuffers) * s.buffer_bytes;
}
template <class L> std::size_t cluster_shared_bytes(const convfirst_wgmma::XStaging& s, int hidden) {
  return gpu::hopper::kTmaSwizzleAtomBytes + cluster_bias_offset<L>(s) + 4 * cluster_bias_floats<L>(hidden);
}

// The halo staging of one CTA's channels for a tile of L's size.
template <class L> convfirst_wgmma::XStaging cluster_staging(int W, int64_t image_rows) {
  return convfirst_wgmma::x_staging(L::kOwn, W, image_rows, L::kTileRows);
}

}  // namespace convlab::convfirst_cluster
