// cpu/lib/convfirst_cpu.hpp — pieces both CPU ConvFirst rungs share:
// the BlurPool stencil, the element-wise passes around the layers, and the
// grouped 3x3 conv of one pixel, of a few consecutive pixels and of a run along a row.
// Header-only, registers nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "ops/convfirst.hpp"
#include "core/registry.hpp"

namespace convlab::cpu_convfirst {

// BlurPool's filter (pooling.hpp): the binomial [1 2 1]ᵀ[1 2 1] / 16.
inline constexpr float kBinomial[3] = {1.0f, 2.0f, 1.0f};

// out[n, p, q, c] = Σ_{i,j<3} kBinomial[i]·kBinomial[j]/16 · in[n, 2p+i−1, 2q+j−1, c],
// zero outside the image (in [N, H, W, C], out [N, P, Q, C], P = ceil(H/2), Q likewise).
inline void blurpool(int N, int H, int W, int C, const float* in, float* out) {
  const int P = (H - 1) / 2 + 1, Q = (W - 1) / 2 + 1;
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < N; ++n)
    for (int p = 0; p < P; ++p)
      for (int q = 0; q < Q; ++q) {
        float* o = out + ((std::ptrdiff_t(n) * P + p) * Q + q) * C;
        for (int c = 0; c < C; ++c) o[c] = 0.0f;
        for (int i = 0; i < 3; ++i) {
          const int h = 2 * p + i - 1;
          if (h < 0 || h >= H) continue;
          for (int j = 0; j < 3; ++j) {
            const int w = 2 * q + j - 1;
            if (w < 0 || w >= W) continue;
            const float tap = kBinomial[i] * kBinomial[j] / 16.0f;
            const float* src = in + ((std::ptrdiff_t(n) * H + h) * W + w) * C;
#pragma omp simd
            for (int c = 0; c < C; ++c) o[c] += tap * src[c];
          }
        }
      }
}

// m[i, c] += bias[c] (+ add[i, c] when add != nullptr), rows × cols, dense.
inline void add_rows(int64_t rows, int cols, float* m, const float* bias, const float* add) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    float* row = m + i * cols;
    const float* extra = add ? add + i * cols : nullptr;
#pragma omp simd
    for (int c = 0; c < cols; ++c) row[c] += (bias ? bias[c] : 0.0f) + (extra ? extra[c] : 0.0f);
  }
}

// The conv weights regrouped for SIMD over a group's 8 outputs:
//   wt[g][tap][ci][k] = conv_w[g·8 + k][tap][ci]      (tap = r·3 + s; KRSC has [k][r][s][ci])
inline constexpr int kGroupWidth = 8;
inline std::size_t conv_weight_floats(const ConvFirstProblem& p) { return std::size_t(p.C) * 9 * kGroupWidth; }
inline void transpose_conv_weights(const ConvFirstProblem& p, const float* w, float* wt) {
  for (int k = 0; k < p.C; ++k) {
    const int g = k / kGroupWidth, kk = k % kGroupWidth;
    for (int tap = 0; tap < 9; ++tap)
      for (int ci = 0; ci < kGroupWidth; ++ci)
        wt[((std::size_t(g) * 9 + tap) * kGroupWidth + ci) * kGroupWidth + kk] =
            w[(std::size_t(k) * 9 + tap) * kGroupWidth + ci];
  }
}

// t[0..C) = conv_b + the grouped 3x3 conv (pad 1, stride 1) of image `image`
// ([H, W, C]) at (h, w); with wt as above. Plain loop:
//   for k: t[k] = b[k] + Σ_{r,s in image} Σ_ci x[h+r−1, w+s−1, g·8 + ci] · w[k, r, s, ci]   (g = k / 8)
// Here the 8 outputs of a group are one vector, each input value a broadcast.
inline void conv_pixel(const ConvFirstProblem& p, const float* image, const float* wt, const float* conv_b, int h,
                       int w, float* t) {
  for (int g = 0; g < p.groups(); ++g) {
    float acc[kGroupWidth];
    for (int k = 0; k < kGroupWidth; ++k) acc[k] = conv_b[g * kGroupWidth + k];
    for (int r = 0; r < 3; ++r) {
      const int ih = h + r - 1;
      if (ih < 0 || ih >= p.H) continue;
      for (int s = 0; s < 3; ++s) {
        const int iw = w + s - 1;
        if (iw < 0 || iw >= p.W) continue;
        const float* src = image + (std::ptrdiff_t(ih) * p.W + iw) * p.C + g * kGroupWidth;
        const float* wtap = wt + (std::size_t(g) * 9 + r * 3 + s) * kGroupWidth * kGroupWidth;
        for (int ci = 0; ci < kGroupWidth; ++ci) {
          const float xv = src[ci];
#pragma omp simd
          for (int k = 0; k < kGroupWidth; ++k) acc[k] += xv * wtap[ci * kGroupWidth + k];
        }
      }
    }
    for (int k = 0; k < kGroupWidth; ++k) t[g * kGroupWidth + k] = acc[k];
  }
}

