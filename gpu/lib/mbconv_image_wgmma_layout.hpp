// gpu/lib/mbconv_image_wgmma_layout.hpp — the shared-memory layout of lesson 11's one-kernel
// MBConv on Hopper's warpgroup MMA (gpu/lib/mbconv_image_wgmma.cuh): one CTA holds one whole
// small image (11g: at most 64 input and 64 output pixels, one m64 tile), or a cluster of
// `split` CTAs shares one image by bands of output rows (11j: each CTA's input rows, halo
// included, and its output rows at most two m64 tiles). Three warpgroups a CTA. Plain C++, so
// that tests/lesson11_mbconv_tile_test.cpp checks it on the host.
//
// From a 1024-byte-aligned base, in this order (16-bit elements unless marked fp32):
//
//   ds   chunks panels of [rd][64]   D of every hidden channel, K-major for wgmma's A operand:
//                                    panel c holds chunk c's 64 channels, one 128-byte row a
//                                    pixel, 128-byte swizzle (sw128_offset); rd = the CTA's
//                                    output pixels rounded up to 8. The project reads 64 rows
//                                    per m tile and k step: rows past rd fall into the next
//                                    panel (or xs), rows it discards.
//   xs   C/64 panels of [rx][64]     the CTA's rows of x, K-major, zero in the columns past C
//                                    (the expand's K padding); rx = its input pixels rounded
//                                    up to 8
//   wes  2 slots of [cp][64]         We[:, chunk] MN-major (a row of 64 hidden channels per k):
//                                    the expand's B operand, copied two chunks ahead (by TMA in
//                                    cp / we_box boxes: the copy engine's time goes by boxes)
//   es   e_slots of [hp·ep][72]      E of one chunk inside a zero border of K/2 pixels (what the
//                                    depthwise reads): hp the band's input rows with its halo
//                                    (the whole padded image when split = 1); a bordered row of
//                                    wp pixels at a pitch of ep = wp rounded up to odd, so that
//                                    eight rows start on eight different 16-byte bank groups (a
//                                    pixel is 9 units of 16 bytes); two slots where they fit,
//                                    else one
//   pooled [hidden_p] fp32           the channel sums of D, then the gate (past hidden the sums,
//                                    0, stay: the gate sweep multiplies D's zero padding by them)
//   red [8][64] fp32, z [cr_p] fp32  the SE's scratch (these last regions 16-byte aligned): the
//                                    depthwise warps' FC1 partials (Cr ≤ 64; with split > 1 the
//                                    peers read them through distributed shared memory), or
//                                    the CTA-wide FC1's [12][8]
//   rows [64·mt + px_out] int16          the bordered E row of each of the expand's 64·mt rows (-1
//                                    past the band), then each output pixel's top-left tap in E
//   bars kWgBars mbarriers           per E slot: full (the expand's 128 threads arrive), empty
//                                    (the depthwise's 256 arrive); the expand warpgroup's barrier;
//                                    per We slot and per Wp stage: full (the copy's bytes landed)
//
// During the project, xs .. the end of es is dead and holds three (or, for a wide C_out, two) Wp
// stages of kWgProjectK rows, each MN-major in panels of 64 output channels ([kWgProjectK][64] per
// panel).
#pragma once

#include <algorithm>
#include <cstddef>

#include "gpu/lib/mma.cuh"  // CONVLAB_HOST_DEVICE
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

