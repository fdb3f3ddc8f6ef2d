// tests/mma_layout_test.cpp — the tensor-core index maps of gpu/lib/mma.cuh, checked on the host.
//
// The GEMM rungs 03n and 03o can only run on a GPU, but the index arithmetic
// that makes them right or wrong (which lane holds which fragment element,
// what ldmatrix delivers for the addresses we hand it, the XOR swizzle, the
// tile rasterisation) is plain integer math. Here it is checked exhaustively,
// without a GPU: the fragment maps are bijections, ldmatrix (modelled from
// the PTX ISA's description) delivers exactly the mma fragments, the swizzle
// permutes chunks within their 128-byte line and gives every ldmatrix phase
// 8 distinct bank groups, and the grouped raster visits every tile once.
#include <set>
#include <utility>
#include <vector>

#include "gpu/lib/mma.cuh"
#include "tests/catch_compat.hpp"

namespace convlab::gpu {
namespace {

TEST_CASE("mma m16n8k16 fragments: every element held by exactly one (lane, register, half)", "[mma][cpu]") {
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const MatrixCoord x = mma_a_coord(lane, reg, half);
        CHECK((x.row >= 0 && x.row < 16 && x.col >= 0 && x.col < 16));
        a.insert({x.row, x.col});
      }
    for (int reg = 0; reg < 2; ++reg)
      for (int half = 0; half < 2; ++half) {
        const MatrixCoord x = mma_b_coord(lane, reg, half);  // {k, n}
        CHECK((x.row >= 0 && x.row < 16 && x.col >= 0 && x.col < 8));
        b.insert({x.row, x.col});
      }
    for (int i = 0; i < 4; ++i) {
      const MatrixCoord x = mma_c_coord(lane, i);
      CHECK((x.row >= 0 && x.row < 16 && x.col >= 0 && x.col < 8));
      c.insert({x.row, x.col});
    }
  }
  CHECK(a.size() == 16 * 16);
  CHECK(b.size() == 16 * 8);
  CHECK(c.size() == 16 * 8);
}

TEST_CASE("mma fragments: the PTX ISA's figures, spot-checked", "[mma][cpu]") {
  // Lane 0 holds A rows 0 and 8, columns 0,1 and 8,9; lane 5 (g=1, t=1) row 1, columns 2,3.
  CHECK(mma_a_coord(0, 0, 0) == MatrixCoord{0, 0});
  CHECK(mma_a_coord(0, 1, 1) == MatrixCoord{8, 1});
  CHECK(mma_a_coord(0, 2, 0) == MatrixCoord{0, 8});
  CHECK(mma_a_coord(0, 3, 1) == MatrixCoord{8, 9});
  CHECK(mma_a_coord(5, 0, 0) == MatrixCoord{1, 2});
  CHECK(mma_a_coord(31, 3, 1) == MatrixCoord{15, 15});
  // B: lane 5 holds k = 2,3 (b0) and 10,11 (b1) of column 1.
  CHECK(mma_b_coord(5, 0, 0) == MatrixCoord{2, 1});
  CHECK(mma_b_coord(5, 1, 1) == MatrixCoord{11, 1});
  // C: lane 5 holds (1, 2), (1, 3), (9, 2), (9, 3).
  CHECK(mma_c_coord(5, 0) == MatrixCoord{1, 2});
  CHECK(mma_c_coord(5, 3) == MatrixCoord{9, 3});
}

TEST_CASE("ldmatrix.x4 on a row-major A tile delivers the mma A fragment", "[mma][cpu]") {
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        INFO("lane " << lane << " reg " << reg << " half " << half);
        CHECK(ldmatrix_x4_source(lane, reg, half, /*trans=*/false) == mma_a_coord(lane, reg, half));
      }
}

TEST_CASE("ldmatrix.x4.trans on a row-major B tile delivers the B fragments of two n8 tiles", "[mma][cpu]") {
  // Registers 0,1 -> b0,b1 of columns 0-7; registers 2,3 -> b0,b1 of columns 8-15.
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const MatrixCoord want = mma_b_coord(lane, reg & 1, half);  // {k, n} within one n8 tile
        const MatrixCoord got = ldmatrix_x4_source(lane, reg, half, /*trans=*/true);
        INFO("lane " << lane << " reg " << reg << " half " << half);
        CHECK(got == MatrixCoord{want.row, want.col + 8 * (reg >> 1)});
      }
}

TEST_CASE("ldmatrix_source (any address map) agrees with ldmatrix_x4_source (the 16x16 tile map)", "[mma][cpu]") {
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const LdmatrixSource src = ldmatrix_source(lane, reg, half);
        const MatrixCoord row_start = ldmatrix_x4_row_address(src.lane);
        INFO("lane " << lane << " reg " << reg << " half " << half);
        CHECK(ldmatrix_x4_source(lane, reg, half, /*trans=*/false) ==
              MatrixCoord{row_start.row, row_start.col + src.element});
      }
}

