// tests/lesson07_fusion_test.cpp — lesson 07's index arithmetic, checked on the host.
//
// The registry tests run every conv_bias_relu_pool variant against the
// reference, but the GPU rungs only run where there is a GPU. The facts the
// fused GPU kernels rest on are pure arithmetic, so they are checked here:
//
//   1. gpu::window_order (fp32 kernel) numbers every pixel that floor 2x2
//      pooling reads exactly once, four consecutive GEMM rows being one
//      window, and the window index equal to the pooled output's NHWC pixel
//      index.
//   2. gpu::warp_window_order (tensor-core kernel) numbers the same pixels,
//      once each, within GEMM rows rounded up to whole 64-row blocks; the
//      rows past the last window get a pixel whose every tap is padding.
//   3. In the mma.m16n8k16 accumulator layout (gpu::mma_c_coord), the rows a
//      lane with group g holds in 64-row block b — its four m16 tiles, two
//      halves — are the four corners of windows 16b + 2g and 16b + 2g + 1,
//      m16 tile mi being corner mi: what gpu/conv_pool/07b_fused.cu's epilogue
//      pools without leaving the lane.
#include <cstdint>
#include <set>
#include <tuple>
#include <vector>

#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/mma.cuh"
#include "tests/catch_compat.hpp"