inline constexpr int kWgImageThreads = 384;  // warpgroup 0: expand; 1 and 2: depthwise; all: SE, project
inline constexpr int kWgDwWarps = 8;
inline constexpr int kWgChunk = 64;           // hidden channels a chunk: the expand's n64, one panel of D
inline constexpr int kWgLde = kWgChunk + 8;   // E row stride: 9 units of 16 bytes
// Hidden rows of Wp a stage: four k16 steps, and TMA boxes of 64 rows (the copy engine takes a
// box in about the same time at 16 to 128 rows: lesson 11's NOTES.md, the TMA stream probe).
inline constexpr int kWgProjectK = 64;
inline constexpr int kWgProjectStages = 2, kWgProjectStagesDeep = 3;  // Wp stages in flight: 3 where the room holds them
// With split > 1 the project runs one m64 tile more per stage and the SE is short: a ring of four
// stages where the room holds them, three of them issued before the SE.
inline constexpr int kWgProjectStagesSplit = 4;
// The Wp stage the project asks for at the top of its stage kk, once the CTA barrier has passed
// (stages 0 .. S − 2 go out before the loop), or −1 for none. Every wgmma group drained at a
// stage's end: stage kk − 1's slot is free, the ring runs S − 1 stages ahead. One group left in
// flight (in_flight): only stage kk − 2's slot is known free, the ring runs S − 2 ahead, and at
// kk = 0 there is nothing to ask for (stage S − 2 is already out); the kernel drains every
// group (lessons/11-mbconv/NOTES.md), and the rule stays with its test. Host-tested as a
// ring model (tests/lesson11_mbconv_tile_test.cpp).
CONVLAB_HOST_DEVICE constexpr int wp_refill_stage(int kk, int stages, bool in_flight) {
  if (!in_flight) return kk + stages - 1;
  return kk >= 1 ? kk + stages - 2 : -1;
}
inline constexpr int kWgMaxNBlocks = 6;       // C_out ≤ 384: two n64 blocks per warpgroup
inline constexpr int kWgLoopFc1Max = 64;      // Cr up to which FC1 runs inside the chunk loop (two outputs a lane)
// The SE's scratch: the depthwise warps' FC1 partials, or the CTA-wide FC1's [warps][8].
inline constexpr int kWgRedFloats = std::max(kWgDwWarps * kWgLoopFc1Max, kWgImageThreads / 32 * 8);
inline constexpr std::size_t kWgSharedLimit = 227 * 1024;
// The mbarriers, in this order: E full [2], E empty [2], the expand warpgroup's, We full [2], Wp full [4].
inline constexpr int kWgBarEFull = 0, kWgBarEEmpty = 2, kWgBarExpand = 4, kWgBarWe = 5, kWgBarWp = 7;
inline constexpr int kWgWpBars = std::max(kWgProjectStagesDeep, kWgProjectStagesSplit);
inline constexpr int kWgBars = kWgBarWp + kWgWpBars;

// Byte offset of element (row, col) of a tile stored as 64-column panels of panel_bytes (rows of
// 128 bytes, the 16-byte unit u of row r at position u ^ (r % 8)): gpu::Sw128Tile's layout with
// a run-time row count.
CONVLAB_HOST_DEVICE constexpr std::size_t sw128_offset(int row, int col, std::size_t panel_bytes) {
  return std::size_t(col / 64) * panel_bytes + std::size_t(row) * 128 + 16 * (((col % 64) / 8) ^ (row % 8)) +
         2 * (col % 8);
}

// The band of output rows CTA `rank` of a cluster of `split` makes, and the input rows it
// expands (its halo included, clipped to the image): output rows p0 .. p0 + rows − 1 (the first
// P % split CTAs one row more), input rows ih0 .. ih1 − 1. The bordered E of the band starts at
// input row p0·stride − K/2 (rows above the image stay zero).
struct WgBand {
  int p0 = 0, rows = 0, ih0 = 0, ih1 = 0;
};
CONVLAB_HOST_DEVICE constexpr WgBand wg_band(int P, int H, int K, int stride, int split, int rank) {
  WgBand b;
  const int base = P / split, extra = P % split;
  b.rows = base + (rank < extra ? 1 : 0);
  b.p0 = rank * base + (rank < extra ? rank : extra);
  const int top = b.p0 * stride - K / 2, bottom = (b.p0 + b.rows - 1) * stride - K / 2 + K;
  b.ih0 = top < 0 ? 0 : top;
  b.ih1 = bottom > H ? H : bottom;
  return b;
}

struct WgImageLayout {
  int split = 1;      // CTAs an image (a cluster when > 1)
  int mt = 1;         // m64 tiles of the expand's and the project's M: 1, or 2 with split > 1
  int px_in = 0, px_out = 0;  // the most input pixels (halo included) and output pixels a CTA has
  int HW = 0, PQ = 0, rx = 0, rd = 0, cp = 0, chunks = 0, hidden_p = 0, nb = 0, cr_p = 0;
  int pad = 0, hp = 0, wp = 0, ep = 0, e_slots = 0;
  int we_box = 0;  // k rows of a We TMA box: the tallest multiple of 64 that divides cp, ≤ 256
  std::size_t x_panel = 0, d_panel = 0, we_slot = 0, e_slot = 0, wp_stage = 0, wp_panel = 0;
  std::size_t ds = 0, xs = 0, wes = 0, es = 0, pooled = 0, red = 0, z = 0, rows = 0, bars = 0;
  std::size_t bytes = 0;  // what the launch asks for: the layout plus 1024 bytes to align its base
  bool expand = false;

