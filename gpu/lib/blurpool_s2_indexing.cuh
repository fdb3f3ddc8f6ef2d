// gpu/lib/blurpool_s2_indexing.cuh — the index arithmetic of 10d_fused_blurpool, host-callable.
//
// 10d_fused_blurpool computes the stride-2 ConvFirst block's
//
//   t'(n, p, q, k) = Σ_{i,j valid} β_i β_j / 16 · ( Σ_{r,s,c} w[k][r][s][c] · x(n, 2p+i+r-2, 2q+j+s-2, 8·grp + c) + b[k] )
//
// (blur tap (i, j) valid when position (2p+i-1, 2q+j-1) is inside the image: the blur
// zero-pads the conv OUTPUT; x is zero-padded inside the conv) straight from the staged
// x, without the full-resolution conv output: every output pixel sums 81 "combos"
// (blur tap × conv tap), each 8 channels of one staged x pixel times w scaled by
// β_i β_j ∈ {1, 2, 4} (exact in f16/bf16), the 1/16 applied to the fp32 sum.
// This file holds that arithmetic as plain integer functions so that
// tests/lesson10_convfirst_test.cpp checks it on the host against the plain loops.
//
// Vocabulary:
//   output pixel m of the flattened [N, P, Q] index; (n, p, q) = decode(m)
//   staged x rows: the flattened x rows n·H + h from first_staged_row(m0) on, whole rows of W
//     pixels (columns in column_slot order), for the tile of output pixels m0 .. m0 + block_rows − 1
//   axis mask of a centre 2p (or 2q): bit k (0..4) says "2p + k − 2 is inside [0, extent)";
//     blur tap i reads position 2p + i − 1, i.e. bit i + 1; combo (i, r) reads x row
//     2p + i + r − 2, i.e. bit i + r.
#pragma once

#include <cstdint>

#include "gpu/lib/mma.cuh"  // CONVLAB_HOST_DEVICE

