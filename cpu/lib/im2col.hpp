// cpu/lib/im2col.hpp — lesson 02's patch matrix, shared by the CPU rungs
// 02a_im2col_naive_gemm and 02b_im2col_gemm (header-only, registers nothing).
//
// im2col ("image to columns") turns a convolution into one matrix product.
// For group g, row i = (n, p, q) of the patch matrix holds the R·S·T inputs
// that output pixel (n, p, q) multiplies, in the same (r, s, t) order as a
// row of KRSC weights:
//
//   patches_g[i][(r·S + s)·T + t] = x[n, p·stride + r − pad, q·stride + s − pad, g·T + t]
//                                   (0 where the position falls in the padding)
//
//   patches_g: [N·P·Q, R·S·T] row-major        w_g: rows g·K/G … of KRSC = [K/G, R·S·T] row-major
//
// so that, per group,
//
//   y[i, g·K/G + k] = Σ_j patches_g[i][j] · w_g[k][j]      i.e.  y_g = patches_g · w_gᵀ
//
// and because y is NHWC — [N·P·Q, K] row-major — y_g is the column slice
// g·K/G … (g+1)·K/G − 1 of that matrix (leading dimension K): the product
// lands in the output layout with no reshuffle. KRSC already is wᵀ stored
// row-major; no transpose of the weights is needed either.
//
// The price is the patch matrix itself: every interior input value appears
// in R·S windows (for stride 1), so the buffer is about R·S times the input —
// N·P·Q·R·S·T floats per group. One group's matrix is built at a time and
// the buffer reused for the next, so 03's workspace is one group's worth;
// 04 goes further and builds it a slab of rows at a time (im2col_rows).
//
// 1x1, stride 1, pad 0: row i of the patch matrix would be pixel i's T
// channels of group g — exactly x viewed as [N·H·W, C] from column g·T on,
// leading dimension C. Nothing to copy: the variants use x itself (a view),
// and their workspace for the patch matrix is 0.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ops/conv2d.hpp"

namespace convlab::cpu_conv {

// True when x itself, viewed as [N·H·W, C], is every group's patch matrix.
inline bool patch_matrix_is_a_view(const ConvProblem& p) {
  return p.R == 1 && p.S == 1 && p.stride == 1 && p.pad == 0;
}

inline int64_t patch_rows(const ConvProblem& p) { return int64_t(p.N) * p.P() * p.Q(); }  // N·P·Q
inline int64_t patch_cols(const ConvProblem& p) { return int64_t(p.R) * p.S * p.T(); }    // R·S·T

// Floats of one group's patch matrix, or 0 when it is a view of x.
inline std::size_t patch_matrix_floats(const ConvProblem& p) {
  return patch_matrix_is_a_view(p) ? 0 : std::size_t(patch_rows(p) * patch_cols(p));
}

// Row i = (n, oh, ow) of group g's patch matrix: R·S runs of T channels, each
// either a contiguous copy out of NHWC x (the T channels of one input pixel
// are adjacent) or zeros for a tap in the padding. Plain form:
//
//   for r, s, t:  row[(r·S + s)·T + t] = inside(ih, iw) ? x[n, ih, iw, g·T + t] : 0
inline void im2col_row(const ConvProblem& p, const float* x, int g, int n, int oh, int ow, float* row) {
  const int T = p.T();
  for (int r = 0; r < p.R; ++r) {
    const int ih = oh * p.stride + r - p.pad;
    for (int s = 0; s < p.S; ++s, row += T) {
      const int iw = ow * p.stride + s - p.pad;
      if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) {
        std::fill(row, row + T, 0.f);  // padding is written explicitly: the buffer holds old data
      } else {
        const float* src = x + ((int64_t(n) * p.H + ih) * p.W + iw) * p.C + int64_t(g) * T;
        std::memcpy(row, src, sizeof(float) * T);
      }
    }
  }
}

// Rows [first, first + count) of group g's patch matrix, [count, R·S·T]
// row-major, into `out` (row `first` lands at out[0]). Rows are independent;
// with `parallel` they are shared among OpenMP threads (call from outside a
// parallel region). The whole matrix is first = 0, count = patch_rows(p).
inline void im2col_rows(const ConvProblem& p, const float* x, int g, int64_t first, int64_t count, float* out,
                        bool parallel) {
  const int P = p.P(), Q = p.Q();
  const int64_t cols = patch_cols(p);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t r = 0; r < count; ++r) {
    const int64_t i = first + r;                          // i = (n·P + oh)·Q + ow
    const int n = int(i / (int64_t(P) * Q)), oh = int(i / Q % P), ow = int(i % Q);
    im2col_row(p, x, g, n, oh, ow, out + r * cols);
  }
}

}  // namespace convlab::cpu_conv