TEST_CASE("ldmatrix row addresses are 16-byte aligned row starts", "[mma][cpu]") {
  for (int lane = 0; lane < 32; ++lane) {
    const MatrixCoord a = ldmatrix_x4_row_address(lane);
    CHECK(a.col % 8 == 0);
    CHECK((a.row >= 0 && a.row < 16 && (a.col == 0 || a.col == 8)));
  }
}

// Bank group (of 8, 16 bytes each, over a 128-byte window) of a byte offset.
int bank_group(int byte_offset) { return (byte_offset / 16) % 8; }

template <int kRowChunks> void check_swizzle(int rows) {
  using Swizzle = ChunkSwizzle<kRowChunks>;
  INFO("row chunks " << kRowChunks);
  // A permutation of the tile's chunks that keeps each chunk in its 128-byte line.
  std::set<int> seen;
  for (int row = 0; row < rows; ++row)
    for (int chunk = 0; chunk < kRowChunks; ++chunk) {
      const int linear = row * kRowChunks + chunk;
      const int stored = Swizzle::chunk_index(row, chunk);
      CHECK(stored / 8 == linear / 8);
      seen.insert(stored);
    }
  CHECK(int(seen.size()) == rows * kRowChunks);
  CHECK((*seen.begin() == 0 && *seen.rbegin() == rows * kRowChunks - 1));

  // ldmatrix: 8 consecutive rows (starting at a multiple of 8) at one chunk
  // column hit 8 different bank groups: conflict-free.
  for (int row0 = 0; row0 + 8 <= rows; row0 += 8)
    for (int chunk = 0; chunk < kRowChunks; ++chunk) {
      std::set<int> groups;
      for (int r = 0; r < 8; ++r) groups.insert(bank_group(Swizzle::byte_offset(row0 + r, chunk)));
      INFO("rows " << row0 << ".." << row0 + 7 << " chunk " << chunk);
      CHECK(groups.size() == 8);
    }

  // Moving by a whole phase period shifts the stored offset by exactly those rows.
  for (int row = 0; row + Swizzle::kPhasePeriodRows < rows; ++row)
    for (int chunk = 0; chunk < kRowChunks; ++chunk)
      CHECK(Swizzle::byte_offset(row + Swizzle::kPhasePeriodRows, chunk) ==
            Swizzle::byte_offset(row, chunk) + Swizzle::kPhasePeriodRows * kRowChunks * 16);
}

TEST_CASE("chunk swizzle: a line-preserving permutation, conflict-free for ldmatrix", "[mma][cpu]") {
  check_swizzle<4>(128);   // 64-byte rows  (A tile with k tiles of 32)
  check_swizzle<8>(128);   // 128-byte rows (A tile with k tiles of 64: rung 03o)
  check_swizzle<16>(64);   // 256-byte rows
  check_swizzle<32>(64);   // 512-byte rows (B tile 256 columns wide: rung 03o)
}

TEST_CASE("unswizzled rows of a multiple of 128 bytes would conflict (why the swizzle exists)", "[mma][cpu]") {
  std::set<int> groups;
  for (int r = 0; r < 8; ++r) groups.insert(bank_group(r * 512));
  CHECK(groups.size() == 1);  // 8 rows, one bank group: an 8-way conflict
}

TEST_CASE("padded rows of an odd number of 16-byte chunks are conflict-free (rung 03n)", "[mma][cpu]") {
  for (int row_bytes : {(32 + 8) * 2, (64 + 8) * 2}) {  // rung 03n: A [64][32+8], B [32][64+8], 2-byte elements
    std::set<int> groups;
    for (int r = 0; r < 8; ++r) groups.insert(bank_group(r * row_bytes));
    INFO("row bytes " << row_bytes);
    CHECK(groups.size() == 8);
  }
}

TEST_CASE("grouped tile raster visits every tile exactly once", "[mma][cpu]") {
  for (int tiles_m : {1, 2, 3, 7, 8, 9, 17, 64})
    for (int tiles_n : {1, 2, 5, 32})
      for (int group_m : {1, 2, 8}) {
        std::set<std::pair<int, int>> seen;
        for (int i = 0; i < tiles_m * tiles_n; ++i) {
          const TileCoord t = grouped_tile(i, tiles_m, tiles_n, group_m);
          CHECK((t.m >= 0 && t.m < tiles_m && t.n >= 0 && t.n < tiles_n));
          seen.insert({t.m, t.n});
        }
        INFO(tiles_m << "x" << tiles_n << " tiles, bands of " << group_m);
        CHECK(int(seen.size()) == tiles_m * tiles_n);
      }
  // The picture in mma.cuh: 4 x 3 tiles, bands of 2.
  const std::vector<TileCoord> want = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2},
                                       {2, 0}, {3, 0}, {2, 1}, {3, 1}, {2, 2}, {3, 2}};
  for (int i = 0; i < 12; ++i) CHECK(grouped_tile(i, 4, 3, 2) == want[i]);
}

}  // namespace
}  // namespace convlab::gpu