namespace convlab::gpu::blurpool_s2 {

inline constexpr int kCombos = 81;                // 9 blur taps × 9 conv taps
inline constexpr int kComboSteps = (kCombos + 1) / 2;  // k16 steps: two combos (8 channels each) per step; combo 81 is zero

struct OutPixel {
  int n, p, q;
};
CONVLAB_HOST_DEVICE constexpr OutPixel decode(int m, int P, int Q) {
  const int row = m / Q;  // flattened n·P + p
  return {row / P, row % P, m - row * Q};
}

// combo c = 9·(3i + j) + (3r + s): blur tap (i, j), conv tap (r, s).
struct Combo {
  int i, j, r, s;
};
CONVLAB_HOST_DEVICE constexpr Combo combo(int c) {
  const int blur = c / 9, tap = c % 9;
  return {blur / 3, blur % 3, tap / 3, tap % 3};
}
CONVLAB_HOST_DEVICE constexpr int binomial(int i) { return i == 1 ? 2 : 1; }
// β_i β_j: the integer factor that scales w for combo c (the kernel divides the sum by 16).
CONVLAB_HOST_DEVICE constexpr int combo_scale(int c) { return binomial(combo(c).i) * binomial(combo(c).j); }
// The conv tap (0..8) of combo c: the index of w's 8-channel word pair in KRSC.
CONVLAB_HOST_DEVICE constexpr int combo_tap(int c) { return c % 9; }
// Offset of the x pixel combo c reads from the x pixel (2p, 2q).
CONVLAB_HOST_DEVICE constexpr int combo_row_offset(int c) { return combo(c).i + combo(c).r - 2; }
CONVLAB_HOST_DEVICE constexpr int combo_col_offset(int c) { return combo(c).j + combo(c).s - 2; }

// Bits 0..4: centre + k − 2 inside [0, extent).
CONVLAB_HOST_DEVICE constexpr unsigned axis_mask(int centre, int extent) {
  unsigned mask = 0;
  for (int k = 0; k < 5; ++k) {
    const int v = centre + k - 2;
    if (v >= 0 && v < extent) mask |= 1u << k;
  }
  return mask;
}
// Does combo c contribute to the output pixel with these axis masks? (its blur tap inside the
// image, and the x pixel it reads inside the image; otherwise it reads the zero pixel)
CONVLAB_HOST_DEVICE constexpr bool combo_valid(int c, unsigned row_mask, unsigned col_mask) {
  const Combo k = combo(c);
  return ((row_mask >> (k.i + 1)) & (row_mask >> (k.i + k.r)) & (col_mask >> (k.j + 1)) & (col_mask >> (k.j + k.s)) &
          1u) != 0;
}
// Σ over valid blur taps of β along one axis (bits 1, 2, 3 of the mask: positions 2p−1, 2p, 2p+1).
CONVLAB_HOST_DEVICE constexpr int axis_weight(unsigned mask) {
  return int((mask >> 1) & 1u) + 2 * int((mask >> 2) & 1u) + int((mask >> 3) & 1u);
}
// The conv bias's factor (× 16) at this pixel: Σ_{valid i, j} β_i β_j.
CONVLAB_HOST_DEVICE constexpr int bias_weight(unsigned row_mask, unsigned col_mask) {
  return axis_weight(row_mask) * axis_weight(col_mask);
}
// Shortcut blur: is blur tap (i, j) inside the image?
CONVLAB_HOST_DEVICE constexpr bool blur_tap_valid(int i, int j, unsigned row_mask, unsigned col_mask) {
  return ((row_mask >> (i + 1)) & (col_mask >> (j + 1)) & 1u) != 0;
}

// ---- staged columns: even columns first, then odd -----------------------------------------
// Consecutive output pixels q, q+1 read x columns two apart; staged in that order, the 8 rows
// of one ldmatrix phase would fall in 4 bank groups (2-way conflicts). A staged row holds x
// column w at slot column_slot(w): the (W+1)/2 even columns, then the odd ones, so those
// reads are one slot apart. The slot of column 2q + dc is column_slot(2q) + column_slot_offset(dc).
CONVLAB_HOST_DEVICE constexpr int column_slot(int w, int W) { return (w & 1) ? (W + 1) / 2 + w / 2 : w / 2; }
CONVLAB_HOST_DEVICE constexpr int column_slot_offset(int dc, int W) {  // dc in −2 .. 2
  return (dc & 1) ? (W + 1) / 2 + (dc - 1) / 2 : dc / 2;
}

// ---- staged rows ----------------------------------------------------------------------
// The first staged flattened x row of the tile whose first output pixel is m0: two above
// the centre row 2·p0 of the first output row (may be negative: zero-filled).
CONVLAB_HOST_DEVICE constexpr int first_staged_row(int m0, int P, int Q, int H) {
  const OutPixel o = decode(m0, P, Q);
  return o.n * H + 2 * o.p - 2;
}
// Rows staged for the tile m0 .. last (last = the tile's last output pixel < M): from
// first_staged_row(m0) to two below the centre row of `last`'s output row.
CONVLAB_HOST_DEVICE constexpr int staged_rows(int m0, int last, int P, int Q, int H) {
  const OutPixel o = decode(last, P, Q);
  return o.n * H + 2 * o.p + 2 - first_staged_row(m0, P, Q, H) + 1;
}
// A bound on staged_rows over every tile of block_rows output pixels: a tile touches
// k ≤ ceil((block_rows − 1)/Q) + 1 output rows (and at most N·P), and k output rows
// need at most 2k + 3 x rows (an image of H ≤ 2P rows per P output rows, plus 2 above and 2 below).
inline constexpr int64_t staged_rows_bound(int block_rows, int N, int P, int Q) {
  int64_t touched = (int64_t(block_rows) - 1 + Q - 1) / Q + 1;
  if (touched > int64_t(N) * P) touched = int64_t(N) * P;
  return 2 * touched + 3;
}

}  // namespace convlab::gpu::blurpool_s2
