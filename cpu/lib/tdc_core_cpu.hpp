// cpu/lib/tdc_core_cpu.hpp — TDC's core-conv scheme on the CPU, for any tile.
//
// Contract: y = conv3x3(x, w), stride 1, pad 1, fp32 (ops/tucker_conv.hpp,
// TuckerCoreProblem): x [N,H,W,C] NHWC, w [C,3,3,K] CRSN, y [N,H,W,K] NHWC.
// Any tile with th, tw, tc >= 1 is correct (tiles may overhang the image and TC
// may exceed C). Used by cpu/tucker_core/12a_tdc_direct.cpp and by the tile
// sweep of tests/lesson12_tdc_test.cpp.
//
// The GPU kernel's loop nest, run by one thread per (image, spatial tile):
//
//   for each spatial tile (TH × TW output pixels)          ← GPU: blockIdx.x, blockIdx.z
//     y tile = 0
//     for each channel tile c0 (TC input channels)          ← GPU: blockIdx.y, summed by atomicAdd
//       cube[c][i][j] = x[n, h0−1+i, w0−1+j, c0+c]          (TH+2)×(TW+2)×TC, 0 outside the image
//       for each output pixel (oh, ow) of the tile, each k  ← GPU: one thread per k
//         y[oh, ow, k] += Σ_{c,r,s} cube[c][oh+r][ow+s] · w[c0+c][r][s][k]
//
// On the CPU the innermost loop runs over k (CRSN makes the K weights of one
// (c, r, s) contiguous, as it makes a warp's loads coalesced on the GPU), and the
// channel tiles of one spatial tile are summed by one thread in turn, so no two
// threads touch the same output.
#pragma once

#include <omp.h>

#include <algorithm>
#include <vector>

#include "ops/tucker_conv.hpp"

namespace convlab::cpu {

inline void tdc_core_cpu(const TuckerCoreProblem& p, const TdcTile& t, const float* x, const float* w, float* y,
                         bool parallel) {
  const int H = p.H, W = p.W, C = p.C, K = p.K;
  const int tiles_h = (H + t.th - 1) / t.th, tiles_w = (W + t.tw - 1) / t.tw;
  const int64_t tiles = int64_t(p.N) * tiles_h * tiles_w;
  const int rows = t.th + 2, cols = t.tw + 2;
#pragma omp parallel if (parallel)
  {
    std::vector<float> cube(size_t(rows) * cols * t.tc);
#pragma omp for schedule(dynamic)
    for (int64_t tile = 0; tile < tiles; ++tile) {
      const int n = int(tile / (int64_t(tiles_h) * tiles_w));
      const int h0 = int(tile / tiles_w % tiles_h) * t.th, w0 = int(tile % tiles_w) * t.tw;
      const int th = std::min(t.th, H - h0), tw = std::min(t.tw, W - w0);
      for (int oh = 0; oh < th; ++oh)
        for (int ow = 0; ow < tw; ++ow) std::fill_n(y + ((int64_t(n) * H + h0 + oh) * W + w0 + ow) * K, K, 0.f);
      for (int c0 = 0; c0 < C; c0 += t.tc) {
        const int tc = std::min(t.tc, C - c0);
        for (int i = 0; i < rows; ++i)
          for (int j = 0; j < cols; ++j) {
            const int h = h0 - 1 + i, ww = w0 - 1 + j;
            const bool inside = h >= 0 && h < H && ww >= 0 && ww < W;
            for (int c = 0; c < tc; ++c)
              cube[(size_t(c) * rows + i) * cols + j] = inside ? x[((int64_t(n) * H + h) * W + ww) * C + c0 + c] : 0.f;
          }
        for (int oh = 0; oh < th; ++oh)
          for (int ow = 0; ow < tw; ++ow) {
            float* out = y + ((int64_t(n) * H + h0 + oh) * W + w0 + ow) * K;
            for (int c = 0; c < tc; ++c)
              for (int r = 0; r < 3; ++r)
                for (int s = 0; s < 3; ++s) {
                  const float v = cube[(size_t(c) * rows + oh + r) * cols + ow + s];
                  const float* wk = w + ((int64_t(c0 + c) * 3 + r) * 3 + s) * K;
#pragma omp simd
                  for (int k = 0; k < K; ++k) out[k] += v * wk[k];
                }
          }
      }
    }
  }
}

}  // namespace convlab::cpu