namespace convlab {
namespace {

TEST_CASE("lesson 07: window_order visits every pooled pixel once, windows in NHWC order", "[conv_bias_relu_pool][cpu][lesson07]") {
  for (const ConvProblem& p : {ConvProblem{2, 5, 7, 3, 5, 3, 3, 1, 1, 1}, ConvProblem{1, 8, 8, 4, 4, 1, 1, 1, 0, 1},
                               ConvProblem{3, 13, 9, 8, 12, 3, 3, 2, 1, 1}}) {
    const gpu::ConvGeometry cg = gpu::geometry_of(p);
    const int P2 = cg.P / 2, Q2 = cg.Q / 2, rows = 4 * p.N * P2 * Q2;
    std::set<std::tuple<int, int, int>> seen;
    for (int m = 0; m < rows; ++m) {
      const gpu::OutputPixel px = gpu::window_order(cg, m);
      REQUIRE(px.n >= 0);
      REQUIRE(px.n < p.N);
      REQUIRE(px.p < 2 * P2);  // never the odd last row / column
      REQUIRE(px.q < 2 * Q2);
      // window m / 4 is pooled pixel (n, p / 2, q / 2) in NHWC order
      CHECK((px.n * P2 + px.p / 2) * Q2 + px.q / 2 == m / 4);
      // corner m % 4 = 2a + b
      CHECK(px.p % 2 == (m % 4) / 2);
      CHECK(px.q % 2 == m % 2);
      seen.insert({px.n, px.p, px.q});
    }
    CHECK(int(seen.size()) == rows);  // no pixel twice
    // pixel_order is lesson 04's m = (n·P + p)·Q + q
    for (int m = 0; m < p.N * cg.P * cg.Q; ++m) {
      const gpu::OutputPixel px = gpu::pixel_order(cg, m);
      CHECK((px.n * cg.P + px.p) * cg.Q + px.q == m);
    }
  }
}

// Shapes with a partial last 64-row block (12, 18 and 35 windows), a whole one
// (16), and strides 3 with and without padding (the padding rows' pixel).
const std::vector<ConvProblem> kWarpWindowShapes = {
    ConvProblem{2, 5, 7, 3, 5, 3, 3, 1, 1, 1},  ConvProblem{1, 8, 8, 4, 4, 1, 1, 1, 0, 1},
    ConvProblem{3, 13, 9, 8, 12, 3, 3, 2, 1, 1}, ConvProblem{1, 14, 10, 4, 4, 3, 3, 1, 1, 1},
    ConvProblem{1, 9, 9, 1, 1, 3, 3, 3, 0, 1},   ConvProblem{2, 11, 12, 1, 1, 5, 4, 3, 2, 1}};

// GEMM rows in warp_window_order: 4 per window, rounded up to whole blocks.
int warp_window_rows(const gpu::ConvGeometry& cg) {
  const int blocks = (4 * gpu::window_count(cg) + gpu::kWarpWindowRows - 1) / gpu::kWarpWindowRows;
  return blocks * gpu::kWarpWindowRows;
}

TEST_CASE("lesson 07: warp_window_order visits every pooled pixel once; padding rows read only padding",
          "[conv_bias_relu_pool][cpu][lesson07]") {
  for (const ConvProblem& p : kWarpWindowShapes) {
    const gpu::ConvGeometry cg = gpu::geometry_of(p);
    const int windows = gpu::window_count(cg), rows = warp_window_rows(cg);
    std::set<std::tuple<int, int, int>> seen;
    int padding_rows = 0;
    for (int m = 0; m < rows; ++m) {
      const gpu::OutputPixel px = gpu::warp_window_order(cg, m);
      const int block = m / 64, corner = m % 64 / 16, h = m % 16 / 8, g = m % 8;
      const int window = 16 * block + 2 * g + h;
      if (window < windows) {
        // the same pixel as window_order's row for this window and corner (checked above)
        const gpu::OutputPixel expected = gpu::window_order(cg, 4 * window + corner);
        CHECK(px.n == expected.n);
        CHECK(px.p == expected.p);
        CHECK(px.q == expected.q);
        seen.insert({px.n, px.p, px.q});
        continue;
      }
      // A padding row: the kernel's loader reads tap (r, s) only if it lies in the image.
      ++padding_rows;
      const int ih0 = px.p * cg.stride - cg.pad, iw0 = px.q * cg.stride - cg.pad;
      for (int r = 0; r < cg.R; ++r)
        for (int s = 0; s < cg.S; ++s) {
          const bool inside = 0 <= ih0 + r && ih0 + r < cg.H && 0 <= iw0 + s && iw0 + s < cg.W;
          CHECK_FALSE(inside);
        }
      // Its offset into x (the loader's row_offset, group 0) is no lower than pixel (0, 0, 0)'s
      // and under (2W + 2·pad)·C: within what igemm_tc::fits allows, no int overflow.
      const int64_t row_offset = ((int64_t(px.n) * cg.H + ih0) * cg.W + iw0) * cg.C;
      CHECK(row_offset >= -int64_t(cg.pad) * (cg.W + 1) * cg.C);
      CHECK(row_offset < int64_t(2 * cg.W + 2 * cg.pad) * cg.C);
    }
    CHECK(int(seen.size()) == 4 * windows);  // every pooled pixel's four corners, none twice
    CHECK(padding_rows == rows - 4 * windows);
    CHECK(padding_rows < gpu::kWarpWindowRows);  // only the last block is partial
  }
}

TEST_CASE("lesson 07: a lane's mma accumulators hold whole windows in warp_window_order", "[mma][cpu][lesson07]") {
  for (const ConvProblem& p : kWarpWindowShapes) {
    const gpu::ConvGeometry cg = gpu::geometry_of(p);
    const int windows = gpu::window_count(cg), blocks = warp_window_rows(cg) / 64;
    for (int block = 0; block < blocks; ++block)  // a warp's rows: 64·block + (0 .. 63)
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 4; ++i) {             // accumulator register c_i of every m16 tile
          const int h = i / 2, window = 16 * block + 2 * (lane / 4) + h;
          if (window >= windows) continue;
          for (int mi = 0; mi < 4; ++mi) {
            const int m = 64 * block + 16 * mi + gpu::mma_c_coord(lane, i).row;
            const gpu::OutputPixel px = gpu::warp_window_order(cg, m);
            const gpu::OutputPixel corner = gpu::window_order(cg, 4 * window + mi);  // corner mi of the window
            CHECK(px.n == corner.n);
            CHECK(px.p == corner.p);
            CHECK(px.q == corner.q);
          }
        }
  }
}

}  // namespace
}  // namespace convlab