  WgImageLayout() = default;
  explicit WgImageLayout(const MBConvProblem& p, int split_ = 1) {
    const auto up = [](std::size_t v, std::size_t m) { return (v + m - 1) / m * m; };
    split = std::max(split_, 1), mt = split > 1 ? 2 : 1;
    HW = p.H * p.W, PQ = p.P() * p.Q();
    pad = p.kernel / 2, wp = p.W + 2 * pad, ep = wp | 1;
    if (split == 1) {
      px_in = HW, px_out = PQ, hp = p.H + 2 * pad;
    } else {
      for (int k = 0; k < split; ++k) {
        const WgBand b = wg_band(p.P(), p.H, p.kernel, p.stride, split, k);
        px_in = std::max(px_in, (b.ih1 - b.ih0) * p.W), px_out = std::max(px_out, b.rows * p.Q());
        hp = std::max(hp, (b.rows - 1) * p.stride + p.kernel);
      }
      if (p.P() < split) px_out = 0;  // a CTA without a row: not a split this layout takes
    }
    rx = int(up(px_in, 8)), rd = int(up(px_out, 8)), cp = int(up(p.C, 64));
    for (int d = 4; d >= 1; --d)
      if ((cp / 64) % d == 0) {
        we_box = 64 * d;
        break;
      }
    chunks = (p.hidden() + kWgChunk - 1) / kWgChunk, hidden_p = chunks * kWgChunk;
    nb = (p.C_out + 63) / 64, cr_p = int(up(std::max(p.se_channels(), 1), 4));
    expand = p.has_expand();
    x_panel = std::size_t(rx) * 128, d_panel = std::size_t(rd) * 128, we_slot = std::size_t(cp) * 128;
    e_slot = up(std::size_t(hp) * ep * kWgLde * 2, 128);
    wp_panel = std::size_t(kWgProjectK) * 128, wp_stage = nb * wp_panel;
    ds = 0;
    xs = ds + chunks * d_panel;
    wes = xs + (cp / 64) * x_panel;
    es = wes + 2 * we_slot;
    for (e_slots = 2; e_slots >= 1; --e_slots) {
      std::size_t at = es + e_slots * e_slot;
      pooled = at, at = up(at + std::size_t(hidden_p) * 4, 16);
      red = at, at = up(at + std::size_t(kWgRedFloats) * 4, 16);
      z = at, at = up(at + std::size_t(cr_p) * 4, 16);
      rows = at, at = up(at + std::size_t(64 * mt + px_out) * 2, 16);
      bars = at, at = up(at + kWgBars * 8, 16);
      bytes = at + 1024;
      if (bytes <= kWgSharedLimit) break;
    }
    e_slots = std::max(e_slots, 1);
  }
  // The Wp stages' room: xs up to the end of the E slots.
  CONVLAB_HOST_DEVICE std::size_t wp_room() const { return es + e_slots * e_slot - xs; }
  CONVLAB_HOST_DEVICE int wp_stages() const {
    if (split > 1) return kWgProjectStagesSplit * wp_stage <= wp_room() ? kWgProjectStagesSplit : kWgProjectStages;
    if (tasks_per_warpgroup() > 1) return kWgProjectStages;  // two n64 blocks a warpgroup: wide stages
    return kWgProjectStagesDeep * wp_stage <= wp_room() ? kWgProjectStagesDeep : kWgProjectStages;
  }
  // The project's (n64 block, m tile) tasks, spread over the three warpgroups (at most two each).
  CONVLAB_HOST_DEVICE int project_tasks() const { return nb * mt; }
  CONVLAB_HOST_DEVICE int tasks_per_warpgroup() const { return (project_tasks() + 2) / 3; }
  bool fits(std::size_t limit = kWgSharedLimit) const {
    return expand && px_out > 0 && px_in <= 64 * mt && px_out <= 64 * mt && nb <= kWgMaxNBlocks &&
           tasks_per_warpgroup() <= 2 && bytes <= limit && kWgProjectStages * wp_stage <= wp_room();
  }
};

}  // namespace convlab::gpu::mbconv