// The same conv for up to kRunPixels consecutive pixels m0 .. m0+count of the flattened
// N·H·W index (stride 1; they may cross rows and images), t row i for pixel m0 + i, ld = C.
// conv_pixel keeps one group's 8 outputs in flight: one chain of 72 dependent FMAs per
// group, each with its own weight load. Here the pixels share every weight vector, so a
// group is kRunPixels independent chains and one weight load per kRunPixels FMAs (lesson
// 06's 06b scheme):
//   for g:  acc[i][:] = b[g·8 ..];  for tap, ci:  w8 = wt[g][tap][ci][:];  for i: acc[i] += x_i[ci]·w8
// A tap outside the image reads a row of zeros instead of x: no branch in the ci loop.
inline constexpr int kRunPixels = 8;
typedef float Vec8 __attribute__((vector_size(32)));  // one AVX register; kept in registers when unrolled
static_assert(kGroupWidth == 8, "one group's outputs are one Vec8");

// Every pixel's accumulators of group g start at the group's 8 biases.
inline void start_from_bias(Vec8 (&acc)[kRunPixels], const float* conv_b, int g) {
  Vec8 bias;
  std::memcpy(&bias, conv_b + g * kGroupWidth, sizeof bias);
#pragma GCC unroll 8
  for (int i = 0; i < kRunPixels; ++i) acc[i] = bias;
}

