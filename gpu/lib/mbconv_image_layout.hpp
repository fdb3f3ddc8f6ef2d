// gpu/lib/mbconv_image_layout.hpp — the shared-memory layout and the project's warp grid of
// lesson 11's one-kernel MBConv (gpu/mbconv/11f_fused_image.cu): one CTA holds one whole image,
// so the SE's pool, its two small layers and the gate happen on chip, between the depthwise and
// the project, with no second pass. Plain C++ (host code), so that
// tests/lesson11_mbconv_tile_test.cpp checks it on the host.
//
// A CTA's shared memory, in this order (16-bit elements unless marked fp32):
//
//   xs      [H·W][ldx]          the image's x; columns past C are zero (the expand's K padding;
//                               without an expand they stand in for E's pad channels)
//   es      [(H+2·pad)·(W+2·pad)][kImageLde]   E of one 64-channel chunk inside a zero border of
//                               K/2 pixels, so that the depthwise reads every tap without a bounds
//                               test (absent without an expand)
//   dws     [2][64·K²]          the depthwise weights of two chunks, as in global memory
//   bias    [2][hidden_p]       be and bd, zero past hidden
//   ds      [P·Q][ldd]          D of every hidden channel: the whole image's depthwise output,
//                               gated in place once the SE is known; columns past hidden are 0
//   wbuf                        two We chunks [ck][kImageLde] while the chunks are made, then
//                               three Wp stages [kProjectK][ldwp] during the project (ldwp: the
//                               block's columns + 8; a block of one is only C_out rounded to 32 wide)
//   pooled  [hidden_p] fp32     the channel sums of D, then the gate
//   red     [16][64] fp32       per-warp partial sums: the pool's of a chunk, then the SE's first
//                               layer's (64 outputs a pass)
//   z       [cr_p] fp32         the SE's hidden vector
//   rows    [16·m tiles + P·Q] int   where things sit in E, worked out once per CTA: the bordered E
//                               row of each of the expand's rows (-1 past the image), then the E
//                               row of each output pixel's top-left tap
//
// Every 16-bit row stride is an odd number of 16-byte units (ldmatrix reads eight rows without a
// bank conflict). The project's tile of warp (i, j) of a wm × wn warp grid is 2 m16 tiles × 4 n8
// tiles; a block of the project is the grid's (32·wm) × (32·wn) outputs, walked over every hidden
// channel; blocks run one after another. The grid is the one with the fewest blocks (ties: the
// fewest blocks along the pixels, each of which streams all of Wp again).
#pragma once

#include <algorithm>
#include <cstddef>

#include "gpu/lib/mma.cuh"  // CONVLAB_HOST_DEVICE
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

inline constexpr int kImageThreads = 512;  // 16 warps: four per scheduler to hide each phase's latency
inline constexpr int kImageWarps = kImageThreads / 32;
inline constexpr int kImageChunk = 64;       // hidden channels made per step (expand n, depthwise lanes × 2)
inline constexpr int kImageLde = kImageChunk + 8;  // E and We chunk rows: 9 units of 16 bytes
inline constexpr int kProjectK = 32;         // hidden rows of Wp per pipeline stage (two k16 steps)
inline constexpr int kProjectStages = 3;
inline constexpr int kWarpMTiles = 2, kWarpNTiles = 4;  // a warp's project tile: 32 pixels × 32 channels
inline constexpr std::size_t kImageSharedLimit = 227 * 1024;  // H200 opt-in shared memory per block

// Recursive halving over a warp (the SE's first layer, gpu/lib/mbconv_image_se.cuh): each lane
// holds partial sums of `values` outputs (a power of two ≤ 32); at the step of offset o (16, 8,
// ..., down to 32 / values) a lane keeps the half of what it holds on its side of bit o and adds
// its partner's copy of that half. The lane ends with the warp's sum of output
// halving_output(lane, values), split over the 32 / values lanes that share the bits above.
CONVLAB_HOST_DEVICE constexpr int halving_output(int lane, int values) {
  int o = 0;
  for (int half = values / 2, off = 16; half >= 1; half /= 2, off /= 2) o += lane & off ? half : 0;
  return o;
}

