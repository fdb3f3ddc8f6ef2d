// gpu/lib/hopper/convfirst_wgmma_layout.hpp — the tunables, supported set and
// shared-memory geometry of lesson 10's one-kernel ConvFirst block on Hopper
// (gpu/convfirst/10c_fused_wgmma.cu), in plain C++ so that
// tests/hopper_lib_test.cpp checks on the host that
//   * the staged x rows of every tile hold every tap the conv reads,
//   * the conv's ldmatrix addresses read each channel where TMA wrote it,
//   * the U and V boxes land where the wgmma descriptors read them.
//
// Shared memory of one CTA (every region but the biases 1024-aligned):
//
//   [ barriers | U/V slot 0 .. Stages−1 | conv weights [C][9][8] | x buffer 0 | x buffer 1 | biases ]
//
// An x buffer holds the halo rows of one 128-pixel tile as C/64 panels. Panel
// p is [staged pixel][channels 64p .. 64p+63], one 128-byte swizzled line per
// pixel, written by `boxes` TMA boxes of `box_rows` pixels each, followed by 8
// zero lines that no box writes: staged index `zero_index` is the zero pixel
// that taps outside the image read. The biases, in fp32, follow the x buffers
// (at a run-time offset: the buffers' size depends on W, so the region is only
// 128-aligned): a [⌈hidden / Chunk⌉ · Chunk] (zero past hidden), b [C], conv_b [C].
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"

