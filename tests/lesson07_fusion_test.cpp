// tests/lesson07_fusion_test.cpp — lesson 07's index arithmetic, checked on the host.
//
// The registry tests run every conv_bias_relu_pool variant against the
// reference, but the GPU rungs only run where there is a GPU. The two facts
// the fused GPU kernel rests on are pure arithmetic, so they are checked here:
//
//   1. gpu::window_order numbers every pixel that floor 2x2 pooling reads
//      exactly once, four consecutive GEMM rows being one window, and the
//      window index equal to the pooled output's NHWC pixel index.
//   2. In the mma.m16n8k16 accumulator layout (gpu::mma_c_coord), the lanes
//      {l, l^4, l^8, l^12} holding register i hold exactly the four rows of one
//      window (same column): what the two __shfl_xor_sync of
//      gpu/conv_pool/02_fused.cu reduce over; and one lane of the four has
//      g % 4 == 0 (the one that stores).
#include <set>
#include <tuple>
#include <vector>

#include "gpu/common/conv_geometry.cuh"
#include "gpu/common/mma.cuh"
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

TEST_CASE("lesson 07: lanes l, l^4, l^8, l^12 of an mma accumulator hold one 2x2 window", "[mma][cpu][lesson07]") {
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const gpu::MatrixCoord mine = gpu::mma_c_coord(lane, i);
      std::set<int> rows;
      int storing = 0;
      for (int flip : {0, 4, 8, 12}) {
        const int other = lane ^ flip;
        const gpu::MatrixCoord c = gpu::mma_c_coord(other, i);
        CHECK(c.col == mine.col);            // same output channel
        CHECK(c.row / 4 == mine.row / 4);    // same window (rows 4w .. 4w+3 in window order)
        rows.insert(c.row);
        if ((other / 4) % 4 == 0) ++storing;
      }
      CHECK(rows.size() == 4u);              // all four rows of the window
      CHECK(storing == 1);                   // exactly one of them stores
    }
}

}  // namespace
}  // namespace convlab
