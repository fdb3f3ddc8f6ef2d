// gpu/lib/hopper/convfirst_cluster_layout.hpp — the tunables, supported set and
// shared-memory geometry of lesson 10's large-C ConvFirst block over a
// two-CTA cluster (gpu/convfirst/10e_fused_cluster.cu), in plain C++ so that
// tests/hopper_lib_test.cpp checks on the host that
//   * the conv's fragments written into T cover the CTA's channel half of
//     every pixel once, and the expand's descriptors read T where they land,
//   * the U and V boxes land where the wgmma descriptors read them,
//   * the H exchange buffer gives every (warpgroup, thread, word) its own
//     16-byte-aligned place, eight consecutive threads one 128-byte line.
//
// The pair: CTA k (rank 0 or 1 of the cluster) owns channels [kC/2, (k+1)C/2)
// of T and of y, and hidden columns [64k, 64k + 64) of every 128-wide chunk.
//
// Shared memory of one CTA (every region 1024-aligned):
//
//   [ barriers | T [128 px][C] | U slots | V slots | H in | conv weights [C/2][9][8] | x buffers ]
//
//   T       the whole tile's conv output, K-major A of the expand (128-byte
//           swizzle, C/64 panels); half written by this CTA, half by the peer
//   U slot  U^r[:, 64k + (0..63) of the chunk]          [C][64]     MN-major B of the expand
//   V slot  V_r[0..127 of the chunk, channels of k]     [128][C/2]  MN-major B of the project
//   H in    the peer's H half of the current chunk, [warpgroup][quad][thread][4 words]
//   x       the halo rows of this CTA's channel half (XStaging of C/2 channels)
#pragma once

#include <cstdint>

#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/hopper/convfirst_wgmma_layout.hpp"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"