struct ImageLayout {
  int HW = 0, PQ = 0;
  int ck = 0;        // the expand's K: C rounded up to 16
  int ldx = 0;       // xs row stride
  int chunks = 0;    // hidden in 64-channel chunks
  int hidden_p = 0;  // chunks · 64
  int ldd = 0;       // ds row stride
  int wm = 1, wn = 8;  // the project's warp grid
  int block_cols = 0;  // the project block's columns: 32·wn, or C_out rounded up to 32 if one block
  int ldwp = 0;      // a Wp stage's row stride: block_cols + 8
  int pad = 0, hp = 0, wp = 0;  // E's zero border (K/2) and its padded height and width
  int m_blocks = 0, n_blocks = 0;
  int red_cols = 0, cr_p = 0;
  std::size_t xs = 0, es = 0, dws = 0, bias = 0, ds = 0, wbuf = 0, pooled = 0, red = 0, z = 0, rows = 0, bytes = 0;  // offsets, total
  int rows_in = 0;   // the row table's entries for the expand's rows (16·m tiles), then PQ for the depthwise

  ImageLayout() = default;
  explicit ImageLayout(const MBConvProblem& p) {
    const auto up = [](int v, int m) { return (v + m - 1) / m * m; };
    HW = p.H * p.W, PQ = p.P() * p.Q();
    ck = up(p.C, 16);
    chunks = (p.hidden() + kImageChunk - 1) / kImageChunk;
    hidden_p = chunks * kImageChunk;
    ldx = (p.has_expand() ? ck : hidden_p) + 8;
    ldd = hidden_p + 8;
    const int mt = (PQ + 15) / 16, nt = (p.C_out + 7) / 8;
    int best = 1 << 30;
    for (int m = 1; m <= kImageWarps; m *= 2) {  // fewest blocks; on a tie the fewest Wp passes (m blocks)
      const int n = kImageWarps / m;
      const int mb = (mt + kWarpMTiles * m - 1) / (kWarpMTiles * m), nb = (nt + kWarpNTiles * n - 1) / (kWarpNTiles * n);
      if (mb * nb < best || (mb * nb == best && mb < m_blocks))
        best = mb * nb, wm = m, wn = n, m_blocks = mb, n_blocks = nb;
    }
    block_cols = n_blocks > 1 ? 8 * kWarpNTiles * wn : up(p.C_out, 32);
    ldwp = block_cols + 8;
    pad = p.kernel / 2, hp = p.H + 2 * pad, wp = p.W + 2 * pad;
    red_cols = kImageChunk;
    cr_p = up(std::max(p.se_channels(), 1), 4);
    const auto align = [](std::size_t b) { return (b + 127) / 128 * 128; };
    std::size_t at = 0;
    xs = at, at = align(at + std::size_t(HW) * ldx * 2);
    es = at, at = align(at + (p.has_expand() ? std::size_t(hp) * wp * kImageLde * 2 : 0));
    dws = at, at = align(at + 2 * std::size_t(kImageChunk) * p.kernel * p.kernel * 2);
    bias = at, at = align(at + 2 * std::size_t(hidden_p) * 2);
    ds = at, at = align(at + std::size_t(PQ) * ldd * 2);
    const std::size_t we_bytes = 2 * std::size_t(ck) * kImageLde * 2 * (p.has_expand() ? 1 : 0);
    const std::size_t wp_bytes = std::size_t(kProjectStages) * kProjectK * ldwp * 2;
    wbuf = at, at = align(at + std::max(we_bytes, wp_bytes));
    pooled = at, at = align(at + std::size_t(hidden_p) * 4);
    red = at, at = align(at + std::size_t(kImageWarps) * red_cols * 4);
    z = at, at = align(at + std::size_t(cr_p) * 4);
    rows_in = (HW + 15) / 16 * 16;
    rows = at, at = align(at + std::size_t(rows_in + PQ) * 4);
    bytes = at;
  }
  bool fits(std::size_t limit = kImageSharedLimit) const { return bytes <= limit; }
};

}  // namespace convlab::gpu::mbconv
