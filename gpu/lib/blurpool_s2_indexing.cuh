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

// ---- the composed form (10f_fused_blurpool_composed) ---------------------------------------
// Where all nine blur taps of an output pixel are inside the image, blur∘conv is ONE 5×5 kernel
// at stride 2: x tap (u, v) of the pixel (x pixel (2p + u − 2, 2q + v − 2)) gets the weight
// Σ_{i + r = u, j + s = v} β_i β_j w[r][s]: 25 taps instead of 81 combos. At the image's edges the
// blur zero-pads the conv OUTPUT, which a fixed 5×5 kernel cannot see; those pixels subtract the
// missing blur taps (inclusion–exclusion). Along one axis (rows; columns alike) a pixel has
// up to 7 terms, a = 0 .. 6:
//   a = 0..4  main: x row 2p + a − 2, conv row r with the factor β_{a−r} (0 when a − r ∉ 0..2);
//   a = 5     start, when blur tap i = 0 is outside (2p − 1 < 0, i.e. p = 0): the conv output at
//             row −1 it would have added, whose only x row inside the image is 2p (conv row 2);
//   a = 6     end, when blur tap i = 2 is outside (2p + 1 ≥ H): x row 2p with conv row 0.
// A slot is a (row term, column term) pair: it reads the 8 channels of one x pixel (the zero
// pixel when a term is absent or the pixel outside) with the weight
//   sign · Σ_{r,s} f_row(r) · f_col(s) · w[r][s],   sign = (−1)^(number of edge terms)
// (the missing row taps and the missing column taps are subtracted, their corner added back once).
// The slots in k16-step order, two per step (the kernel's fragments, 8 channels each):
//   slots  0..24  main × main (steps 0..12; slot 25 is zero)
//   slots 26..35  start × main, end × main (row-edge steps 13..17: start 13..15, end 15..17)
//   slots 36..45  main × start, main × end (column-edge steps 18..22: start 18..20, end 20..22)
//   slots 46..49  the corners start/end × start/end (steps 23, 24)
inline constexpr int kAxisTerms = 7, kStartTerm = 5, kEndTerm = 6;
inline constexpr int kComposedSlots = 50;
inline constexpr int kComposedSteps = kComposedSlots / 2;  // 25
inline constexpr int kMainSteps = 13;                      // steps 0..12 run for every pixel

CONVLAB_HOST_DEVICE constexpr int term_offset(int a) { return a < 5 ? a - 2 : 0; }
CONVLAB_HOST_DEVICE constexpr int term_factor(int a, int r) {
  if (a == kStartTerm) return r == 2 ? 1 : 0;
  if (a == kEndTerm) return r == 0 ? 1 : 0;
  return a - r >= 0 && a - r <= 2 ? binomial(a - r) : 0;
}
// Is term a present for the centre whose axis mask is `mask`? (bit 1: 2p − 1 inside, bit 3: 2p + 1 inside)
CONVLAB_HOST_DEVICE constexpr bool term_present(int a, unsigned mask) {
  if (a == kStartTerm) return ((mask >> 1) & 1u) == 0;
  if (a == kEndTerm) return ((mask >> 3) & 1u) == 0;
  return true;
}
struct Slot {
  int row_term, col_term;  // −1, −1: the zero slot
};
CONVLAB_HOST_DEVICE constexpr Slot composed_slot(int k) {
  if (k < 25) return {k / 5, k % 5};
  if (k == 25) return {-1, -1};
  if (k < 36) return {k < 31 ? kStartTerm : kEndTerm, (k - 26) % 5};
  if (k < 46) return {(k - 36) % 5, k < 41 ? kStartTerm : kEndTerm};
  return {(k - 46) / 2 == 0 ? kStartTerm : kEndTerm, (k - 46) % 2 == 0 ? kStartTerm : kEndTerm};
}
// The integer coefficient of w[r][s] in slot k's weight (the kernel divides the sum by 16).
CONVLAB_HOST_DEVICE constexpr int slot_factor(int k, int r, int s) {
  const Slot sl = composed_slot(k);
  if (sl.row_term < 0) return 0;
  const int sign = ((sl.row_term >= 5) != (sl.col_term >= 5)) ? -1 : 1;
  return sign * term_factor(sl.row_term, r) * term_factor(sl.col_term, s);
}
// Does slot k read its pixel for the output pixel with these axis masks? (both terms present and
// the x pixel inside the image)
CONVLAB_HOST_DEVICE constexpr bool slot_valid(int k, unsigned row_mask, unsigned col_mask) {
  const Slot sl = composed_slot(k);
  if (sl.row_term < 0) return false;
  return term_present(sl.row_term, row_mask) && term_present(sl.col_term, col_mask) &&
         ((row_mask >> (term_offset(sl.row_term) + 2)) & (col_mask >> (term_offset(sl.col_term) + 2)) & 1u) != 0;
}
CONVLAB_HOST_DEVICE constexpr int slot_row_offset(int k) {
  return composed_slot(k).row_term < 0 ? 0 : term_offset(composed_slot(k).row_term);
}
CONVLAB_HOST_DEVICE constexpr int slot_col_offset(int k) {
  return composed_slot(k).col_term < 0 ? 0 : term_offset(composed_slot(k).col_term);
}
// The shortcut's blur reads x pixels (2p + i − 1, 2q + j − 1): main slots u = i + 1, v = j + 1, valid
// exactly when the blur tap is inside the image. β_{u−1} β_{v−1} for those slots, 0 for every other.
CONVLAB_HOST_DEVICE constexpr int shortcut_factor(int k) {
  const int u = k / 5, v = k % 5;
  return k < 25 && u >= 1 && u <= 3 && v >= 1 && v <= 3 ? binomial(u - 1) * binomial(v - 1) : 0;
}
// The composed weights in the order the kernel's lanes read them: word (group, step, lane, half)
// holds, for output channel 8·group + lane / 4, input channels 2·(lane % 4) and + 1 of slot
// 2·step + half (an mma m16n8k16 B fragment: k 0..7 the even slot, 8..15 the odd one).
CONVLAB_HOST_DEVICE constexpr int64_t composed_word(int group, int step, int lane, int half) {
  return ((int64_t(group) * kComposedSteps + step) * 32 + lane) * 2 + half;
}
CONVLAB_HOST_DEVICE constexpr int64_t composed_words(int C) { return composed_word(C / 8, 0, 0, 0); }

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
