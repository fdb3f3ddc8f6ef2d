// gpu/lib/hopper/ffn_wgmma_layout.hpp — tunables and shared-memory geometry of
// lesson 08's wgmma FFN (gpu/ffn/08d_fused_wgmma.cu), in plain C++ so that
// tests/hopper_lib_test.cpp can check on the host that every TMA box lands
// where the wgmma descriptors read it.
#pragma once

#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"

namespace convlab::ffn_wgmma {

constexpr int kBlockRows = 128;  // rows of X per tile: two consumer warpgroups of 64
constexpr int kWgmmaM = 64, kWgmmaK = 16;
constexpr int kConsumers = kBlockRows / kWgmmaM;
constexpr int kConsumerWarps = 4 * kConsumers;
constexpr int kPanelCols = 64;  // one 128-byte swizzle row of f16/bf16: every TMA box is 64 wide
constexpr int kProducerRegs = 40, kConsumerRegs = 232;

// ---- tunables, one configuration per channel count C (= C_out) -------------------------
//
//   Chunk     hidden channels per loop step: N of the expand wgmma, K of the project wgmma
//   XBuffers  X tiles in flight (2: the next tile's X loads during this one)
//   Stages    U/V chunk slots in the ring
template <int C, int Chunk, int XBuffers, int Stages> struct Layout {
  static constexpr int kC = C, kChunk = Chunk, kXBuffers = XBuffers, kStages = Stages;
  using XTile = gpu::Sw128Tile<kBlockRows, C>;  // [row][c]      A of the expand product, K-major
  using UTile = gpu::Sw128Tile<C, Chunk>;       // [c][h]        B of the expand product, MN-major
  using VTile = gpu::Sw128Tile<Chunk, C>;       // [h][c_out]    B of the project product, MN-major
  static constexpr int kXBytes = XTile::kBytes;
  static constexpr int kStageBytes = UTile::kBytes + VTile::kBytes;
  static constexpr int kXBase = 0;                               // X slots, then the U|V slots
  static constexpr int kUvBase = kXBuffers * kXBytes;
  static constexpr int kBarrierBase = kUvBase + kStages * kStageBytes;
  static constexpr int kSharedBytes = gpu::hopper::kTmaSwizzleAtomBytes + kBarrierBase +
                                      gpu::hopper::kPipelineBarrierBytes<kXBuffers> +
                                      gpu::hopper::kPipelineBarrierBytes<kStages>;
  static constexpr int kSRegs = Chunk / 2;   // fp32 expand accumulators per consumer thread
  static constexpr int kZRegs = C / 2;       // fp32 project accumulators
  static constexpr int kHSteps = Chunk / kWgmmaK;  // k16 steps of the project product = A fragments of H
  static constexpr int kCSteps = C / kWgmmaK;      // k16 steps of the expand product

  static_assert(C == 64 || C == 128 || C == 256, "C = C_out: the project wgmma is m64n{C}");
  static_assert(Chunk == 64 || Chunk == 128, "the expand wgmma is m64n{Chunk}, an SS form instantiated for 64, 128");
  static_assert(C <= gpu::hopper::kTmaMaxBoxDim && Chunk <= gpu::hopper::kTmaMaxBoxDim,
                "the U box is C rows tall and the V box Chunk rows: TMA boxes are at most 256");
  static_assert(kXBytes % 1024 == 0 && kStageBytes % 1024 == 0 && UTile::kBytes % 1024 == 0,
                "every box starts on a swizzle atom");
  static_assert(kSharedBytes <= 227 * 1024, "sm_90: at most 227 KB of shared memory per block");
  static_assert(kSRegs + kZRegs + 2 * kHSteps * 2 <= kConsumerRegs - 32,
                "S, Z and the packed H fit the consumers' registers with room for addresses");
  static_assert(gpu::hopper::register_budget_fits(kProducerRegs, kConsumerRegs, kConsumers),
                "setmaxnreg budget");

  // Slot addresses (relative to the 1024-aligned start) and the boxes' destinations.
  CONVLAB_HOST_DEVICE static constexpr uint32_t x_slot(uint32_t base, int s) { return base + kXBase + s * kXBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t u_slot(uint32_t base, int s) {
    return base + kUvBase + s * kStageBytes;
  }
  CONVLAB_HOST_DEVICE static constexpr uint32_t v_slot(uint32_t base, int s) {
    return u_slot(base, s) + UTile::kBytes;
  }
  // X box p: rows r0 .., columns 64p ..; U box p: all C rows, hidden columns h0 + 64p ..;
  // V box p: hidden rows h0 .. h0 + Chunk, columns 64p .. — each one panel of its tile.
  CONVLAB_HOST_DEVICE static constexpr uint32_t x_box(uint32_t slot, int p) { return slot + p * XTile::kPanelBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t u_box(uint32_t slot, int p) { return slot + p * UTile::kPanelBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t v_box(uint32_t slot, int p) { return slot + p * VTile::kPanelBytes; }

  // Descriptors: expand step ks (c = 16ks ..) of consumer `consumer`'s 64 rows; project step kk (h = 16kk ..).
  CONVLAB_HOST_DEVICE static constexpr uint64_t x_descriptor(uint32_t slot, int consumer, int ks) {
    return gpu::k_major_descriptor<XTile>(slot, consumer * kWgmmaM, ks * kWgmmaK);
  }
  CONVLAB_HOST_DEVICE static constexpr uint64_t u_descriptor(uint32_t slot, int ks) {
    return gpu::mn_major_descriptor<UTile>(slot, ks * kWgmmaK);
  }
  CONVLAB_HOST_DEVICE static constexpr uint64_t v_descriptor(uint32_t slot, int kk) {
    return gpu::mn_major_descriptor<VTile>(slot, kk * kWgmmaK);
  }
};

using Layout64 = Layout<64, 128, 2, 4>;
using Layout128 = Layout<128, 128, 2, 2>;
using Layout256 = Layout<256, 64, 1, 2>;

// ---- 08e_fused_wgmma_pingpong: U and V resident, a 64-row tile per consumer warpgroup --------
//
// Every chunk of U and V is loaded once per CTA and stays; each consumer warpgroup owns its
// X tiles (64 rows) and their ring of XBuffers slots, so the two consumers never wait for
// each other's data, only for their turn at the tensor cores (the kernel's named barriers).
// The biases a (zero-padded to whole chunks) and b are copied once, as fp32.
//
//   [ barriers: weights, X ring of consumer 0, of consumer 1 | X slots c0 s0 .. c1 sX−1 |
//     U^0 V_0 | U^1 V_1 | ... (chunks of the problem) | a: chunks·Chunk fp32 | b: C fp32 ]
//   every tile a Sw128Tile, 1024-aligned
//
// kStages is the chunk count the resident region can hold (the hidden loop's slot index is the
// chunk index); the launcher allocates only the problem's chunks (shared_bytes(chunks)).
template <int C, int Chunk, int XBuffers> struct PingPongLayout {
  static constexpr int kC = C, kChunk = Chunk, kXBuffers = XBuffers;
  using XTile = gpu::Sw128Tile<kWgmmaM, C>;     // [row][c]      one consumer's 64 rows
  using UTile = gpu::Sw128Tile<C, Chunk>;       // [c][h]
  using VTile = gpu::Sw128Tile<Chunk, C>;       // [h][c_out]
  static constexpr int kXBytes = XTile::kBytes;
  static constexpr int kStageBytes = UTile::kBytes + VTile::kBytes;
  static constexpr int kBarrierRegion = 1024;  // the barriers, before the first swizzled tile
  static constexpr int kWeightsBarrier = 0;
  static constexpr int kXBarriers = gpu::hopper::kMbarrierBytes;  // consumer c's ring at + c · ring bytes
  static constexpr int kXBase = kBarrierRegion;
  static constexpr int kUvBase = kXBase + kConsumers * kXBuffers * kXBytes;
  static constexpr int kMaxShared = 227 * 1024;
  // Per resident chunk: its U and V, and its slice of a in fp32.
  static constexpr int kStages = (kMaxShared - gpu::hopper::kTmaSwizzleAtomBytes - kUvBase - 4 * C) /
                                 (kStageBytes + 4 * Chunk);
  static constexpr int kSRegs = Chunk / 2, kZRegs = C / 2, kHSteps = Chunk / kWgmmaK, kCSteps = C / kWgmmaK;

  static_assert(kC == 64, "U and V resident: C = 64 (at C = 128 only hidden <= 256 would fit)");
  static_assert(Chunk == 64 || Chunk == 128, "the expand wgmma is m64n{Chunk}");
  static_assert(kStages >= 1, "one chunk of U and V fits beside the X slots");
  static_assert(kXBarriers + kConsumers * gpu::hopper::kPipelineBarrierBytes<kXBuffers> <= kBarrierRegion,
                "the barriers fit their region");
  static_assert(kSRegs + kZRegs + 2 * kHSteps * 2 <= kConsumerRegs - 32, "S, Z and H fit the consumers' registers");

  // The fp32 biases after `chunks` resident chunks: a [chunks·Chunk], then b [C].
  CONVLAB_HOST_DEVICE static constexpr int a_offset(int chunks) { return kUvBase + chunks * kStageBytes; }
  CONVLAB_HOST_DEVICE static constexpr int b_offset(int chunks) { return a_offset(chunks) + 4 * chunks * Chunk; }
  // Bytes of dynamic shared memory for `chunks` resident chunks (0 if they do not fit).
  CONVLAB_HOST_DEVICE static constexpr int shared_bytes(int chunks) {
    return chunks < 1 || chunks > kStages ? 0 : gpu::hopper::kTmaSwizzleAtomBytes + b_offset(chunks) + 4 * C;
  }
  CONVLAB_HOST_DEVICE static constexpr uint32_t x_ring(uint32_t base, int consumer) {
    return base + kXBarriers + consumer * gpu::hopper::kPipelineBarrierBytes<kXBuffers>;
  }
  CONVLAB_HOST_DEVICE static constexpr uint32_t x_slot(uint32_t base, int consumer, int s) {
    return base + kXBase + (consumer * kXBuffers + s) * kXBytes;
  }
  CONVLAB_HOST_DEVICE static constexpr uint32_t u_slot(uint32_t base, int chunk) {
    return base + kUvBase + chunk * kStageBytes;
  }
  CONVLAB_HOST_DEVICE static constexpr uint32_t v_slot(uint32_t base, int chunk) {
    return u_slot(base, chunk) + UTile::kBytes;
  }
  CONVLAB_HOST_DEVICE static constexpr uint32_t x_box(uint32_t slot, int p) { return slot + p * XTile::kPanelBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t u_box(uint32_t slot, int p) { return slot + p * UTile::kPanelBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t v_box(uint32_t slot, int p) { return slot + p * VTile::kPanelBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint64_t x_descriptor(uint32_t slot, int ks) {
    return gpu::k_major_descriptor<XTile>(slot, 0, ks * kWgmmaK);
  }
  CONVLAB_HOST_DEVICE static constexpr uint64_t u_descriptor(uint32_t slot, int ks) {
    return gpu::mn_major_descriptor<UTile>(slot, ks * kWgmmaK);
  }
  CONVLAB_HOST_DEVICE static constexpr uint64_t v_descriptor(uint32_t slot, int kk) {
    return gpu::mn_major_descriptor<VTile>(slot, kk * kWgmmaK);
  }
};

using PingPong64 = PingPongLayout<64, 128, 2>;

}  // namespace convlab::ffn_wgmma
