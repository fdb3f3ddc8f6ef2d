// tests/lesson06_grouped_test.cpp — the index arithmetic of the grouped tensor-core kernel, on the host.
//
// The registry tests run gpu/conv2d/06b_grouped against the reference, on a
// GPU. Whether its ldmatrix instructions read the right bytes is integer
// arithmetic (gpu/lib/grouped_indexing.cuh), checked here without one:
//
//   1. ReductionCursor, walked one k-step (16 reduction indices) at a time
//      with additions, always equals the plain decode reduction_offset.
//   2. The addresses the kernel hands ldmatrix.x4 (lane l: m-tile row l % 16
//      at its window corner, plus the cursor's offset of k half l / 16)
//      deliver, through the instruction model of gpu/lib/mma.cuh, exactly
//      the mma A fragment of the im2col view
//        A[m, j] = tile[corner(m) + r·cols_in + s][group·T + t],  j = (r·S + s)·T + t
//      for every lane, register and half of every k-step; when R·S·T % 16
//      == 8 the last k-step loads only its lower half (ldmatrix.x2).
//   3. ldmatrix.x2 at ldmatrix_x2_b_row_address of a staged [n][j] filter
//      tile delivers the mma B fragment.
//   4. RowMajorCursor walks a row-major range as division would.
#include <vector>

#include "gpu/lib/mma.cuh"
#include "gpu/lib/grouped_indexing.cuh"
#include "tests/catch_compat.hpp"

namespace convlab::gpu::grouped {
namespace {

constexpr int kPixelBytes = 144;  // the kernel's staged pixel stride (64 fp16 channels + 16 bytes)

template <int kT> void check_cursor(int R, int S, int cols_in) {
  const TapLayout layout{S, cols_in, kPixelBytes};
  const int depth = R * S * kT;
  for (int half = 0; half < 2; ++half) {
    ReductionCursor<kT> cursor = ReductionCursor<kT>::at(8 * half, layout);
    for (int j = 8 * half; j < depth; j += kMmaK, cursor.advance_k_step(layout)) {
      INFO("T " << kT << " R " << R << " S " << S << " cols_in " << cols_in << " j " << j);
      CHECK(cursor.offset == reduction_offset(j, kT, layout));
      CHECK(cursor.s == (j / kT) % S);
      CHECK(cursor.t == j % kT);
    }
  }
}

TEST_CASE("lesson 06: the reduction cursor walks the same offsets as the plain decode", "[mma][cpu][lesson06]") {
  for (const int S : {1, 2, 3, 5, 7})
    for (const int R : {1, 2, 3, 5})
      for (const int cols_in : {S, 30, 34}) {
        check_cursor<8>(R, S, cols_in);
        check_cursor<16>(R, S, cols_in);
        check_cursor<32>(R, S, cols_in);
        check_cursor<64>(R, S, cols_in);
      }
}

// One k-step of the kernel, simulated: the lanes' addresses, then what
// ldmatrix hands each (lane, register, half), decoded back into (staged
// pixel, channel) and compared with the im2col view.
template <int kT> void check_a_fragments(int R, int S, int stride, int cols_in, int tile_q, int group) {
  const TapLayout layout{S, cols_in, kPixelBytes};
  const int depth = R * S * kT;
  // The staged pixel under tap (0, 0) of m-tile row m: pixels of a tile_q-wide
  // output tile numbered row by row, so a 16-row m-tile wraps rows when tile_q < 16.
  const auto corner = [&](int m) { return (m / tile_q * cols_in + m % tile_q) * stride; };
  std::vector<ReductionCursor<kT>> cursor;
  for (int lane = 0; lane < 32; ++lane)
    cursor.push_back(ReductionCursor<kT>::at(ldmatrix_x4_row_address(lane).col, layout));

  for (int k_step = 0; 16 * k_step < depth; ++k_step) {
    const bool lower_half_only = 16 * k_step + 8 == depth;  // the kernel's ldmatrix.x2 step
    int address[32];
    for (int lane = 0; lane < 32; ++lane)
      address[lane] = corner(ldmatrix_x4_row_address(lane).row) * kPixelBytes + group * kT * 2 + cursor[lane].offset;
    for (int lane = 0; lane < 32; ++lane)
      for (int reg = 0; reg < (lower_half_only ? 2 : 4); ++reg)
        for (int half = 0; half < 2; ++half) {
          const LdmatrixSource src = ldmatrix_source(lane, reg, half);
          const int byte = address[src.lane] + 2 * src.element;
          const MatrixCoord mk = mma_a_coord(lane, reg, half);  // {m, k} of the fragment element
          const int j = 16 * k_step + mk.col;
          const int tap = j / kT, r = tap / S, s = tap % S, t = j % kT;
          INFO("T " << kT << " R " << R << " S " << S << " stride " << stride << " k-step " << k_step << " lane "
                    << lane << " reg " << reg << " half " << half);
          REQUIRE(j < depth);
          CHECK(byte / kPixelBytes == corner(mk.row) + r * cols_in + s);
          CHECK(byte % kPixelBytes == 2 * (group * kT + t));
        }
    for (auto& c : cursor) c.advance_k_step(layout);
  }
}

TEST_CASE("lesson 06: the grouped kernel's ldmatrix.x4 addresses deliver the im2col view's A fragments",
          "[mma][cpu][lesson06]") {
  struct Case {
    int R, S, stride;
  };
  for (const Case c : {Case{3, 3, 1}, Case{3, 3, 2}, Case{1, 1, 1}, Case{5, 5, 1}, Case{1, 3, 1}, Case{2, 1, 3}})
    for (const int tile_q : {5, 16, 28, 32}) {
      const int cols_in = (tile_q - 1) * c.stride + c.S;
      check_a_fragments<8>(c.R, c.S, c.stride, cols_in, tile_q, 7);   // last of 8 groups in the slab
      check_a_fragments<16>(c.R, c.S, c.stride, cols_in, tile_q, 3);
      check_a_fragments<32>(c.R, c.S, c.stride, cols_in, tile_q, 1);
      check_a_fragments<64>(c.R, c.S, c.stride, cols_in, tile_q, 0);
    }
}

TEST_CASE("lesson 06: ldmatrix.x2 of a staged [n][j] filter tile delivers the mma B fragment", "[mma][cpu][lesson06]") {
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 2; ++reg)
      for (int half = 0; half < 2; ++half) {
        const LdmatrixSource src = ldmatrix_source(lane, reg, half);
        REQUIRE(src.lane < 16);  // .x2 reads the addresses of lanes 0-15 only
        const MatrixCoord row = ldmatrix_x2_b_row_address(src.lane);  // {n, first k}
        const MatrixCoord want = mma_b_coord(lane, reg, half);       // {k, n}
        INFO("lane " << lane << " reg " << reg << " half " << half);
        CHECK(MatrixCoord{row.col + src.element, row.row} == want);
      }
}

TEST_CASE("lesson 06: RowMajorCursor moves like a division", "[cpu][lesson06]") {
  for (int width = 1; width <= 40; ++width)
    for (const int places : {1, 7, 16, 32, 256})
      for (int start = 0; start < 3 * width; start += 5) {
        const RowMajorCursor step = RowMajorCursor::at(places, width);
        RowMajorCursor cursor = RowMajorCursor::at(start, width);
        for (int index = start; index < start + 40 * places; index += places, cursor.advance(step, width)) {
          INFO("width " << width << " places " << places << " index " << index);
          CHECK(cursor.row == index / width);
          CHECK(cursor.col == index % width);
        }
      }
}

}  // namespace
}  // namespace convlab::gpu::grouped
