// tests/lesson04_implicit_gemm_test.cpp — lesson 04's claims that the registry tests do not check.
//
// The registry tests (tests/main.cpp) already run every conv2d variant on the
// whole test table against the reference. Two promises of lesson 04 are not
// about the values, so they are checked here:
//
//   1. cpu/conv2d/04a_implicit_gemm never materialises the im2col matrix: its
//      workspace is lesson 03's fixed-size packed panels, the same for a 3x3
//      and a 7x7 filter, for one image and for eight.
//   2. gpu/conv2d/04b_implicit_gemm_tensor_core keeps B = wᵀ as w's own
//      [n][j] rows in shared memory and loads it with ldmatrix WITHOUT .trans;
//      the register order it assumes is checked here against the PTX model in
//      gpu/lib/mma.cuh, on the host (the kernel itself needs a GPU).
#include <cstddef>
#include <string>

#include "core/harness.hpp"
#include "gpu/lib/mma.cuh"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {
namespace {

TEST_CASE("lesson 04: the CPU implicit GEMM's workspace does not grow with R·S or the image", "[conv2d][cpu][lesson04]") {
  const auto workspace = [](const std::string& spec) {
    return testing::workspace_of("conv2d", Device::cpu, "04a_implicit_gemm", spec);
  };
  const std::string base = "H=56,W=56,C=64,K=64,pad=1";
  const std::size_t r3 = workspace("N=1,R=3," + base);
  const std::size_t r7 = workspace("N=1,R=7,pad=3,H=56,W=56,C=64,K=64");
  const std::size_t n8 = workspace("N=8,R=3," + base);
  CHECK(r3 == r7);
  CHECK(r3 == n8);
  // and it is far below one im2col matrix of the small problem (N·P·Q × R·S·C floats).
  CHECK(r3 < std::size_t(56) * 56 * 9 * 64 * sizeof(float) / 4);
}

TEST_CASE("lesson 04: ldmatrix.x4 without .trans on an [n][k] B tile delivers two n8 tiles' B fragments",
          "[mma][cpu][lesson04]") {
  // The kernel's order: register 0 -> (n8 tile 0, b0), 1 -> (tile 1, b0), 2 -> (tile 0, b1), 3 -> (tile 1, b1).
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const int n_tile = reg & 1, b_reg = reg >> 1;
        const gpu::MatrixCoord want = gpu::mma_b_coord(lane, b_reg, half);  // {k, n} within one n8 tile
        const gpu::MatrixCoord got = gpu::ldmatrix_x4_source(lane, reg, half, /*trans=*/false);  // {row n, col k}
        INFO("lane " << lane << " reg " << reg << " half " << half);
        CHECK(got == gpu::MatrixCoord{want.col + 8 * n_tile, want.row});
      }
}

TEST_CASE("lesson 04: 64-byte tile rows (ChunkSwizzle<4>) give every ldmatrix phase 8 bank groups", "[mma][cpu][lesson04]") {
  // The tensor-core rung's A and B tiles are rows of 32 j = 4 chunks. An
  // ldmatrix phase reads 8 consecutive rows at one logical chunk; with 16-row
  // steps between m16 tiles / n16 pairs the offsets must shift by whole rows.
  using Swizzle = gpu::ChunkSwizzle<4>;
  for (int row0 = 0; row0 < 128; row0 += 8)
    for (int chunk = 0; chunk < 4; ++chunk) {
      int groups_seen = 0;
      for (int r = 0; r < 8; ++r) groups_seen |= 1 << (Swizzle::chunk_index(row0 + r, chunk) % 8);
      CHECK(groups_seen == 0xff);
    }
  for (int row = 0; row < 112; ++row)
    for (int chunk = 0; chunk < 4; ++chunk)
      CHECK(Swizzle::byte_offset(row + 16, chunk) == Swizzle::byte_offset(row, chunk) + 16 * 64);
}

}  // namespace
}  // namespace convlab