namespace convlab::convfirst_cluster {

using convfirst_wgmma::kBlockRows;  // 128 pixels per tile, shared by the pair
using convfirst_wgmma::kConsumers;
using convfirst_wgmma::kConsumerWarps;
using convfirst_wgmma::kConvSteps;
using convfirst_wgmma::kGroupWidth;
using convfirst_wgmma::kMaxShared;
using convfirst_wgmma::kPanelCols;
using convfirst_wgmma::kThreads;
using convfirst_wgmma::kWgmmaK;
using convfirst_wgmma::kWgmmaM;
using convfirst_wgmma::round_up_1024;

constexpr int kClusterSize = 2;   // CTAs per cluster: the channel split
constexpr int kChunk = 128;       // hidden channels per loop step, over the pair
constexpr int kHalfChunk = kChunk / kClusterSize;  // this CTA's columns of a chunk: N of its expand
constexpr int kHSteps = kHalfChunk / kWgmmaK;      // project k16 steps per half (4)
constexpr int kHWords = 4 * kHSteps;               // packed H words per thread per half (16)
constexpr int kHQuads = kHWords / 4;               // 16-byte pieces of them
constexpr int kHBufferBytes = kConsumers * gpu::hopper::kWarpgroupThreads * kHWords * 4;  // 16 KB
constexpr int kProducerRegs = 40, kConsumerRegs = 232;

// ---- tunables, one configuration per C (= C_out) ----------------------------------------
//
//   UStages, VStages  slots of the U ring and of the V ring (separate rings: a U slot is
//                     free after the expand, a V slot only after the project)
//   XBuffers          halo buffers (2: the next tile's rows land during this one)
template <int C, int UStages, int VStages, int XBuffers> struct Layout {
  static constexpr int kC = C, kHalf = C / kClusterSize;
  static constexpr int kUStages = UStages, kVStages = VStages, kXBuffers = XBuffers;
  using TTile = gpu::Sw128Tile<kBlockRows, C>;  // [pixel][c]         A of the expand, K-major
  using UTile = gpu::Sw128Tile<C, kHalfChunk>;  // [c][h]             B of the expand, MN-major
  using VTile = gpu::Sw128Tile<kChunk, kHalf>;  // [h][c_out of k]    B of the project, MN-major
  static constexpr int kGroups = kHalf / kGroupWidth;        // conv groups of this CTA
  static constexpr int kPairs = kGroups / 2;                  // 16-channel pieces of T it writes
  static constexpr int kCSteps = C / kWgmmaK;                 // k16 steps of the expand
  static constexpr int kWeightWords = kHalf * 9 * kGroupWidth / 2;
  static constexpr int kSRegs = kHalfChunk / 2;  // 32 fp32 expand accumulators per consumer thread
  static constexpr int kZRegs = kHalf / 2;       // fp32 project accumulators (this CTA's channels)

  // barrier region: x ring, U ring, V ring, then T full[2], H full[2], H free[2]
  static constexpr uint32_t kXPipeBase = 0;
  static constexpr uint32_t kUPipeBase = kXPipeBase + gpu::hopper::kPipelineBarrierBytes<XBuffers>;
  static constexpr uint32_t kVPipeBase = kUPipeBase + gpu::hopper::kPipelineBarrierBytes<UStages>;
  static constexpr uint32_t kTFullBase = kVPipeBase + gpu::hopper::kPipelineBarrierBytes<VStages>;
  static constexpr uint32_t kHFullBase = kTFullBase + kConsumers * gpu::hopper::kMbarrierBytes;
  static constexpr uint32_t kHFreeBase = kHFullBase + kConsumers * gpu::hopper::kMbarrierBytes;
  static constexpr uint32_t kBarrierBytes = kHFreeBase + kConsumers * gpu::hopper::kMbarrierBytes;

  static constexpr uint32_t kTBase = convfirst_wgmma::kBarrierRegion;
  static constexpr uint32_t kUBase = kTBase + TTile::kBytes;
  static constexpr uint32_t kVBase = kUBase + uint32_t(UStages) * UTile::kBytes;
  static constexpr uint32_t kHBase = kVBase + uint32_t(VStages) * VTile::kBytes;
  static constexpr uint32_t kWeightsBase = kHBase + kHBufferBytes;
  static constexpr uint32_t kXBase = kWeightsBase + round_up_1024(uint32_t(kWeightWords) * 4);

  static_assert(kHalf % kPanelCols == 0, "each CTA's channels are whole 64-channel panels (C = 128 or 256)");
  static_assert(kHalf <= 128, "Z = 64 pixels x C/2 fp32 per warpgroup: C/4 registers per thread, at most 64");
  static_assert(C <= gpu::hopper::kTmaMaxBoxDim, "the U box is C rows tall: TMA boxes are at most 256");
  static_assert(kGroups % 2 == 0, "two conv groups (n8 tiles) make one 16-channel piece of T");
  static_assert(UTile::kBytes % 1024 == 0 && VTile::kBytes % 1024 == 0 && TTile::kBytes % 1024 == 0 &&
                    kHBufferBytes % 1024 == 0,
                "every region starts on a swizzle atom");
  static_assert(kBarrierBytes <= uint32_t(convfirst_wgmma::kBarrierRegion), "all barriers fit the barrier region");
  // ptxas allocates the whole kernel within the launch's cap (168 registers at 384 threads):
  // Z, S, the packed bias pairs and both halves of packed H must fit with room for addresses.
  static constexpr int kLoopRegs = kZRegs + kSRegs + kSRegs / 4 + 2 * kHWords;
  static_assert(kLoopRegs <= 168 - 24, "the loop's live registers fit 168 with room for addresses");
  static_assert(gpu::hopper::register_budget_fits(kProducerRegs, kConsumerRegs, kConsumers), "setmaxnreg budget");

  CONVLAB_HOST_DEVICE static constexpr uint32_t u_slot(uint32_t base, int s) { return base + kUBase + s * UTile::kBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t v_slot(uint32_t base, int s) { return base + kVBase + s * VTile::kBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t v_box(uint32_t slot, int p) { return slot + p * VTile::kPanelBytes; }
  // Expand step ks (channels 16ks ..) of consumer warpgroup `consumer`'s 64 pixels.
  CONVLAB_HOST_DEVICE static constexpr uint64_t t_descriptor(uint32_t t_base, int consumer, int ks) {
    return gpu::k_major_descriptor<TTile>(t_base, consumer * kWgmmaM, ks * kWgmmaK);
  }
  CONVLAB_HOST_DEVICE static constexpr uint64_t u_descriptor(uint32_t slot, int ks) {
    return gpu::mn_major_descriptor<UTile>(slot, ks * kWgmmaK);
  }
  // Project step kk (rows 16kk .. of the chunk's 128): the owner's half is kk in [4·owner, 4·owner + 4).
  CONVLAB_HOST_DEVICE static constexpr uint64_t v_descriptor(uint32_t slot, int kk) {
    return gpu::mn_major_descriptor<VTile>(slot, kk * kWgmmaK);
  }

  // Where the conv's rounded accumulators go. Thread `thread` (0..127) of
  // consumer warpgroup `consumer` in CTA `rank` holds, for 16-channel piece
  // `pair` (groups 2·pair, 2·pair + 1 of the CTA), word `reg` of mma.sync's
  // m16n8 accumulators of both groups: rows g, g + 8 of its warp's 16 pixels,
  // channels 2tq, 2tq + 1 of the group (reg 0, 1 the lower group, 2, 3 the upper).
  CONVLAB_HOST_DEVICE static constexpr gpu::MatrixCoord t_fragment_coord(int consumer, int thread, int rank, int pair,
                                                                         int reg) {
    const int warp = thread / 32, lane = thread % 32, g = lane / 4, tq = lane % 4;
    return {consumer * kWgmmaM + 16 * warp + g + 8 * (reg & 1),
            rank * kHalf + 16 * pair + 8 * (reg >> 1) + 2 * tq};
  }
};

using ClusterLayout128 = Layout<128, 2, 2, 2>;
using ClusterLayout256 = Layout<256, 1, 1, 1>;

template <class L> std::size_t cluster_shared_bytes(const convfirst_wgmma::XStaging& s) {
  return gpu::hopper::kTmaSwizzleAtomBytes + L::kXBase + std::size_t(L::kXBuffers) * s.buffer_bytes;
}

// Byte offset, inside the H exchange buffer, of the 16-byte piece `quad` of
// thread `thread` of consumer warpgroup `consumer`. Thread-minor, so that the
// eight threads of one quarter-warp store one 128-byte line (no bank
// conflict); [thread][word] would put lanes 64 bytes apart (four-way conflicts).
CONVLAB_HOST_DEVICE constexpr uint32_t h_exchange_offset(int consumer, int thread, int quad) {
  return uint32_t(((consumer * kHQuads + quad) * gpu::hopper::kWarpgroupThreads + thread) * 16);
}

}  // namespace convlab::convfirst_cluster