inline void conv_pixels(const ConvFirstProblem& p, const float* x, const float* wt, const float* conv_b, int64_t m0,
                        int count, float* t) {
  static const float kZeroRow[kGroupWidth] = {};
  const int C = p.C, H = p.H, W = p.W;
  const int64_t plane = int64_t(H) * W;
  const float* image[kRunPixels];
  int hh[kRunPixels], ww[kRunPixels];
  for (int i = 0; i < kRunPixels; ++i) {  // lanes past count repeat the last pixel and are not stored
    const int64_t m = m0 + std::min(i, count - 1), n = m / plane;
    const int rem = int(m - n * plane);
    image[i] = x + n * plane * C;
    hh[i] = rem / W;
    ww[i] = rem % W;
  }
  for (int g = 0; g < p.groups(); ++g) {
    Vec8 acc[kRunPixels];
    start_from_bias(acc, conv_b, g);
    for (int tap = 0; tap < 9; ++tap) {
      const int r = tap / 3, s = tap % 3;
      const float* src[kRunPixels];
#pragma GCC unroll 8
      for (int i = 0; i < kRunPixels; ++i) {
        const int ih = hh[i] + r - 1, iw = ww[i] + s - 1;
        src[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? image[i] + (std::ptrdiff_t(ih) * W + iw) * C + g * kGroupWidth
                                                          : kZeroRow;
      }
      const float* wtap = wt + (std::size_t(g) * 9 + tap) * kGroupWidth * kGroupWidth;
#pragma GCC unroll 8
      for (int ci = 0; ci < kGroupWidth; ++ci) {
        Vec8 w8;
        std::memcpy(&w8, wtap + ci * kGroupWidth, sizeof w8);
#pragma GCC unroll 8
        for (int i = 0; i < kRunPixels; ++i) acc[i] += src[i][ci] * w8;
      }
    }
    for (int i = 0; i < count; ++i) std::memcpy(t + std::ptrdiff_t(i) * C + g * kGroupWidth, &acc[i], sizeof(Vec8));
  }
}

// kRunPixels pixels of one image row, columns w0 .. w0+8 of row h of `image` ([H, W, C]),
// t row i for column w0 + i, ld = C. In conv_pixels every product has its own broadcast of
// an x value. But along a row the three taps (r, 0..2) of neighbouring outputs read the
// same x: x column w0 + j − 1 (j = 0 .. 9) is the input of output i = j − s through tap
// (r, s). So one broadcast feeds up to three FMAs, with the three weight vectors of the
// tap row (10 broadcasts per 24 FMAs instead of 24):
//   for g:  acc[i][:] = b[g·8 ..]
//     for r with row h+r−1 in the image, ci:  w_s = wt[g][r·3 + s][ci][:]  (s < 3)
//       for j < 10 with column w0+j−1 in the image:  xv = x[h+r−1, w0+j−1, g·8 + ci]
//         acc[j − s] += xv·w_s  for each s with 0 ≤ j − s < 8
// No bounds test inside a row but its two end columns (j = 0, 9), tested once per row.
inline void conv_row_run(const ConvFirstProblem& p, const float* image, const float* wt, const float* conv_b, int h,
                         int w0, float* t) {
  constexpr int R = kRunPixels;
  const int C = p.C, W = p.W;
  const bool left = w0 > 0, right = w0 + R < W;  // columns w0 − 1 and w0 + 8 inside the image
  for (int g = 0; g < p.groups(); ++g) {
    Vec8 acc[R];
    start_from_bias(acc, conv_b, g);
    for (int r = 0; r < 3; ++r) {
      const int ih = h + r - 1;
      if (ih < 0 || ih >= p.H) continue;
      const float* row = image + (std::ptrdiff_t(ih) * W + w0) * C + g * kGroupWidth;  // output i's centre column: row + i·C
      const float* w_row = wt + (std::size_t(g) * 9 + r * 3) * kGroupWidth * kGroupWidth;  // taps (r, 0), (r, 1), (r, 2)
#pragma GCC unroll 8
      for (int ci = 0; ci < kGroupWidth; ++ci) {
        Vec8 w_s[3];
        for (int s = 0; s < 3; ++s) std::memcpy(&w_s[s], w_row + (s * kGroupWidth + ci) * kGroupWidth, sizeof(Vec8));
        if (left) acc[0] += row[-C + ci] * w_s[0];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {  // x column w0 + i: output i + 1 through tap s = 0, i through 1, i − 1 through 2
          const float xv = row[std::ptrdiff_t(i) * C + ci];
          if (i + 1 < R) acc[i + 1] += xv * w_s[0];
          acc[i] += xv * w_s[1];
          if (i > 0) acc[i - 1] += xv * w_s[2];
        }
        if (right) acc[R - 1] += row[std::ptrdiff_t(R) * C + ci] * w_s[2];
      }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) std::memcpy(t + std::ptrdiff_t(i) * C + g * kGroupWidth, &acc[i], sizeof(Vec8));
  }
}

// The conv for `count` consecutive pixels m0 .. m0+count of the flattened N·H·W index
// (stride 1), t row i for pixel m0 + i, ld = C: cut at row ends, each row piece in runs of
// kRunPixels by conv_row_run, its last few pixels (fewer than kRunPixels) by conv_pixels.
inline void conv_run(const ConvFirstProblem& p, const float* x, const float* wt, const float* conv_b, int64_t m0,
                     int count, float* t) {
  const int C = p.C, W = p.W;
  const int64_t plane = int64_t(p.H) * W;
  for (int i = 0; i < count;) {
    const int64_t m = m0 + i, n = m / plane;
    const int rem = int(m - n * plane), h = rem / W, w = rem % W;
    const int in_row = std::min(count - i, W - w);  // pixels left in this row of the tile
    if (in_row >= kRunPixels) {
      conv_row_run(p, x + n * plane * C, wt, conv_b, h, w, t + std::ptrdiff_t(i) * C);
      i += kRunPixels;
    } else {
      conv_pixels(p, x, wt, conv_b, m, in_row, t + std::ptrdiff_t(i) * C);
      i += in_row;
    }
  }
}

// A rung composed of other rungs (10a) calls them through the registry (core/registry.hpp).
template <class P> const Variant<P>& required_variant(const char* op, const char* name) {
  return convlab::required_variant<P>(Device::cpu, "convfirst", op, name);
}

}  // namespace convlab::cpu_convfirst