namespace convlab::convfirst_wgmma {

constexpr int kBlockRows = 128;  // pixels per tile: two consumer warpgroups of 64
constexpr int kWgmmaM = 64, kWgmmaK = 16;
constexpr int kConsumers = kBlockRows / kWgmmaM;
constexpr int kConsumerWarps = 4 * kConsumers;
constexpr int kThreads = (1 + kConsumers) * gpu::hopper::kWarpgroupThreads;  // 384
constexpr int kPanelCols = 64;   // one 128-byte swizzle line of f16/bf16
constexpr int kGroupWidth = 8;   // one conv group = one 16-byte chunk = one ldmatrix row
constexpr int kConvSteps = 5;    // k16 steps over 9 taps x 8 channels (the fifth half zero)
constexpr int kXBuffers = 2;     // the next tile's halo lands while this one is computed
constexpr int kZeroLines = 8;    // one swizzle atom of zeros after each panel's staged pixels
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
constexpr int kMaxShared = 227 * 1024;
constexpr int kBarrierRegion = 1024;  // the two barrier rings, padded to an atom
constexpr int kStaggerBarrier = 1;    // named barrier that sets the consumer warpgroups apart

CONVLAB_HOST_DEVICE constexpr uint32_t round_up_1024(uint32_t bytes) { return (bytes + 1023u) & ~1023u; }

// ---- tunables, one configuration per channel count C (= C_out) -------------------------
//
//   Chunk    hidden channels per loop step: N of the expand wgmma, K of the project wgmma
//   Stages   U/V chunk slots in the ring
//   Overlap  issue chunk r's expand before chunk r−1's project (S and H live at once)
template <int C, int Chunk, int Stages, bool Overlap> struct Layout {
  static constexpr int kC = C, kChunk = Chunk, kStages = Stages;
  static constexpr bool kOverlap = Overlap;
  using UTile = gpu::Sw128Tile<C, Chunk>;  // [c][h]      B of the expand product, MN-major
  using VTile = gpu::Sw128Tile<Chunk, C>;  // [h][c_out]  B of the project product, MN-major
  static constexpr int kStageBytes = UTile::kBytes + VTile::kBytes;
  static constexpr int kGroups = C / kGroupWidth;
  static constexpr int kWeightWords = C * 9 * kGroupWidth / 2;  // conv_w as pairs of channels
  static constexpr uint32_t kUvBase = kBarrierRegion;
  static constexpr uint32_t kWeightsBase = kUvBase + uint32_t(Stages) * kStageBytes;
  static constexpr uint32_t kXBase = kWeightsBase + round_up_1024(uint32_t(kWeightWords) * 4);
  static constexpr int kSRegs = Chunk / 2;          // fp32 expand accumulators per consumer thread
  static constexpr int kZRegs = C / 2;              // fp32 project accumulators
  static constexpr int kHSteps = Chunk / kWgmmaK;   // A fragments of H
  static constexpr int kCSteps = C / kWgmmaK;       // A fragments of T (k16 steps of the expand)

  static_assert(C == 64 || C == 128, "the project wgmma is m64n{C}; C = 256 needs the large-C plan");
  static_assert(Chunk == 64 || Chunk == 128, "the expand wgmma is m64n{Chunk}");
  static_assert(C <= gpu::hopper::kTmaMaxBoxDim && Chunk <= gpu::hopper::kTmaMaxBoxDim, "TMA boxes: at most 256");
  static_assert(kCSteps * 2 == kGroups, "two conv groups (n8 tiles) make one k16 A fragment of the expand");
  static_assert(UTile::kBytes % 1024 == 0 && kStageBytes % 1024 == 0, "every box starts on a swizzle atom");
  static_assert(gpu::hopper::kPipelineBarrierBytes<kXBuffers> + gpu::hopper::kPipelineBarrierBytes<Stages> <=
                    kBarrierRegion,
                "both barrier rings fit the barrier region");
  // What is live in the hidden loop must fit the launch's cap (65536 / 384 threads = 168): a
  // conservative bound, since ptxas allocates the consumers' code after setmaxnreg against
  // kConsumerRegs (docs/gpu-method.md).
  static constexpr int kLoopRegs = kZRegs + 4 * kCSteps + kSRegs + kSRegs / 2 + (Overlap ? 4 * kHSteps : 0);
  static_assert(kLoopRegs <= 168 - 24,
                "Z, packed T, S, the fp32 bias pairs (and packed H when overlapped) fit 168 registers with "
                "room for addresses");
  static_assert(gpu::hopper::register_budget_fits(kProducerRegs, kConsumerRegs, kConsumers), "setmaxnreg budget");

  CONVLAB_HOST_DEVICE static constexpr uint32_t u_slot(uint32_t base, int s) { return base + kUvBase + s * kStageBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t v_slot(uint32_t base, int s) { return u_slot(base, s) + UTile::kBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t u_box(uint32_t slot, int p) { return slot + p * UTile::kPanelBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint32_t v_box(uint32_t slot, int p) { return slot + p * VTile::kPanelBytes; }
  CONVLAB_HOST_DEVICE static constexpr uint64_t u_descriptor(uint32_t slot, int ks) {
    return gpu::mn_major_descriptor<UTile>(slot, ks * kWgmmaK);
  }
  CONVLAB_HOST_DEVICE static constexpr uint64_t v_descriptor(uint32_t slot, int kk) {
    return gpu::mn_major_descriptor<VTile>(slot, kk * kWgmmaK);
  }
};

using Layout64 = Layout<64, 64, 4, true>;
using Layout128 = Layout<128, 64, 2, false>;

// ---- the staged halo rows of a tile (run time: they depend on W) ---------------------------
//
// Tile t owns pixels [128t, 128t + 128) of the flattened N·H·W index (or
// [Pt, Pt + P) for a tile of P = tile_rows pixels: 10e at C = 512 uses 64). Its
// staged rows are the image rows from one above its first pixel's row
// (first_row = 128t / W − 1, possibly −1) to one below its last: at most
// ceil(127 / W) + 1 touched rows plus two, never more than N·H + 2. They are
// consecutive pixels of NHWC x, so x viewed as a [N·H·W, C] matrix gives them
// as `boxes` TMA boxes of `box_rows` pixels starting at pixel first_row·W;
// TMA writes zeros for pixels before 0 or past N·H·W.
struct XStaging {
  int boxes = 0, box_rows = 0;  // per panel
  int panels = 0;               // C / 64
  int zero_index = 0;           // staged index of the zero pixel (= boxes·box_rows)
  uint32_t panel_bytes = 0;     // (zero_index + kZeroLines) · 128
  uint32_t buffer_bytes = 0;    // panels · panel_bytes
  uint32_t tx_bytes = 0;        // what the boxes of one tile write (the full barrier's transaction count)
};

inline XStaging x_staging(int C, int W, int64_t image_rows, int tile_rows = kBlockRows) {
  XStaging s;
  const int64_t touched = std::min<int64_t>((tile_rows - 1 + W - 1) / W + 1, image_rows);
  const int64_t pixels = (touched + 2) * W;
  s.boxes = int((pixels + gpu::hopper::kTmaMaxBoxDim - 1) / gpu::hopper::kTmaMaxBoxDim);
  s.box_rows = int(((pixels + s.boxes - 1) / s.boxes + 7) / 8 * 8);  // whole swizzle atoms, ≤ 256
  s.panels = C / kPanelCols;
  s.zero_index = s.boxes * s.box_rows;
  s.panel_bytes = uint32_t(s.zero_index + kZeroLines) * 128u;
  s.buffer_bytes = uint32_t(s.panels) * s.panel_bytes;
  s.tx_bytes = uint32_t(s.panels) * uint32_t(s.zero_index) * 128u;
  return s;
}

// Floats of a CTA's staged biases (gpu::stage_biases): `slice` columns of a per hidden
// chunk of `chunk` (⌈hidden / chunk⌉ chunks), then `channels` of b and of conv_b.
constexpr std::size_t staged_bias_floats(int hidden, int chunk, int slice, int channels) {
  return (std::size_t(hidden) + chunk - 1) / chunk * slice + 2 * std::size_t(channels);
}
// The fp32 biases: a padded to whole chunks, then b, then conv_b.
template <class L> constexpr std::size_t bias_floats(int hidden) {
  return staged_bias_floats(hidden, L::kChunk, L::kChunk, L::kC);
}
template <class L> CONVLAB_HOST_DEVICE constexpr uint32_t bias_offset(const XStaging& s) {
  return L::kXBase + uint32_t(kXBuffers) * s.buffer_bytes;
}
template <class L> std::size_t shared_bytes(const XStaging& s, int hidden) {
  return gpu::hopper::kTmaSwizzleAtomBytes + bias_offset<L>(s) + 4 * bias_floats<L>(hidden);
}

// Staged index of the pixel a conv tap reads: pixel q's neighbour (dr, ds) in
// the staged rows of the tile whose first staged image row is first_row, or
// the zero pixel when q is past the batch or the tap leaves q's image (rows of
// a neighbouring image inside the staged rows included).
CONVLAB_HOST_DEVICE constexpr int tap_index(int q, int dr, int ds, int M, int H, int W, int first_row, int zero_index) {
  if (q >= M) return zero_index;
  const int row = q / W, w = q - row * W, h = row % H;
  if (h + dr < 0 || h + dr >= H || w + ds < 0 || w + ds >= W) return zero_index;
  return (row + dr - first_row) * W + w + ds;
}

// tap_index for all nine taps of one pixel from one division pair (tap_index divides by W
// and H on every call): the pixel's own staged index and which neighbouring rows and
// columns lie inside its image. tap_at(tap_place(q, ...), dr, ds, ...) == tap_index(q, dr,
// ds, ...) for dr, ds in {-1, 0, 1} (tests/hopper_lib_test.cpp).
struct TapPlace {
  int centre;                  // staged index of the pixel, or zero_index past the batch
  bool up, down, left, right;  // the row above / below and the column left / right are in the image
};
CONVLAB_HOST_DEVICE constexpr TapPlace tap_place(int q, int M, int H, int W, int first_row, int zero_index) {
  if (q >= M) return {zero_index, false, false, false, false};
  const int row = q / W, w = q - row * W, h = row - row / H * H;
  return {(row - first_row) * W + w, h > 0, h + 1 < H, w > 0, w + 1 < W};
}
CONVLAB_HOST_DEVICE constexpr int tap_at(const TapPlace& p, int dr, int ds, int W, int zero_index) {
  const bool inside = (dr < 0 ? p.up : dr > 0 ? p.down : true) && (ds < 0 ? p.left : ds > 0 ? p.right : true);
  return inside ? p.centre + dr * W + ds : zero_index;
}
// The staged indices a conv lane hands ldmatrix over a tile's k-steps: at step j, tap 2j + odd
// (odd: the lane's k-half; tap 9 is the zero pixel), both candidates known at compile time once
// the loop is unrolled. The centre tap needs no place at all: it is always inside the image, so
// its staged index is the pixel's own (centre_index).
template <int kSteps>
CONVLAB_HOST_DEVICE constexpr void lane_taps(const TapPlace& p, bool odd, int W, int zero_index, int (&tap)[kSteps]) {
  for (int j = 0; j < kSteps; ++j) {
    const int even_tap = tap_at(p, (2 * j) / 3 - 1, (2 * j) % 3 - 1, W, zero_index);
    const int odd_tap = 2 * j + 1 < 9 ? tap_at(p, (2 * j + 1) / 3 - 1, (2 * j + 1) % 3 - 1, W, zero_index) : zero_index;
    tap[j] = odd ? odd_tap : even_tap;
  }
}
CONVLAB_HOST_DEVICE constexpr int centre_index(int q, int M, int W, int first_row, int zero_index) {
  return q < M ? q - first_row * W : zero_index;
}

// Byte offset, inside an x buffer, of channels c .. c+1 of staged pixel i:
// panel c / 64, line i, 16-byte chunk (c % 64) / 8 at position chunk ^ (i % 8).
CONVLAB_HOST_DEVICE constexpr uint32_t x_offset(const XStaging& s, int i, int c) {
  return uint32_t(c / kPanelCols) * s.panel_bytes + uint32_t(i) * 128u +
         uint32_t((((c % kPanelCols) / 8) ^ (i % 8)) << 4) + uint32_t(c % 8) * 2u;
}

}  // namespace convlab::convfirst_wgmma
