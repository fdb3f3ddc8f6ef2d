// gpu/lib/grouped_indexing.cuh — the index arithmetic of 06b_grouped's tensor-core kernel, host-callable.
//
// 06b_grouped's mma kernel reads the im2col view of a staged NHWC tile with
// ldmatrix: every lane hands the instruction the address of 16 bytes (8
// channels of one tap of one pixel), and which bytes those are decides
// whether the answer is right. That arithmetic is plain integer math, kept
// here so that tests/lesson06_grouped_test.cpp checks it on the host against
// the definition of the view, through the ldmatrix and mma models of
// gpu/lib/mma.cuh.
//
// Vocabulary, for one group of T input channels (T % 8 == 0) and an R×S filter:
//
//   reduction index   j = (r·S + s)·T + t,  0 ≤ j < R·S·T      (KRSC: w[k, r, s, t] = w[k][j])
//   staged tile       [rows_in][cols_in] input pixels, pixel_bytes apart, fp16 channels
//   A[m, j]           = tile[corner(m) + r·cols_in + s][group·T + t]
//
// where corner(m) is the staged pixel under tap (0, 0) of output pixel m.
// Since T % 8 == 0, the 8 reduction indices j .. j+7 (j % 8 == 0) are 8
// consecutive channels of ONE tap: 16 contiguous bytes, one ldmatrix row.
#pragma once

#include "gpu/lib/mma.cuh"  // CONVLAB_HOST_DEVICE, MatrixCoord

namespace convlab::gpu::grouped {

inline constexpr int kElementBytes = 2;  // fp16
inline constexpr int kMmaK = 16;         // reduction indices per mma.m16n8k16: one k-step

// How taps are laid out in the staged tile.
struct TapLayout {
  int S;            // filter columns
  int cols_in;      // staged pixels per tile row
  int pixel_bytes;  // bytes from one staged pixel to the next
};

// Byte offset of reduction indices j .. j+7 from the window corner's staged
// pixel (at the group's first channel). Plain form of the view above.
CONVLAB_HOST_DEVICE constexpr int reduction_offset(int j, int T, const TapLayout& layout) {
  const int tap = j / T, r = tap / layout.S, s = tap % layout.S, t = j % T;
  return (r * layout.cols_in + s) * layout.pixel_bytes + t * kElementBytes;
}

// The same offset, walked one k-step (16 reduction indices) at a time with
// adds and compares only, for the k loop of a filter size known only at run
// time:
//
//   plain loop:  for (j = j0; ...; j += 16)  offset = reduction_offset(j, T, layout)
//   walked:      cursor = at(j0);  ...;  cursor.advance_k_step(layout)
//
// With T % 16 == 0 a k-step stays inside one tap (16 more channels, or the
// next tap's at the same offset: a lane of the upper k half walks channels
// 8, 24, ... of each tap); with T = 8 it is exactly two taps.
template <int kT> struct ReductionCursor {
  static_assert(kT == 8 || kT % kMmaK == 0, "T = 8: a k-step is two taps; T % 16 == 0: part of one tap");
  int s;       // tap column, 0..S-1
  int t;       // channel within the group, 0..T-1
  int offset;  // reduction_offset(j, T, layout)

  // The cursor at reduction index j (a multiple of 8).
  static CONVLAB_HOST_DEVICE constexpr ReductionCursor at(int j, const TapLayout& layout) {
    return {(j / kT) % layout.S, j % kT, reduction_offset(j, kT, layout)};
  }

  // j += 16.
  CONVLAB_HOST_DEVICE constexpr void advance_k_step(const TapLayout& layout) {
    if constexpr (kT == 8) {
      next_tap(layout);
      next_tap(layout);
    } else {
      t += kMmaK;
      offset += kMmaK * kElementBytes;
      if (t >= kT) {  // past the tap's last channel: the same channel offset (0 or 8) of the next tap
        t -= kT;
        offset -= kT * kElementBytes;
        next_tap(layout);
      }
    }
  }

  // (r, s) → (r, s + 1), or (r + 1, 0) at the end of a filter row.
  CONVLAB_HOST_DEVICE constexpr void next_tap(const TapLayout& layout) {
    offset += layout.pixel_bytes;
    if (++s == layout.S) {
      s = 0;
      offset += (layout.cols_in - layout.S) * layout.pixel_bytes;
    }
  }
};

// A position in a row-major range `width` columns wide, moved forward by a
// fixed number of places with two adds and one compare instead of a division
// per move:
//
//   plain loop:  for (i = i0; ...; i += places)  row = i / width, col = i % width
//   walked:      c = at(i0, width), step = at(places, width);  ...;  c.advance(step, width)
//
// One wrap per move is enough: col < width and step.col < width.
struct RowMajorCursor {
  int row, col;

  static CONVLAB_HOST_DEVICE constexpr RowMajorCursor at(int index, int width) {
    return {index / width, index % width};
  }

  CONVLAB_HOST_DEVICE constexpr void advance(const RowMajorCursor& step, int width) {
    row += step.row;
    col += step.col;
    if (col >= width) {
      col -= width;
      ++row;
    }
  }
};

// B of one n8 tile and one k-step, by ldmatrix.x2 (no .trans) from a staged
// [n][j] filter tile: lane l (< 16) supplies row n = l % 8 starting at
// reduction column 8·(l / 8), so matrix 0 = (n 0-7, k 0-7) is b0 and matrix
// 1 = (n 0-7, k 8-15) is b1 (gpu::mma_b_coord). Lanes 16-31 compute the same
// rows as lanes 0-15 (.x2 does not read the addresses of lanes 16-31).
// Returned as {n row, first k}.
CONVLAB_HOST_DEVICE constexpr MatrixCoord ldmatrix_x2_b_row_address(int lane) {
  return {lane % 8, 8 * ((lane / 8) % 2)};
}

}  // namespace convlab::gpu::grouped
