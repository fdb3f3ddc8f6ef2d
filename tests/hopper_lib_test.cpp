// tests/hopper_lib_test.cpp — the host-side models of gpu/lib/hopper/ and of
// lesson 03's wgmma + TMA GEMM geometry (gpu/lib/hopper/wgmma_gemm_layout.hpp).
//
// No GPU needed: every check here is integer arithmetic on the same constexpr
// functions the kernels call.
//   - TMA: the encoder's rules as tma_tile_unsupported_reason states them
//     (the GEMM's shapes accepted, K or N not a multiple of 8 refused), and
//     where the engine's 128-byte swizzle puts each box element = Sw128Tile;
//   - the GEMM slot: for every element of every k16 step of both consumer
//     warpgroups, the wgmma descriptor model (gpu/lib/wgmma.cuh) reads the
//     shared address that the TMA copy of that element wrote;
//   - the mbarrier ring: PipelineState's parities driven through a host model
//     of the barrier (phase bit, arrival and transaction counts, try_wait's
//     parity rule) with random interleavings of one producer and eight consumer
//     warps: every item read once, in order, never overwritten before every
//     consumer released it, no deadlock; and a wrong parity IS caught;
//   - the tile scheduler: every tile exactly once for persistent grids of any size;
//   - the register budget of setmaxnreg;
//   - TMA im2col (lesson 04's 04c): the bounding-box corners the encoder gets
//     make the engine's walk (tma_im2col_walk, step by step) visit exactly the
//     input pixel the conv's own decode of every GEMM row names, for every row
//     of every box and every tap, at strides 1-3, odd sizes, R != S, pads 0-2,
//     across image boundaries; the conv slot's descriptors read where the boxes land;
//     and the encoder's rules as the rung's supported set states them;
//   - lesson 10's cluster rung (10e): T written by both CTAs' conv fragments exactly
//     once and read by the expand's descriptors where it lies, the U/V slots, the H
//     exchange buffer's places, and the widths its header states; its T/H exchange
//     protocol (cluster-scope barriers, parities) against the barrier model.
// What only the GPU can confirm (that this reading of the PTX ISA and the
// driver API is right) the registry tests of gemm/gpu/03p..03r check there.
#include <array>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gpu/lib/hopper/cluster.cuh"
#include "gpu/lib/hopper/conv_wgmma_layout.hpp"
#include "gpu/lib/hopper/convfirst_cluster_layout.hpp"
#include "gpu/lib/hopper/convfirst_wgmma_layout.hpp"
#include "gpu/lib/hopper/ffn_wgmma_layout.hpp"
#include "gpu/lib/hopper/wgmma_gemm_layout.hpp"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tile_scheduler.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/tma_im2col.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"
#include "gpu/lib/quad_transpose_probe.hpp"
#include "gpu/lib/tma_multicast_cluster_probe.hpp"
#include "gpu/lib/tma_panels_wgmma_probe.hpp"
#include "gpu/lib/wgmma_probe.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {
namespace {

using namespace gpu::hopper;
namespace wg = wgmma_gemm;

// The two tensor maps of the GEMM for an M x N x K problem (cf. wgmma_gemm::run).
TmaTile2d a_map(uint64_t M, uint64_t K) {
  return {.base = 0x10000, .rows = M, .cols = K, .row_stride_bytes = K * 2, .elem_bytes = 2,
          .box_rows = wg::kBlockM, .box_cols = wg::kBlockK};
}
TmaTile2d b_map(uint64_t K, uint64_t N) {
  return {.base = 0x20000, .rows = K, .cols = N, .row_stride_bytes = N * 2, .elem_bytes = 2,
          .box_rows = wg::kBlockK, .box_cols = wg::BTile::kPanelCols};
}

TEST_CASE("hopper: TMA tile rules accept the GEMM's boxes and refuse what the encoder would", "[hopper][cpu]") {
  for (uint64_t d : {1, 8, 16, 264, 8192}) {
    CHECK(tma_tile_unsupported_reason(a_map(d, d % 8 == 0 ? d : 8)).empty());
    CHECK(tma_tile_unsupported_reason(b_map(8, d % 8 == 0 ? d : 8)).empty());
  }
  CHECK(tma_box_bytes(a_map(64, 64)) == uint32_t(wg::ATile::kBytes));
  CHECK(tma_box_bytes(b_map(64, 256)) * wg::BTile::kPanels == uint32_t(wg::BTile::kBytes));
  CHECK(uint32_t(wg::kStageBytes) == tma_box_bytes(a_map(64, 64)) + 4 * tma_box_bytes(b_map(64, 256)));
  // K = 13: rows of A are 26 bytes apart, not a multiple of 16.
  CHECK(!tma_tile_unsupported_reason(a_map(64, 13)).empty());
  CHECK(!tma_tile_unsupported_reason(b_map(64, 100)).empty());  // N = 100: 200-byte rows
  TmaTile2d t = a_map(64, 64);
  t.base = 0x10008;
  CHECK(!tma_tile_unsupported_reason(t).empty());  // misaligned base
  t = a_map(64, 64);
  t.box_rows = 257;
  CHECK(!tma_tile_unsupported_reason(t).empty());  // box dimension > 256
  t = a_map(64, 64);
  t.box_cols = 32;
  CHECK(!tma_tile_unsupported_reason(t).empty());  // 64-byte inner box: not the 128-byte span
  t = a_map(64, 64);
  t.box_rows = 12;
  CHECK(!tma_tile_unsupported_reason(t).empty());  // not whole 8-row atoms
  t = a_map(64, 64);
  t.row_stride_bytes = 64;
  CHECK(!tma_tile_unsupported_reason(t).empty());  // rows overlap
}

TEST_CASE("hopper: the wgmma GEMM rungs state their supported set", "[hopper][cpu]") {
  using enum DType;
  for (const GemmProblem p : {GemmProblem{1, 8, 16, f16}, GemmProblem{129, 264, 1032, f16},
                              GemmProblem{3, 16, 8, bf16}, GemmProblem{8192, 8192, 8192, bf16}})
    CHECK(wg::unsupported_reason(p).empty());
  // K or N not a multiple of 8 (TMA's 16-byte strides), and fp32: refused, each with its reason.
  CHECK(wg::unsupported_reason({64, 64, 13, f16}).find("multiples of 8") != std::string::npos);
  CHECK(wg::unsupported_reason({64, 100, 64, f16}).find("multiples of 8") != std::string::npos);
  CHECK(wg::unsupported_reason({31, 63, 65, f16}).find("multiples of 8") != std::string::npos);
  CHECK(wg::unsupported_reason({64, 64, 64, f32}) == "f16 and bf16 only");
  // The reason matches what the TMA model refuses for those strides.
  CHECK(!tma_tile_unsupported_reason(a_map(64, 13)).empty());
}

TEST_CASE("hopper: TMA's 128-byte swizzle puts a box where Sw128Tile says, a bijection onto the box",
          "[hopper][cpu]") {
  std::set<uint32_t> seen;
  for (int r = 0; r < wg::kBlockM; ++r)
    for (int c = 0; c < wg::kBlockK; ++c) {
      const uint32_t off = tma_sw128_box_offset(r, c, 2);
      CHECK(off == uint32_t(wg::ATile::byte_offset(r, c)));
      seen.insert(off);
    }
  CHECK(seen.size() == std::size_t(wg::kBlockM * wg::kBlockK));
  CHECK(*seen.rbegin() == uint32_t(wg::ATile::kBytes - 2));
  // B: panel p of the slot holds columns 64p .. 64p + 63.
  int b_mismatches = 0;
  for (int k = 0; k < wg::kBlockK; ++k)
    for (int n = 0; n < wg::kBlockN; ++n) {
      const uint32_t tma = wg::b_box_address(0, n / 64) - uint32_t(wg::ATile::kBytes) + tma_sw128_box_offset(k, n % 64, 2);
      b_mismatches += tma != uint32_t(wg::BTile::byte_offset(k, n));
    }
  CHECK(b_mismatches == 0);
}

// A box of several panels (TmaTile2d::box_panels, one 3-D copy) must write exactly what its panels
// copied one by one would: the GEMM's B slot (four panels) is the case at hand.
TEST_CASE("hopper: a TMA box of several panels lands as its panels copied one by one", "[hopper][cpu]") {
  TmaTile2d t = b_map(64, 256);
  t.box_panels = wg::BTile::kPanels;
  CHECK(tma_tile_unsupported_reason(t).empty());
  CHECK(tma_box_bytes(t) == uint32_t(wg::BTile::kBytes));
  int wrong = 0;
  std::set<uint32_t> seen;
  for (int k = 0; k < wg::kBlockK; ++k)
    for (int n = 0; n < wg::kBlockN; ++n) {
      const uint32_t off = tma_sw128_panels_offset(k, n, wg::kBlockK, 64, 2);
      wrong += off != uint32_t(wg::BTile::byte_offset(k, n));
      wrong += off != wg::b_box_address(0, n / 64) - uint32_t(wg::ATile::kBytes) + tma_sw128_box_offset(k, n % 64, 2);
      seen.insert(off);
    }
  CHECK(wrong == 0);
  CHECK(seen.size() == std::size_t(wg::kBlockK) * wg::kBlockN);  // a bijection onto the slot
  // A last panel partly past the row's end would read the next row: refused, where one panel a
  // box (zero fill past cols) is taken.
  t = b_map(64, 200);
  CHECK(tma_tile_unsupported_reason(t).empty());
  t.box_panels = 2;
  CHECK(tma_tile_unsupported_reason(t).find("whole panels") != std::string::npos);
  t = b_map(64, 256);
  for (int panels : {0, 257}) {
    t.box_panels = panels;
    CHECK(!tma_tile_unsupported_reason(t).empty());
  }
}

TEST_CASE("hopper: in every slot, wgmma's descriptors read each element where TMA wrote it", "[hopper][cpu]") {
  // Slot s at a 1024-aligned shared address; the model of the hardware's read
  // (gpu::wgmma_*_sw128_address) against the address of the TMA copy.
  int checked = 0, wrong = 0;
  for (int s = 0; s < wg::kStages; ++s) {
    const uint32_t slot = 1024 + uint32_t(s) * wg::kStageBytes;  // base 1024: as after aligning up
    REQUIRE(slot % kTmaSwizzleAtomBytes == 0);
    for (int ks = 0; ks < wg::kKSteps; ++ks) {
      for (int consumer = 0; consumer < wg::kConsumers; ++consumer) {
        const uint64_t desc = wg::a_descriptor(slot, consumer, ks);
        CHECK(gpu::wgmma_decode(desc).swizzle == gpu::WgmmaSwizzle::b128);
        CHECK(gpu::wgmma_decode(desc).base_offset == 0u);
        for (int m = 0; m < wg::kWgmmaM; ++m)
          for (int k = 0; k < wg::kWgmmaK; ++k) {
            const int row = consumer * wg::kWgmmaM + m, col = ks * wg::kWgmmaK + k;  // element of the A box
            wrong += gpu::wgmma_k_major_sw128_address(desc, m, k) != slot + tma_sw128_box_offset(row, col, 2);
            ++checked;
          }
      }
      const uint64_t desc = wg::b_descriptor(slot, ks);
      for (int k = 0; k < wg::kWgmmaK; ++k)
        for (int n = 0; n < wg::kBlockN; ++n) {
          const int row = ks * wg::kWgmmaK + k;  // k row of the B panels
          wrong += gpu::wgmma_mn_major_sw128_address(desc, k, n) !=
                   wg::b_box_address(slot, n / 64) + tma_sw128_box_offset(row, n % 64, 2);
          ++checked;
        }
    }
  }
  CHECK(checked == wg::kStages * wg::kKSteps * (wg::kConsumers * 64 * 16 + 16 * 256));
  CHECK(wrong == 0);
  // The slots and the barriers fit the dynamic allocation after aligning its start up.
  CHECK(wg::kSwizzleAtomBytes + wg::kStages * wg::kStageBytes + kPipelineBarrierBytes<wg::kStages> <=
        wg::kSharedBytes);
}

// One U slot and one V slot of a wgmma hidden loop (08d, 08e, 10c): every element the expand's
// (U, MN-major) and the project's (V, MN-major) descriptors read is where TMA wrote it.
template <class L> int uv_slot_mismatches(uint32_t u, uint32_t v) {
  int wrong = 0;
  for (int ks = 0; ks < L::kCSteps; ++ks)  // U: k = channel c, n = hidden column of the chunk
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < L::kChunk; ++n)
        wrong += gpu::wgmma_mn_major_sw128_address(L::u_descriptor(u, ks), k, n) !=
                 L::u_box(u, n / 64) + tma_sw128_box_offset(16 * ks + k, n % 64, 2);
  for (int kk = 0; kk < L::kHSteps; ++kk)  // V: k = hidden row of the chunk, n = output channel
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < L::kC; ++n)
        wrong += gpu::wgmma_mn_major_sw128_address(L::v_descriptor(v, kk), k, n) !=
                 L::v_box(v, n / 64) + tma_sw128_box_offset(16 * kk + k, n % 64, 2);
  return wrong;
}

// The FFN's three operands (gpu/ffn/08d_fused_wgmma.cu): X K-major, U and V MN-major.
template <class L> int ffn_layout_mismatches() {
  int wrong = 0;
  const uint32_t base = 1024;
  for (int xs = 0; xs < L::kXBuffers; ++xs) {
    const uint32_t slot = L::x_slot(base, xs);
    for (int consumer = 0; consumer < ffn_wgmma::kConsumers; ++consumer)
      for (int ks = 0; ks < L::kCSteps; ++ks)
        for (int m = 0; m < 64; ++m)
          for (int k = 0; k < 16; ++k) {
            const int row = 64 * consumer + m, col = 16 * ks + k;
            wrong += gpu::wgmma_k_major_sw128_address(L::x_descriptor(slot, consumer, ks), m, k) !=
                     L::x_box(slot, col / 64) + tma_sw128_box_offset(row, col % 64, 2);
          }
  }
  for (int st = 0; st < L::kStages; ++st) {
    const uint32_t u = L::u_slot(base, st), v = L::v_slot(base, st);
    wrong += uv_slot_mismatches<L>(u, v);
    // Slots do not overlap each other or the barriers.
    wrong += v + uint32_t(L::VTile::kBytes) > L::u_slot(base, st + 1);
  }
  wrong += L::x_slot(base, L::kXBuffers) > L::u_slot(base, 0);
  wrong += L::u_slot(base, L::kStages) > base + uint32_t(L::kBarrierBase);
  return wrong;
}

TEST_CASE("hopper: the FFN's X, U and V slots are read by wgmma where TMA wrote them", "[hopper][cpu]") {
  CHECK(ffn_layout_mismatches<ffn_wgmma::Layout64>() == 0);
  CHECK(ffn_layout_mismatches<ffn_wgmma::Layout128>() == 0);
  CHECK(ffn_layout_mismatches<ffn_wgmma::Layout256>() == 0);
}

// 08e_fused_wgmma_pingpong: a 64-row X ring per consumer, every chunk of U and V resident.
TEST_CASE("hopper: the ping-pong FFN's slots are read by wgmma where TMA wrote them, and fit", "[hopper][cpu]") {
  using L = ffn_wgmma::PingPong64;
  const uint32_t base = 1024;
  int wrong = 0;
  for (int c = 0; c < ffn_wgmma::kConsumers; ++c)
    for (int xs = 0; xs < L::kXBuffers; ++xs) {
      const uint32_t slot = L::x_slot(base, c, xs);
      for (int ks = 0; ks < L::kCSteps; ++ks)
        for (int m = 0; m < 64; ++m)
          for (int k = 0; k < 16; ++k) {
            const int col = 16 * ks + k;
            wrong += gpu::wgmma_k_major_sw128_address(L::x_descriptor(slot, ks), m, k) !=
                     L::x_box(slot, col / 64) + tma_sw128_box_offset(m, col % 64, 2);
          }
      wrong += slot % 1024 != 0;
      // Slots follow each other without overlap; the barriers stay below the first.
      wrong += slot + uint32_t(L::kXBytes) > (xs + 1 < L::kXBuffers ? L::x_slot(base, c, xs + 1)
                                              : c + 1 < ffn_wgmma::kConsumers ? L::x_slot(base, c + 1, 0)
                                                                              : L::u_slot(base, 0));
    }
  for (int c = 0; c < ffn_wgmma::kConsumers; ++c)
    wrong += L::x_ring(base, c) + uint32_t(kPipelineBarrierBytes<L::kXBuffers>) > L::x_slot(base, 0, 0);
  wrong += L::x_ring(base, 0) < base + L::kWeightsBarrier + uint32_t(kMbarrierBytes);
  for (int r = 0; r < L::kStages; ++r) {
    const uint32_t u = L::u_slot(base, r), v = L::v_slot(base, r);
    wrong += uv_slot_mismatches<L>(u, v);
    wrong += v + uint32_t(L::VTile::kBytes) > L::u_slot(base, r + 1);
  }
  CHECK(wrong == 0);
  // Chunk r's slots end inside the allocation for r + 1 chunks, after aligning its start up.
  for (int chunks = 1; chunks <= L::kStages; ++chunks) {
    CAPTURE(chunks);
    CHECK(L::shared_bytes(chunks) > 0);
    CHECK(L::shared_bytes(chunks) <= 227 * 1024);
    CHECK(1023u + L::u_slot(0, chunks) <= uint32_t(L::a_offset(chunks) + 1023));
    CHECK(L::a_offset(chunks) % 16 == 0);  // a read as float2 pairs
    CHECK(L::b_offset(chunks) == L::a_offset(chunks) + 4 * chunks * L::kChunk);
    CHECK(1023 + L::b_offset(chunks) + 4 * L::kC <= L::shared_bytes(chunks));
  }
  // 128-wide chunks at C = 64: hidden up to 640 resident, not one chunk more.
  CHECK(L::kStages == 5);
  CHECK(L::shared_bytes(0) == 0);
  CHECK(L::shared_bytes(L::kStages + 1) == 0);
  CHECK(register_budget_fits(ffn_wgmma::kProducerRegs, ffn_wgmma::kConsumerRegs, ffn_wgmma::kConsumers));
}

// ---- lesson 10's one-kernel block on wgmma (gpu/convfirst/10c_fused_wgmma.cu) ----------------

// U and V of the block's hidden loop: read by wgmma where TMA wrote them; the
// slots, the conv weights and the x buffers do not overlap.
template <class L> int convfirst_uv_mismatches() {
  int wrong = 0;
  const uint32_t base = 0;
  for (int st = 0; st < L::kStages; ++st) {
    const uint32_t u = L::u_slot(base, st), v = L::v_slot(base, st);
    wrong += uv_slot_mismatches<L>(u, v);
    wrong += u % 1024 != 0 || v % 1024 != 0;
  }
  wrong += L::u_slot(base, 0) < uint32_t(convfirst_wgmma::kBarrierRegion);
  wrong += L::u_slot(base, L::kStages) > L::kWeightsBase;
  wrong += L::kWeightsBase + uint32_t(L::kWeightWords) * 4 > L::kXBase || L::kXBase % 1024 != 0;
  return wrong;
}

// Every tap of every pixel of every tile of an N x H x W batch reads the
// staged pixel it means (or the zero pixel exactly when it leaves the image
// or the batch), inside what the tile's TMA boxes wrote; and the conv's and
// the residual's shared-memory reads (x_offset) land where TMA put each
// channel. Returns the number of mismatches.
int convfirst_staging_mismatches(int C, int N, int H, int W, int tile_rows = convfirst_wgmma::kBlockRows) {
  namespace cw = convfirst_wgmma;
  const cw::XStaging sg = cw::x_staging(C, W, int64_t(N) * H, tile_rows);
  const int M = N * H * W;
  int wrong = 0;
  for (int t = 0; t * tile_rows < M; ++t) {
    const int first_row = t * tile_rows / W - 1;
    for (int q = t * tile_rows; q < (t + 1) * tile_rows; ++q) {  // a conv lane's five k-steps, and the centre
      wrong += cw::centre_index(q, M, W, first_row, sg.zero_index) != cw::tap_index(q, 0, 0, M, H, W, first_row, sg.zero_index);
      for (int odd = 0; odd < 2; ++odd) {
        int tap[5];
        cw::lane_taps(cw::tap_place(q, M, H, W, first_row, sg.zero_index), odd == 1, W, sg.zero_index, tap);
        for (int j = 0; j < 5; ++j) {
          const int k = 2 * j + odd;
          wrong += tap[j] != (k < 9 ? cw::tap_index(q, k / 3 - 1, k % 3 - 1, M, H, W, first_row, sg.zero_index) : sg.zero_index);
        }
      }
    }
    for (int q = t * tile_rows; q < (t + 1) * tile_rows; ++q)
      for (int dr = -1; dr <= 1; ++dr)
        for (int ds = -1; ds <= 1; ++ds) {
          const int i = cw::tap_index(q, dr, ds, M, H, W, first_row, sg.zero_index);
          wrong += cw::tap_at(cw::tap_place(q, M, H, W, first_row, sg.zero_index), dr, ds, W, sg.zero_index) != i;
          const int row = q / W, w = q % W, h = row % H;
          const bool inside = q < M && h + dr >= 0 && h + dr < H && w + ds >= 0 && w + ds < W;
          if (!inside) {
            wrong += i != sg.zero_index;
            continue;
          }
          wrong += i < 0 || i >= sg.zero_index;                       // a box wrote it
          wrong += int64_t(first_row) * W + i != int64_t(q) + dr * W + ds;  // and it is the tap's pixel
        }
  }
  for (int i = 0; i < sg.zero_index; ++i)
    for (int c = 0; c < C; ++c) {
      const int box = i / sg.box_rows, r = i % sg.box_rows;
      const uint32_t tma = uint32_t(c / 64) * sg.panel_bytes + uint32_t(box * sg.box_rows) * 128u +
                           tma_sw128_box_offset(r, c % 64, 2);
      wrong += cw::x_offset(sg, i, c) != tma;
    }
  for (int c = 0; c < C; ++c)  // the zero lines follow the boxes inside each panel
    wrong += cw::x_offset(sg, sg.zero_index, c) < uint32_t(c / 64) * sg.panel_bytes + uint32_t(sg.zero_index) * 128u ||
             cw::x_offset(sg, sg.zero_index, c) >= uint32_t(c / 64 + 1) * sg.panel_bytes;
  wrong += sg.box_rows % 8 != 0 || sg.box_rows > kTmaMaxBoxDim || sg.box_rows < 8;
  wrong += sg.tx_bytes != uint32_t(sg.panels * sg.boxes * sg.box_rows) * 128u;
  return wrong;
}

TEST_CASE("hopper: the ConvFirst block's U and V slots are read by wgmma where TMA wrote them", "[hopper][cpu]") {
  CHECK(convfirst_uv_mismatches<convfirst_wgmma::Layout64>() == 0);
  CHECK(convfirst_uv_mismatches<convfirst_wgmma::Layout128>() == 0);
}

// The fp32 biases (a padded to whole chunks, b, conv_b) follow both x buffers,
// 16-aligned for float2 loads, and lie inside the allocation whatever the
// 1024-alignment of its base costs. Returns the number of violations.
template <class L> int convfirst_bias_mismatches(int W, int64_t image_rows, int hidden) {
  namespace cw = convfirst_wgmma;
  const cw::XStaging sg = cw::x_staging(L::kC, W, image_rows);
  const uint32_t offset = cw::bias_offset<L>(sg);
  const std::size_t floats = cw::bias_floats<L>(hidden);
  int wrong = 0;
  wrong += offset < L::kXBase + uint32_t(cw::kXBuffers) * sg.buffer_bytes;  // after the x buffers
  wrong += offset % 16 != 0;
  const std::size_t a_floats = floats - 2 * L::kC;  // whole chunks covering hidden
  wrong += a_floats < std::size_t(hidden) || a_floats >= std::size_t(hidden) + L::kChunk || a_floats % L::kChunk != 0;
  wrong += 1023 + offset + 4 * floats > cw::shared_bytes<L>(sg, hidden);
  return wrong;
}

TEST_CASE("hopper: the ConvFirst block's staged halo rows hold every tap, where the conv reads it", "[hopper][cpu]") {
  // Odd and even widths, a row shorter than and longer than the 128-pixel tile,
  // tiles that span images, a batch smaller than a tile.
  for (const auto& [C, N, H, W] : std::vector<std::array<int, 4>>{{64, 2, 7, 7},   {64, 1, 1, 1},   {64, 3, 5, 3},
                                                                   {64, 2, 13, 57}, {64, 1, 9, 110}, {64, 2, 56, 56},
                                                                   {128, 3, 28, 28}, {128, 1, 4, 129}, {128, 5, 3, 1}})
    CHECK(convfirst_staging_mismatches(C, N, H, W) == 0);
  // The supported widths the rung's header states (hidden ≤ 4C: every W ≤ 115 at C = 64,
  // W ≤ 38 at C = 128), and the first width past each.
  namespace cw = convfirst_wgmma;
  for (int W = 1; W <= 115; ++W)
    CHECK(cw::shared_bytes<cw::Layout64>(cw::x_staging(64, W, 128 * W), 4 * 64) <= std::size_t(cw::kMaxShared));
  for (int W = 1; W <= 38; ++W)
    CHECK(cw::shared_bytes<cw::Layout128>(cw::x_staging(128, W, 128 * W), 4 * 128) <= std::size_t(cw::kMaxShared));
  CHECK(cw::shared_bytes<cw::Layout64>(cw::x_staging(64, 116, 128 * 116), 8) > std::size_t(cw::kMaxShared));
  CHECK(cw::shared_bytes<cw::Layout128>(cw::x_staging(128, 39, 128 * 39), 8) > std::size_t(cw::kMaxShared));
  // The biases lie inside the allocation, past the x buffers, for partial and whole chunks.
  for (const int hidden : {8, 64, 200, 256, 1024}) {
    for (const int W : {1, 7, 28, 56, 115}) CHECK(convfirst_bias_mismatches<cw::Layout64>(W, 128 * W, hidden) == 0);
    for (const int W : {1, 7, 28, 38}) CHECK(convfirst_bias_mismatches<cw::Layout128>(W, 128 * W, 2 * hidden) == 0);
  }
}

// ---- lesson 10's large-C block over a cluster (gpu/convfirst/10e_fused_cluster.cu) -------

// The cluster rung's ring slots and T: wgmma's descriptors read U and V pieces
// and T where TMA (U, V) and the conv's stores (T) put each element; the conv
// fragments of the cluster's CTAs together write every element of T exactly
// once, each 32-bit word two neighbouring channels of one pixel, and every
// fragment is mma.sync's C fragment of its group; the project's slices map onto
// V pieces and rows of the chunk once each; the regions are 1024-aligned and do
// not overlap.
template <class L> int convfirst_cluster_mismatches() {
  namespace cc = convfirst_cluster;
  int wrong = 0;
  const uint32_t base = 0;
  for (int st = 0; st < L::kStages; ++st) {
    const uint32_t u = L::slot(base, st);
    for (int ks = 0; ks < L::kPieceSteps; ++ks) {
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < cc::kSliceCols; ++n)
          wrong += gpu::wgmma_mn_major_sw128_address(L::u_descriptor(u, ks), k, n) !=
                   u + tma_sw128_box_offset(16 * ks + k, n, 2);
      // the kernel's form: the step-0 descriptor advanced by a constant per step
      wrong += gpu::wgmma_advance(L::u_descriptor(u, 0), gpu::mn_major_step_bytes<typename L::UTile>(16 * ks)) !=
               L::u_descriptor(u, ks);
    }
    const uint32_t v = L::slot(base, st);
    for (int kk = 0; kk < L::kVRows / 16; ++kk) {
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < L::kOwn; ++n)
          wrong += gpu::wgmma_mn_major_sw128_address(L::v_descriptor(v, kk), k, n) !=
                   L::v_box(v, n / 64) + tma_sw128_box_offset(16 * kk + k, n % 64, 2);
      wrong += gpu::wgmma_advance(L::v_descriptor(v, 0), gpu::mn_major_step_bytes<typename L::VTile>(16 * kk)) !=
               L::v_descriptor(v, kk);
    }
    wrong += u % 1024 != 0 || L::UTile::kBytes > L::kSlotBytes || L::VTile::kBytes > L::kSlotBytes;
  }
  // The project: slice i of CTA `rank` (its own first, then the peers after it) reads the V
  // rows of source (rank + i) % S: piece i / kSourcesPerVPiece, rows kHSteps·16 from
  // v_first_step; every row of the chunk once per CTA, each piece loaded at the row the
  // producer asks TMA for.
  for (int rank = 0; rank < L::kCluster; ++rank) {
    std::vector<int> rows(std::size_t(L::kChunk), 0);
    for (int i = 0; i < L::kCluster; ++i) {
      const int source = L::source_of(rank, i), piece = i / L::kSourcesPerVPiece;
      wrong += piece >= L::kVPieces || (i > 0 && L::slot_in(rank, source) != i - 1);
      for (int kk = 0; kk < cc::kHSteps; ++kk)
        for (int k = 0; k < 16; ++k) {
          const int row_in_piece = 16 * (L::v_first_step(rank, i) + kk) + k;
          const int chunk_row = L::v_piece_row(rank, piece) + row_in_piece;
          wrong += row_in_piece >= L::kVRows || chunk_row != source * cc::kSliceCols + 16 * kk + k;
          ++rows[std::size_t(chunk_row)];
        }
    }
    for (int n : rows) wrong += n != 1;
  }
  const uint32_t t = base + L::kTBase;
  for (int w = 0; w < L::kConsumers; ++w)
    for (int ks = 0; ks < L::kCSteps; ++ks) {
      for (int mn = 0; mn < 64; ++mn)
        for (int k = 0; k < 16; ++k)
          wrong += gpu::wgmma_k_major_sw128_address(L::t_descriptor(t, w, ks), mn, k) !=
                   t + uint32_t(L::TTile::byte_offset(64 * w + mn, 16 * ks + k));
      // the kernel's form: the descriptor of a U piece's first step advanced inside the piece
      const int piece_first = ks / L::kPieceSteps * L::kPieceSteps;
      wrong += gpu::wgmma_advance(L::t_descriptor(t, w, piece_first),
                                  gpu::k_major_step_bytes<typename L::TTile>(16 * (ks - piece_first))) !=
               L::t_descriptor(t, w, ks);
    }
  std::vector<int> written(std::size_t(L::kTileRows) * L::kC, 0);
  for (int rank = 0; rank < L::kCluster; ++rank)
    for (int w = 0; w < L::kConsumers; ++w)
      for (int thread = 0; thread < kWarpgroupThreads; ++thread)
        for (int pair = 0; pair < L::kPairs; ++pair)
          for (int reg = 0; reg < 4; ++reg) {
            const gpu::MatrixCoord at = L::t_fragment_coord(w, thread, rank, pair, reg);
            // word reg holds accumulators 2(reg & 1), 2(reg & 1) + 1 of group 2·pair + (reg >> 1)
            const gpu::MatrixCoord c = gpu::mma_c_coord(thread % 32, 2 * (reg & 1));
            wrong += at.row != 64 * w + 16 * (thread / 32) + c.row;
            wrong += at.col != rank * L::kOwn + 8 * (2 * pair + (reg >> 1)) + c.col;
            const int off = L::TTile::byte_offset(at.row, at.col);
            wrong += off % 4 != 0 || L::TTile::byte_offset(at.row, at.col + 1) != off + 2;
            for (int e = 0; e < 2; ++e) ++written[std::size_t(at.row) * L::kC + std::size_t(at.col + e)];
          }
  for (int v : written) wrong += v != 1;
  // regions: barriers, T, ring, H in, weights, x buffers
  wrong += L::kBarrierBytes > L::kTBase;
  wrong += L::kRingBase < L::kTBase + uint32_t(L::TTile::kBytes);
  wrong += L::kHBase < L::kRingBase + uint32_t(L::kStages * L::kSlotBytes);
  wrong += L::kWeightsBase < L::kHBase + uint32_t(L::kHBufferBytes);
  wrong += L::kXBase < L::kWeightsBase + uint32_t(L::kWeightWords) * 4;
  for (uint32_t r : {L::kTBase, L::kRingBase, L::kHBase, L::kWeightsBase, L::kXBase}) wrong += r % 1024 != 0;
  return wrong;
}

// The H exchange: every (warpgroup, source slot, thread, 16-byte quad) has its own
// aligned place inside the buffer, a quarter-warp's eight threads fill one 128-byte line
// (no bank conflict); every sender writes a different slot of each receiver; and the
// word a sender packs from its S accumulators is, for the receiving thread of the same
// index, the A fragment element of the same pixel and column.
template <class L> int h_exchange_mismatches() {
  namespace cc = convfirst_cluster;
  int wrong = 0;
  std::set<uint32_t> places;
  for (int w = 0; w < L::kConsumers; ++w)
    for (int slot = 0; slot < L::kCluster - 1; ++slot)
      for (int q = 0; q < cc::kHQuads; ++q)
        for (int thread = 0; thread < kWarpgroupThreads; ++thread) {
          const uint32_t off = L::h_exchange_offset(w, slot, thread, q);
          wrong += off % 16 != 0 || off + 16 > uint32_t(L::kHBufferBytes);
          places.insert(off);
          if (thread % 8 == 0)
            for (int i = 1; i < 8; ++i) wrong += L::h_exchange_offset(w, slot, thread + i, q) != off + 16u * uint32_t(i);
          wrong += (thread % 8 == 0) && off % 128 != 0;
        }
  wrong += places.size() != std::size_t(L::kConsumers * (L::kCluster - 1) * cc::kHQuads * kWarpgroupThreads);
  for (int receiver = 0; receiver < L::kCluster; ++receiver) {
    std::set<int> slots;
    for (int sender = 0; sender < L::kCluster; ++sender)
      if (sender != receiver) slots.insert(L::slot_in(receiver, sender));
    wrong += slots.size() != std::size_t(L::kCluster - 1) || *slots.begin() != 0 || *slots.rbegin() != L::kCluster - 2;
  }
  for (int thread = 0; thread < kWarpgroupThreads; ++thread)
    for (int kk = 0; kk < cc::kHSteps; ++kk)
      for (int reg = 0; reg < 4; ++reg)
        for (int half = 0; half < 2; ++half) {
          const gpu::MatrixCoord sent = gpu::wgmma_d_coord(thread, gpu::wgmma_d_index_for_a(kk, reg, half));
          const gpu::MatrixCoord used = gpu::wgmma_a_coord(thread, reg, half);
          wrong += sent.row != used.row || sent.col != 16 * kk + used.col;
        }
  return wrong;
}

TEST_CASE("hopper: the cluster ConvFirst block's T, U and V are read by wgmma where they were written",
          "[hopper][cpu]") {
  namespace cc = convfirst_cluster;
  CHECK(convfirst_cluster_mismatches<cc::ClusterLayout128>() == 0);
  CHECK(convfirst_cluster_mismatches<cc::ClusterLayout256>() == 0);
  CHECK(convfirst_cluster_mismatches<cc::ClusterLayout512>() == 0);
  CHECK(h_exchange_mismatches<cc::ClusterLayout128>() == 0);
  CHECK(h_exchange_mismatches<cc::ClusterLayout256>() == 0);
  CHECK(h_exchange_mismatches<cc::ClusterLayout512>() == 0);
  // C = 128 and 256 keep the pair's offsets of before the generalisation (one slot per warpgroup)
  CHECK(cc::ClusterLayout256::h_exchange_offset(1, 0, 5, 3) == uint32_t(((1 * 4 + 3) * 128 + 5) * 16));
  CHECK(cc::ClusterLayout512::kTileRows == 64);
  CHECK(cc::ClusterLayout512::kThreads == 256);
  CHECK(gpu::hopper::pair_peer(0) == 1);
  CHECK(gpu::hopper::pair_peer(1) == 0);
  for (int block = 0; block < 16; ++block) {
    CHECK(gpu::hopper::cluster_of_block(block, 2) == block / 2);
    CHECK(gpu::hopper::rank_of_block(block, 2) == block % 2);
    CHECK(gpu::hopper::cluster_of_block(block, 4) == block / 4);
    CHECK(gpu::hopper::rank_of_block(block, 4) == block % 4);
  }
}

// 10e's V piece as one copy of its panels (10e copies a piece panel by panel; lesson 10's
// NOTES.md has the one-copy form's measurement): the box lands panel after panel, which is where the per-panel
// copies put them (v_box) and where Sw128Tile, the descriptors' model, reads.
template <class L> int v_one_copy_mismatches() {
  int wrong = 0;
  TmaTile2d v{.base = 0x40000, .rows = 4 * uint64_t(L::kC), .cols = uint64_t(L::kC),
              .row_stride_bytes = uint64_t(L::kC) * 2, .elem_bytes = 2, .box_rows = L::kVRows, .box_cols = 64,
              .box_panels = L::VTile::kPanels};
  wrong += !tma_tile_unsupported_reason(v).empty() || tma_box_bytes(v) != uint32_t(L::VTile::kBytes);
  for (int k = 0; k < L::kVRows; ++k)
    for (int n = 0; n < L::kOwn; ++n) {
      const uint32_t off = tma_sw128_panels_offset(k, n, L::kVRows, 64, 2);
      wrong += off != uint32_t(L::VTile::byte_offset(k, n));
      wrong += off != L::v_box(0, n / 64) + tma_sw128_box_offset(k, n % 64, 2);
    }
  return wrong;
}

TEST_CASE("hopper: the cluster ConvFirst block's V piece as one copy lands as its panels copied one by one",
          "[hopper][cpu]") {
  namespace cc = convfirst_cluster;
  CHECK(v_one_copy_mismatches<cc::ClusterLayout128>() == 0);
  CHECK(v_one_copy_mismatches<cc::ClusterLayout256>() == 0);
  CHECK(v_one_copy_mismatches<cc::ClusterLayout512>() == 0);
}

// The pair split by hidden columns (10g): the U and V pieces land where the wgmma descriptors
// read them (V's column panels rotated so that a CTA's own channels come first, each output
// channel once per CTA); the conv fragments of the two CTAs write T once each; the Z half
// a warpgroup sends fills exactly its own 64 rows of T, a quarter-warp one 128-byte line,
// and the sender's register 4·quad + q + C/4 and the receiver's 4·quad + q are the same
// pixel and output channel; the regions are aligned and do not overlap.
template <class L> int convfirst_split_mismatches() {
  namespace cc = convfirst_cluster;
  int wrong = 0;
  const uint32_t base = 0;
  for (int st = 0; st < L::kStages; ++st) {
    const uint32_t slot = L::slot(base, st);
    for (int ks = 0; ks < L::kPieceSteps; ++ks)
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < cc::kSliceCols; ++n)
          wrong += gpu::wgmma_mn_major_sw128_address(L::u_descriptor(slot, ks), k, n) !=
                   slot + tma_sw128_box_offset(16 * ks + k, n, 2);
    for (int kk = 0; kk < L::kVSteps; ++kk) {
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < L::kVCols; ++n)
          wrong += gpu::wgmma_mn_major_sw128_address(L::v_descriptor(slot, kk), k, n) !=
                   L::v_box(slot, n / 64) + tma_sw128_box_offset(16 * kk + k, n % 64, 2);
      wrong += gpu::wgmma_advance(L::v_descriptor(slot, 0), gpu::mn_major_step_bytes<typename L::VTile>(16 * kk)) !=
               L::v_descriptor(slot, kk);
    }
    wrong += slot % 1024 != 0 || L::UTile::kBytes > L::kSlotBytes || L::VTile::kBytes > L::kSlotBytes;
  }
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<int> channels(std::size_t(L::kC), 0);
    for (int q = 0; q < L::kVPieces; ++q)
      for (int p = 0; p < L::VTile::kPanels; ++p) {
        const int n = q * L::kVCols + p * 64, col = L::v_panel_col(rank, q, p);  // accumulator column n
        wrong += col % 64 != 0 || (n < L::kOwn) != (col / L::kOwn == rank);
        for (int c = 0; c < 64; ++c) ++channels[std::size_t(col + c)];
      }
    for (int n : channels) wrong += n != 1;
  }
  std::vector<int> written(std::size_t(L::kTileRows) * L::kC, 0);
  for (int rank = 0; rank < 2; ++rank)
    for (int w = 0; w < L::kConsumers; ++w)
      for (int thread = 0; thread < kWarpgroupThreads; ++thread)
        for (int pair = 0; pair < L::kPairs; ++pair)
          for (int reg = 0; reg < 4; ++reg) {
            const gpu::MatrixCoord at = L::t_fragment_coord(w, thread, rank, pair, reg);
            for (int e = 0; e < 2; ++e) ++written[std::size_t(at.row) * L::kC + std::size_t(at.col + e)];
          }
  for (int v : written) wrong += v != 1;
  // The Z exchange: every 16-byte place of warpgroup w's T rows once, nothing outside them.
  for (int w = 0; w < L::kConsumers; ++w) {
    std::set<uint32_t> places;
    for (int quad = 0; quad < L::kZQuads; ++quad)
      for (int thread = 0; thread < kWarpgroupThreads; ++thread) {
        const uint32_t off = L::z_exchange_offset(w, thread, quad);
        const uint32_t panel = off / uint32_t(L::TTile::kPanelBytes), row = off % uint32_t(L::TTile::kPanelBytes) / 128;
        wrong += off % 16 != 0 || panel >= uint32_t(L::TTile::kPanels) || row / 64 != uint32_t(w);
        if (thread % 8 == 0) wrong += off % 128 != 0 || L::z_exchange_offset(w, thread + 7, quad) != off + 112;
        places.insert(off);
      }
    wrong += places.size() != std::size_t(64 * L::kC * 2 / 16);
  }
  for (int thread = 0; thread < kWarpgroupThreads; ++thread)
    for (int quad = 0; quad < L::kZQuads; ++quad)
      for (int q = 0; q < 4; ++q) {
        const gpu::MatrixCoord sent = gpu::wgmma_d_coord(thread, L::kZOwnRegs + 4 * quad + q);
        const gpu::MatrixCoord kept = gpu::wgmma_d_coord(thread, 4 * quad + q);
        for (int rank = 0; rank < 2; ++rank) {  // sender `rank`, receiver rank ^ 1
          const auto channel = [](int r, int n) {
            return L::v_panel_col(r, n / L::kVCols, n % L::kVCols / 64) + n % 64;
          };
          const int sent_channel = channel(rank, sent.col), kept_channel = channel(rank ^ 1, kept.col);
          wrong += sent.row != kept.row || sent_channel != kept_channel || kept_channel / L::kOwn != (rank ^ 1);
        }
      }
  wrong += L::kBarrierBytes > L::kTBase;
  wrong += L::kRingBase < L::kTBase + uint32_t(L::TTile::kBytes);
  wrong += L::kWeightsBase < L::kRingBase + uint32_t(L::kStages * L::kSlotBytes);
  wrong += L::kXBase < L::kWeightsBase + uint32_t(L::kWeightWords) * 4;
  for (uint32_t r : {L::kTBase, L::kRingBase, L::kWeightsBase, L::kXBase}) wrong += r % 1024 != 0;
  return wrong;
}

TEST_CASE("hopper: the hidden-split ConvFirst pair's weights, T and Z exchange are read where they were written",
          "[hopper][cpu]") {
  namespace cc = convfirst_cluster;
  CHECK(convfirst_split_mismatches<cc::SplitLayout128>() == 0);
  CHECK(convfirst_split_mismatches<cc::SplitLayout256>() == 0);
  CHECK(cc::SplitLayout256::kThreads == 256);
  CHECK(cc::SplitLayout256::kRegisterCap == 255);
  // C = 256 fits every W <= 29 (hidden = 4C), as 10e; the first width past it does not
  const auto fits = [](auto layout, int W, int64_t rows, int hidden) {
    using L = decltype(layout);
    return cc::cluster_shared_bytes<L>(cc::cluster_staging<L>(W, rows), hidden) <= std::size_t(cc::kMaxShared);
  };
  for (int W = 1; W <= 29; ++W) CHECK(fits(cc::SplitLayout256{}, W, 128 * 64, 1024));
  CHECK(!fits(cc::SplitLayout256{}, 30, 128 * 64, 8));
  for (int W = 1; W <= 80; ++W) CHECK(fits(cc::SplitLayout128{}, W, 128 * 64, 512));
}

// A CTA's fp32 biases (its 64 columns of each chunk, then b and conv_b of its C/S channels)
// start 16-aligned, with b and conv_b at even floats (float2 loads); every pair a consumer
// reads (columns 64r + 2t + 8j, +1 of chunk r < chunks) lies in a; the region lies inside the
// allocation whatever the 1024-alignment of its base costs. Returns the number of violations.
template <class L> int convfirst_cluster_bias_mismatches(int W, int64_t image_rows, int hidden) {
  namespace cc = convfirst_cluster;
  const convfirst_wgmma::XStaging sg = cc::cluster_staging<L>(W, image_rows);
  const uint32_t offset = cc::cluster_bias_offset<L>(sg);
  const std::size_t floats = cc::cluster_bias_floats<L>(hidden);
  const int chunks = (hidden + L::kChunk - 1) / L::kChunk;
  const std::size_t a_floats = floats - 2 * L::kOwn;
  int wrong = 0;
  wrong += offset % 16 != 0;
  wrong += a_floats != std::size_t(chunks) * cc::kSliceCols || a_floats % 2 != 0 || L::kOwn % 2 != 0;
  const int last_pair = (chunks - 1) * cc::kSliceCols + 2 * 3 + 8 * (L::kSRegs / 4 - 1);  // t = 3, j last
  wrong += std::size_t(last_pair + 1) >= a_floats;
  wrong += 1023 + offset + 4 * floats > cc::cluster_shared_bytes<L>(sg, hidden);
  return wrong;
}

TEST_CASE("hopper: the cluster ConvFirst block's halo rows (a channel share) and its supported widths",
          "[hopper][cpu]") {
  // The staging of a CTA's channels is the 10c staging of C/S channels: every tap where the conv reads it,
  // for 128-pixel tiles (C = 128, 256) and 64-pixel tiles (C = 512).
  for (const auto& [C, N, H, W] : std::vector<std::array<int, 4>>{{128, 2, 14, 14}, {128, 1, 1, 1},  {64, 3, 13, 11},
                                                                   {128, 1, 3, 43},  {128, 90, 14, 14}, {64, 1, 7, 80}})
    CHECK(convfirst_staging_mismatches(C, N, H, W) == 0);
  for (const auto& [N, H, W] : std::vector<std::array<int, 3>>{
           {1, 1, 1}, {1, 63, 1}, {1, 65, 1}, {3, 7, 7}, {2, 9, 8}, {1, 3, 43}, {5, 5, 3}, {128, 7, 7}})
    CHECK(convfirst_staging_mismatches(128, N, H, W, 64) == 0);
  namespace cc = convfirst_cluster;
  // hidden = 4C unless told: the largest the header's widths are stated for
  const auto fits = [](auto layout, int W, int64_t rows, int hidden = 0) {
    using L = decltype(layout);
    return cc::cluster_shared_bytes<L>(cc::cluster_staging<L>(W, rows), hidden > 0 ? hidden : 4 * L::kC) <=
           std::size_t(cc::kMaxShared);
  };
  // What the rung's header states (halo rows and biases, hidden <= 4C): C = 256 takes every
  // W <= 29, C = 128 every W <= 80, C = 512 every W <= 19 (tall batches); the first width
  // past each fails even at the smallest hidden.
  for (int W = 1; W <= 29; ++W) CHECK(fits(cc::ClusterLayout256{}, W, 128 * 64));
  CHECK(!fits(cc::ClusterLayout256{}, 30, 128 * 64, 8));
  for (int W = 1; W <= 80; ++W) CHECK(fits(cc::ClusterLayout128{}, W, 128 * 64));
  CHECK(!fits(cc::ClusterLayout128{}, 81, 128 * 64, 8));
  for (int W = 1; W <= 19; ++W) CHECK(fits(cc::ClusterLayout512{}, W, 128 * 64));
  CHECK(!fits(cc::ClusterLayout512{}, 20, 128 * 64, 8));
  CHECK(fits(cc::ClusterLayout256{}, 43, 3));  // a short batch stages fewer rows (the test table's 3 x 43)
  CHECK(fits(cc::ClusterLayout512{}, 43, 1));  // a one-row image 43 wide
  CHECK(!fits(cc::ClusterLayout512{}, 43, 3));
  CHECK(fits(cc::ClusterLayout512{}, 19, 2 * 9, 136));  // the test table's 2 x 9 x 19
  // The biases lie inside the allocation, past the x buffers, for partial and whole chunks.
  for (const int hidden : {8, 64, 136, 200, 256, 1032, 2048}) {
    for (const int W : {1, 7, 14, 29})
      CHECK(convfirst_cluster_bias_mismatches<cc::ClusterLayout256>(W, 128 * W, hidden) == 0);
    for (const int W : {1, 28, 80})
      CHECK(convfirst_cluster_bias_mismatches<cc::ClusterLayout128>(W, 128 * W, hidden) == 0);
    for (const int W : {1, 7, 19})
      CHECK(convfirst_cluster_bias_mismatches<cc::ClusterLayout512>(W, 128 * W, hidden) == 0);
  }
}

// ---- the mbarrier ring, against a host model of the barrier -----------------------------

// One mbarrier: the phase completes when all expected arrivals came and no
// transaction bytes are pending; try_wait(P) is true once the phase of parity
// P has completed, i.e. while the current phase's parity differs from P.
struct ModelBarrier {
  int expected = 0, arrivals_left = 0;
  int64_t tx_pending = 0;
  uint32_t phase = 0;
  void init(int count) { expected = arrivals_left = count, tx_pending = 0, phase = 0; }
  void maybe_complete() {
    if (arrivals_left == 0 && tx_pending == 0) {
      phase ^= 1u;
      arrivals_left = expected;
    }
  }
  void arrive() { --arrivals_left, maybe_complete(); }
  void arrive_expect_tx(int64_t bytes) { tx_pending += bytes, --arrivals_left, maybe_complete(); }
  void complete_tx(int64_t bytes) { tx_pending -= bytes, maybe_complete(); }
  bool try_wait(uint32_t parity) const { return (phase & 1u) != parity; }
};

struct RingOutcome {
  bool finished = false;  // every consumer read every item
  int misreads = 0;       // a consumer found another item than it expected in its slot
  int overwrites = 0;     // the producer wrote a slot some consumer had not released
};

// One producer, kWarps consumer warps, items 0 .. items−1 through a kStages
// ring, the consumers releasing item i−1 after they started item i (as
// wgmma_gemm's consume() does). Random interleaving; `wrong_parity` makes the
// consumers wait with the producer's parity (a bug the model must expose).
template <int kStages>
RingOutcome run_ring(int items, int warps, uint64_t seed, bool wrong_parity = false) {
  std::mt19937_64 rng(seed);
  ModelBarrier full[kStages], empty[kStages];
  for (int s = 0; s < kStages; ++s) full[s].init(1), empty[s].init(warps);
  std::vector<int> slot_item(kStages, -1);   // the item a slot holds (written when the copy lands)
  std::vector<int> unreleased(kStages, 0);   // consumers that read the slot's item but have not released it
  struct Copy { int stage, item; };
  std::vector<Copy> in_flight;               // issued TMA copies, landing in any order
  PipelineState<kStages> producer;
  int produced = 0;
  struct Consumer { PipelineState<kStages> st, release; int item = 0; bool holding = false; };
  std::vector<Consumer> consumers(warps);
  RingOutcome out;
  for (int step = 0; step < 200000; ++step) {
    std::vector<int> ready;  // agents that can act: 0 = producer, 1 = a copy lands, 2 + w = consumer w
    if (produced < items && empty[producer.stage].try_wait(producer.empty_parity())) ready.push_back(0);
    if (!in_flight.empty()) ready.push_back(1);
    for (int w = 0; w < warps; ++w) {
      const Consumer& c = consumers[w];
      const uint32_t parity = wrong_parity ? c.st.empty_parity() : c.st.full_parity();
      if (c.item < items && full[c.st.stage].try_wait(parity)) ready.push_back(2 + w);
      else if (c.item == items && c.holding) ready.push_back(2 + w);  // the final release
    }
    if (ready.empty()) break;
    const int agent = ready[rng() % ready.size()];
    if (agent == 0) {  // acquire the slot, expect its bytes, issue the copy
      const int s = producer.stage;
      if (unreleased[s] != 0) ++out.overwrites;
      full[s].arrive_expect_tx(wg::kStageBytes);
      in_flight.push_back({s, produced});
      ++produced;
      producer.advance();
    } else if (agent == 1) {  // some copy lands
      const std::size_t i = rng() % in_flight.size();
      const Copy c = in_flight[i];
      in_flight.erase(in_flight.begin() + long(i));
      if (unreleased[c.stage] != 0) ++out.overwrites;
      slot_item[c.stage] = c.item;
      full[c.stage].complete_tx(wg::kStageBytes);
    } else {
      Consumer& c = consumers[agent - 2];
      if (c.item < items) {  // read item c.item, then release the previous one
        if (slot_item[c.st.stage] != c.item) ++out.misreads;
        ++unreleased[c.st.stage];
        if (c.holding) {
          --unreleased[c.release.stage];
          empty[c.release.stage].arrive();
          c.release.advance();
        }
        c.holding = true;
        c.st.advance();
        ++c.item;
      } else {  // after the last item: release it
        --unreleased[c.release.stage];
        empty[c.release.stage].arrive();
        c.release.advance();
        c.holding = false;
      }
    }
  }
  out.finished = true;
  for (const Consumer& c : consumers) out.finished = out.finished && c.item == items && !c.holding;
  return out;
}

TEST_CASE("hopper: the mbarrier ring delivers every item once, in order, under any interleaving",
          "[hopper][cpu]") {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const int items = 1 + int(seed % 23);  // fewer, as many as and more items than slots
    const RingOutcome r4 = run_ring<4>(items, wg::kConsumerWarps, seed);
    INFO("seed " << seed << ", " << items << " items");
    CHECK(r4.finished);
    CHECK(r4.misreads == 0);
    CHECK(r4.overwrites == 0);
    const RingOutcome r2 = run_ring<2>(items, 3, seed);
    CHECK((r2.finished && r2.misreads == 0 && r2.overwrites == 0));
  }
  // PipelineState::at agrees with advancing.
  PipelineState<4> st;
  for (int i = 0; i < 50; ++i, st.advance()) CHECK(st == PipelineState<4>::at(i));
}

TEST_CASE("hopper: the ring model catches a consumer waiting with the wrong parity", "[hopper][cpu]") {
  int caught = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const RingOutcome r = run_ring<4>(12, wg::kConsumerWarps, seed, /*wrong_parity=*/true);
    caught += !r.finished || r.misreads > 0 || r.overwrites > 0;
  }
  CHECK(caught == 50);
}

// ---- the cluster rung's exchange protocol (10e), against the same barrier model ------------
//
// Two CTAs, one consumer warpgroup each (the warpgroups of a CTA do not meet in this
// protocol), `threads` threads per warpgroup (the kernel has 128; the counts scale), each
// thread running the kernel's order per tile: store its T words into both CTAs' T
// buffers, arrive on T full here and in the peer, wait T full here (tile parity); per
// chunk: the expand (reads T; the last chunk's expand ends the tile's use of T), wait
// H free here (parity of the previous chunk), store its H words into the peer's buffer,
// arrive on the peer's H full, wait H full here (chunk parity), read the peer's words,
// arrive on the peer's H free. Random interleavings must finish, every thread must read
// the words of the peer's same thread for the same chunk, no H word may be overwritten
// before it was read, no T word of a tile may be written while any thread of that CTA
// still reads the previous tile's T, and T full must mean both halves of the tile are in.
struct ExchangeOutcome {
  bool finished = false;
  int misreads = 0;          // H words of another chunk (or none) found
  int h_overwrites = 0;      // H words rewritten before the peer's thread read them
  int t_overwrites = 0;      // T written for tile t+1 while T of tile t was still being read
  int t_incomplete = 0;      // T full passed before both halves of the tile were stored
};

ExchangeOutcome run_cluster_exchange(int threads, int tiles, int chunks, uint64_t seed, int bug = 0) {
  std::mt19937_64 rng(seed);
  enum Step { kStoreT, kWaitT, kExpand, kWaitFree, kSend, kWaitFull, kReceive, kDone };
  struct Thread { Step step = kStoreT; int tile = 0, chunk = 0, count = 0; bool reading_t = false; };
  ModelBarrier t_full[2], h_full[2], h_free[2];
  std::vector<Thread> th[2] = {std::vector<Thread>(std::size_t(threads)), std::vector<Thread>(std::size_t(threads))};
  std::vector<int> h_word[2], h_read[2], t_stores[2];  // per CTA: H words by thread, read flags; T stores per tile
  for (int k = 0; k < 2; ++k) {
    t_full[k].init(2 * threads);
    h_full[k].init(threads);
    h_free[k].init(threads);
    h_word[k].assign(std::size_t(threads), -1);
    h_read[k].assign(std::size_t(threads), 1);
    t_stores[k].assign(std::size_t(tiles), 0);
  }
  ExchangeOutcome out;
  const auto reads_t = [&](int k) {
    for (const Thread& x : th[k]) if (x.reading_t) return true;
    return false;
  };
  // wgmma is collective: the warpgroup's expand of (tile, chunk) runs, and so completes for
  // any thread, only once every thread of the warpgroup has issued it.
  const auto expand_issued = [&](int k, const Thread& x) {
    for (const Thread& y : th[k]) {
      const bool past = y.tile > x.tile || y.step == kDone ||
                        (y.tile == x.tile && y.step != kStoreT && y.step != kWaitT &&
                         (y.chunk > x.chunk || (y.chunk == x.chunk && y.step >= kExpand)));
      if (!past) return false;
    }
    return true;
  };
  for (int step = 0; step < 1000000; ++step) {
    std::vector<std::pair<int, int>> ready;
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < threads; ++i) {
        const Thread& x = th[k][std::size_t(i)];
        const uint32_t tile_parity = uint32_t(x.tile & 1), chunk_parity = uint32_t(x.count & 1);
        const uint32_t free_parity = bug == 1 ? chunk_parity : chunk_parity ^ 1u;
        bool can = false;
        switch (x.step) {
          case kStoreT: case kSend: case kReceive: can = true; break;
          case kExpand: can = expand_issued(k, x); break;
          case kWaitT: can = t_full[k].try_wait(tile_parity); break;
          case kWaitFree: can = h_free[k].try_wait(free_parity); break;
          case kWaitFull: can = h_full[k].try_wait(bug == 2 ? chunk_parity ^ 1u : chunk_parity); break;
          case kDone: break;
        }
        if (can) ready.push_back({k, i});
      }
    if (ready.empty()) break;
    const auto [k, i] = ready[rng() % ready.size()];
    const int peer = k ^ 1;
    Thread& x = th[k][std::size_t(i)];
    switch (x.step) {
      case kStoreT:  // into both buffers, then arrive here and in the peer
        out.t_overwrites += reads_t(k) || reads_t(peer);
        ++t_stores[k][std::size_t(x.tile)], ++t_stores[peer][std::size_t(x.tile)];
        t_full[k].arrive(), t_full[peer].arrive();
        x.step = kWaitT;
        break;
      case kWaitT:
        out.t_incomplete += t_stores[k][std::size_t(x.tile)] != 2 * threads;
        x.reading_t = true, x.chunk = 0, x.step = kExpand;
        break;
      case kExpand:  // the expand completes (wait_group): after the last chunk's, no thread reads T
        if (x.chunk == chunks - 1)
          for (Thread& y : th[k]) y.reading_t = false;
        x.step = kWaitFree;
        break;
      case kWaitFree:
        x.step = kSend;
        break;
      case kSend:  // our words into the peer's buffer, arrive on its H full
        out.h_overwrites += h_read[peer][std::size_t(i)] == 0;
        h_word[peer][std::size_t(i)] = x.tile * 1000 + x.chunk, h_read[peer][std::size_t(i)] = 0;
        h_full[peer].arrive();
        x.step = kWaitFull;
        break;
      case kWaitFull:
        x.step = kReceive;
        break;
      case kReceive:  // read the peer's same thread's words, arrive on the peer's H free
        out.misreads += h_word[k][std::size_t(i)] != x.tile * 1000 + x.chunk;
        h_read[k][std::size_t(i)] = 1;
        h_free[peer].arrive();
        ++x.count;
        if (++x.chunk < chunks) {
          x.step = kExpand;
        } else {
          x.step = ++x.tile < tiles ? kStoreT : kDone;
        }
        break;
      case kDone: break;
    }
  }
  out.finished = true;
  for (int k = 0; k < 2; ++k)
    for (const Thread& x : th[k]) out.finished = out.finished && x.step == kDone;
  return out;
}

TEST_CASE("hopper: the cluster rung's T and H exchange finishes, in order, under any interleaving",
          "[hopper][cpu]") {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    const int threads = 1 + int(seed % 4), tiles = 1 + int(seed % 5), chunks = 1 + int(seed / 5 % 4);
    const ExchangeOutcome r = run_cluster_exchange(threads, tiles, chunks, seed);
    INFO("seed " << seed << ", " << threads << " threads, " << tiles << " tiles, " << chunks << " chunks");
    CHECK(r.finished);
    CHECK(r.misreads == 0);
    CHECK(r.h_overwrites == 0);
    CHECK(r.t_overwrites == 0);
    CHECK(r.t_incomplete == 0);
  }
}

TEST_CASE("hopper: the exchange model catches wrong parities", "[hopper][cpu]") {
  // bug 1: H free waited with the chunk's own parity (deadlock at the first send);
  // bug 2: H full waited with the wrong parity (reads before the words are there).
  for (int bug = 1; bug <= 2; ++bug) {
    int caught = 0;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const ExchangeOutcome r = run_cluster_exchange(3, 3, 3, seed, bug);
      caught += !r.finished || r.misreads > 0 || r.h_overwrites > 0 || r.t_overwrites > 0 || r.t_incomplete > 0;
    }
    INFO("bug " << bug);
    CHECK(caught == 40);
  }
}

// ---- tile scheduler, register budget ------------------------------------------------------

// ---- 10e's weight ring when a pair projects the peer's slice a chunk late -----------------
//
// The producer's order and the consumers' reads, waits and releases, written out as the
// kernel runs them (gpu/convfirst/10e_fused_cluster.cu, step 5 in a pair, and the
// producer's load loop), over tiles of `chunks` chunks, against the barrier model above.
// An item is named by what it holds (tile, kind, chunk, piece); a consumer computes the
// index of what it wants from the kernel's formulas and must find exactly that in the
// slot. Copies land in any order; two consumer warpgroups run independently, as in the
// kernel. `bug` injects what the model must catch: 1 the peer's V piece projected without
// its wait (call 1 of wave-2v), 2 the producer loading the peer's piece beside the own one
// (the consumers' order unchanged), 3 the own V piece never handed back.
struct LatePeerOutcome {
  bool finished = false;
  int misreads = 0;    // a read found another item, or one not yet landed
  int overwrites = 0;  // a copy into a slot some consumer had not released
};

template <int kStages, int kU, int kV>
LatePeerOutcome run_late_peer_ring(int tiles, int chunks, uint64_t seed, int bug = 0) {
  static_assert(kV == 1 || kV == 2, "C = 128 (one V piece a chunk) or C = 256 (two)");
  enum Kind { kUPiece, kOwnV, kPeerV };
  struct Item {
    int tile = -1, kind = -1, chunk = -1, piece = -1;
    bool operator==(const Item&) const = default;
  };
  constexpr int kPer = kU + kV;
  const bool late = kV == 2;
  // The consumers' indices within a tile (the kernel's u_item, own_item, peer_item).
  const auto u_index = [&](int r, int q) { return late ? (r == 0 ? q : kPer * r - 1 + q) : kPer * r + q; };
  const auto own_index = [&](int r) { return kPer * r + kU; };
  const auto peer_index = [&](int r) {
    return late ? (r + 1 < chunks ? kPer * (r + 1) + kU - 1 : kPer * chunks - 1) : kPer * r + kU;
  };
  // The producer's order (C = 128's single V piece is named kOwnV: both projects read it).
  std::vector<Item> order;
  for (int t = 0; t < tiles; ++t) {
    for (int r = 0; r < chunks; ++r) {
      for (int q = 0; q < kU; ++q) order.push_back({t, kUPiece, r, q});
      if (late && bug != 2 && r > 0) order.push_back({t, kPeerV, r - 1, 0});
      order.push_back({t, kOwnV, r, 0});
      if (late && bug == 2) order.push_back({t, kPeerV, r, 0});
    }
    if (late && bug != 2) order.push_back({t, kPeerV, chunks - 1, 0});
  }
  // One consumer warpgroup's events, in the kernel's order.
  enum Op { kWait, kRead, kRelease };
  struct Event { Op op; int index; Item item; };
  std::vector<Event> events;
  for (int t = 0; t < tiles; ++t) {
    const int base = t * kPer * chunks;
    const auto ev = [&](Op op, int index, Item item) { events.push_back({op, base + index, item}); };
    const auto u = [&](Op op, int r, int q) { ev(op, u_index(r, q), {t, kUPiece, r, q}); };
    const auto own = [&](Op op, int r) { ev(op, own_index(r), {t, kOwnV, r, 0}); };
    const auto peer = [&](Op op, int r) {
      ev(op, peer_index(r), late ? Item{t, kPeerV, r, 0} : Item{t, kOwnV, r, 0});
    };
    for (int r = 0; r < chunks; ++r) {
      for (int q = 0; q < kU; ++q) {  // E(r); its first wait retires O(r − 1)
        u(kWait, r, q), u(kRead, r, q);
        if (q == 0 && r > 0 && late && bug != 3) own(kRelease, r - 1);
        if (q > 0) u(kRelease, r, q - 1);
      }
      if (r > 0) {  // P(r − 1), issued behind E(r)
        if (late && bug != 1) peer(kWait, r - 1);
        peer(kRead, r - 1);
      }
      u(kRelease, r, kU - 1);             // E(r) retired
      if (r > 0) peer(kRelease, r - 1);   // P(r − 1) retired
      own(kWait, r), own(kRead, r);       // O(r)
    }
    if (late && bug != 1) peer(kWait, chunks - 1);
    peer(kRead, chunks - 1);
    if (late && bug != 3) own(kRelease, chunks - 1);
    peer(kRelease, chunks - 1);
  }

  constexpr int kWarpgroups = 2;
  std::mt19937_64 rng(seed);
  ModelBarrier full[kStages], empty[kStages];
  for (int s = 0; s < kStages; ++s) full[s].init(1), empty[s].init(kWarpgroups);
  Item slot[kStages];
  bool landed[kStages] = {};
  int unreleased[kStages] = {};
  struct Copy { int stage; Item item; };
  std::vector<Copy> in_flight;
  int produced = 0;
  std::vector<std::size_t> next(kWarpgroups, 0);  // each warpgroup's next event
  std::vector<std::set<int>> held(kWarpgroups);   // the items it read and has not released
  LatePeerOutcome out;
  for (int step = 0; step < 400000; ++step) {
    std::vector<int> ready;  // 0 producer, 1 a copy lands, 2 + w warpgroup w
    const PipelineState<kStages> p = PipelineState<kStages>::at(produced);
    if (produced < int(order.size()) && empty[p.stage].try_wait(p.empty_parity())) ready.push_back(0);
    if (!in_flight.empty()) ready.push_back(1);
    for (int w = 0; w < kWarpgroups; ++w) {
      if (next[w] == events.size()) continue;
      const Event& e = events[next[w]];
      const PipelineState<kStages> st = PipelineState<kStages>::at(e.index);
      if (e.op != kWait || full[st.stage].try_wait(st.full_parity())) ready.push_back(2 + w);
    }
    if (ready.empty()) break;
    const int agent = ready[rng() % ready.size()];
    if (agent == 0) {
      if (unreleased[p.stage] != 0) ++out.overwrites;
      full[p.stage].arrive_expect_tx(1);
      in_flight.push_back({p.stage, order[std::size_t(produced)]});
      landed[p.stage] = false;
      ++produced;
    } else if (agent == 1) {
      const std::size_t i = rng() % in_flight.size();
      const Copy c = in_flight[i];
      in_flight.erase(in_flight.begin() + long(i));
      slot[c.stage] = c.item, landed[c.stage] = true;
      full[c.stage].complete_tx(1);
    } else {
      const int w = agent - 2;
      const Event& e = events[next[w]++];
      const int s = PipelineState<kStages>::at(e.index).stage;
      if (e.op == kRead) {  // (C = 128's V piece is read twice, by O and by P, and released once)
        if (!landed[s] || !(slot[s] == e.item)) ++out.misreads;
        if (held[w].insert(e.index).second) ++unreleased[s];
      } else if (e.op == kRelease) {
        if (held[w].erase(e.index) == 0) ++out.misreads;  // a release of what it never read
        --unreleased[s];
        empty[s].arrive();
      }
    }
  }
  out.finished = produced == int(order.size()) && in_flight.empty();
  for (std::size_t n : next) out.finished = out.finished && n == events.size();
  return out;
}

TEST_CASE("hopper: 10e's late peer project reads every weight piece where it landed, under any interleaving",
          "[hopper][cpu]") {
  namespace cc = convfirst_cluster;
  // The kernel's layouts: C = 128 four slots, one U and one V piece a chunk; C = 256 four
  // slots, two of each.
  static_assert(cc::ClusterLayout128::kStages == 4 && cc::ClusterLayout128::kUPieces == 1 &&
                cc::ClusterLayout128::kVPieces == 1);
  static_assert(cc::ClusterLayout256::kStages == 4 && cc::ClusterLayout256::kUPieces == 2 &&
                cc::ClusterLayout256::kVPieces == 2);
  for (uint64_t seed = 1; seed <= 150; ++seed) {
    const int tiles = 1 + int(seed % 3), chunks = 1 + int(seed % 9);  // chunks 1 .. 9: one, fewer, more than slots
    INFO("seed " << seed << ", " << tiles << " tiles of " << chunks << " chunks");
    const LatePeerOutcome c128 = run_late_peer_ring<4, 1, 1>(tiles, chunks, seed);
    CHECK((c128.finished && c128.misreads == 0 && c128.overwrites == 0));
    const LatePeerOutcome c256 = run_late_peer_ring<4, 2, 2>(tiles, chunks, seed);
    CHECK((c256.finished && c256.misreads == 0 && c256.overwrites == 0));
  }
}

TEST_CASE("hopper: the late peer ring model catches the missing wait, the old load order and a piece never freed",
          "[hopper][cpu]") {
  for (const int bug : {1, 2, 3}) {
    int caught = 0;
    for (uint64_t seed = 1; seed <= 60; ++seed) {
      const LatePeerOutcome r = run_late_peer_ring<4, 2, 2>(2, 3 + int(seed % 6), seed, bug);
      caught += !r.finished || r.misreads > 0 || r.overwrites > 0;
    }
    INFO("bug " << bug);
    CHECK(caught >= 30);  // bug 1 needs a copy still in flight at the read; 2 and 3 always show
  }
}

TEST_CASE("hopper: the persistent tile scheduler hands out every tile exactly once", "[hopper][cpu]") {
  for (const auto& [tm, tn] : {std::pair{1, 1}, std::pair{3, 5}, std::pair{17, 9}, std::pair{64, 32},
                              std::pair{9, 1}, std::pair{1, 40}}) {
    for (int group = 1; group <= 8; group *= 2) {
      const TileScheduler sched{tm, tn, group};
      for (int grid : {1, 7, 132, sched.tiles(), sched.tiles() + 5}) {
        std::vector<int> count(std::size_t(tm * tn), 0);
        for (int b = 0; b < grid; ++b)
          for (int t = sched.first(b); sched.valid(t); t = sched.next(t, grid)) {
            const gpu::TileCoord c = sched.coord(t);
            REQUIRE((c.m >= 0 && c.m < tm && c.n >= 0 && c.n < tn));
            ++count[std::size_t(c.m * tn + c.n)];
          }
        int once = 0;
        for (int v : count) once += v == 1;
        INFO(tm << " x " << tn << " tiles, group " << group << ", grid " << grid);
        CHECK(once == tm * tn);
      }
    }
  }
}

TEST_CASE("hopper: setmaxnreg budgets", "[hopper][cpu]") {
  CHECK(launch_register_cap(3) == 168);  // 384 threads
  CHECK(launch_register_cap(2) == 255);  // 256 threads: the per-thread maximum
  CHECK(register_budget_fits(wg::kProducerRegs, wg::kConsumerRegs, wg::kConsumers));
  CHECK(register_budget_fits(40, 232, 2));
  CHECK(!register_budget_fits(40, 240, 2));  // 40 + 2·240 > 3·168
  // 48 + 2·232 fits the SM's 65 536 but not the launch's 3·168·128 = 64 512: the consumers'
  // setmaxnreg.inc would wait for ever (10e's conv helpers hung on an H100 this way, wave-3x)
  CHECK(!register_budget_fits(48, 232, 2));
  CHECK(register_budget_fits(48, 224, 2));
  CHECK(!register_budget_fits(42, 232, 2));  // not a multiple of 8
  CHECK(!register_budget_fits(16, 232, 2));  // below 24
  CHECK(!register_budget_fits(200, 232, 2)); // the producer must give registers up
  CHECK(valid_setmaxnreg(24));
  CHECK(valid_setmaxnreg(256));
  CHECK(!valid_setmaxnreg(264));
}


// ---- TMA im2col (gpu/lib/hopper/tma_im2col.cuh, gpu/conv2d/04c_implicit_gemm_wgmma.cu) ----

// For every GEMM row of every 128-pixel box and every tap, the model of the
// engine's walk from the box's first origin reads the pixel the plain
// implicit-GEMM decode names: m -> (n, p, q), h = p·stride − pad + r, ...
int im2col_walk_mismatches(const ConvProblem& p) {
  const Im2colNhwc t = conv_wgmma::x_map_of(p, 0);
  const int P = p.P(), Q = p.Q(), M = p.N * P * Q;
  int wrong = 0;
  for (int m0 = 0; m0 < M; m0 += conv_wgmma::kBlockM) {
    const conv_wgmma::Origin o = conv_wgmma::origin_of(m0, P, Q, p.stride, p.pad);
    for (int r = 0; r < p.R; ++r)
      for (int s = 0; s < p.S; ++s)
        for (int i = 0; i < conv_wgmma::kBlockM && m0 + i < M; ++i) {
          const int m = m0 + i, n = m / (P * Q), pp = m / Q % P, q = m % Q;
          const int h = pp * p.stride - p.pad + r, w = q * p.stride - p.pad + s;
          const bool inside = h >= 0 && h < p.H && w >= 0 && w < p.W;
          const Im2colPixel got = tma_im2col_walk(t, o.n, o.h, o.w, i, r, s);
          wrong += got.n != n || got.h != h || got.w != w || got.inside != inside;
        }
  }
  return wrong;
}

ConvProblem conv_f16(int N, int H, int W, int C, int K, int R, int S, int stride, int pad) {
  ConvProblem p{.N = N, .H = H, .W = W, .C = C, .K = K, .R = R, .S = S, .stride = stride, .pad = pad};
  p.dtype = DType::f16;
  return p;
}

TEST_CASE("hopper: TMA im2col's walk through the bounding box visits each GEMM row's input pixel",
          "[hopper][cpu]") {
  for (const ConvProblem& p :
       {conv_f16(128, 56, 56, 128, 128, 3, 3, 1, 1), conv_f16(3, 7, 5, 8, 12, 3, 3, 2, 1),
        conv_f16(2, 10, 7, 32, 48, 3, 3, 2, 1), conv_f16(1, 11, 9, 16, 64, 5, 3, 1, 2),
        conv_f16(2, 11, 10, 24, 13, 3, 3, 1, 2), conv_f16(3, 9, 6, 8, 7, 3, 3, 1, 0),
        conv_f16(2, 8, 13, 16, 16, 3, 3, 3, 0), conv_f16(1, 1, 1, 8, 1, 1, 1, 1, 0),
        conv_f16(2, 23, 19, 8, 8, 7, 7, 2, 3), conv_f16(4, 5, 9, 8, 8, 1, 1, 2, 0)}) {
    INFO(OpTraits<ConvProblem>::spec(p));
    CHECK(conv_wgmma::unsupported_reason(p).empty());
    CHECK(im2col_walk_mismatches(p) == 0);
  }
  // Hand-checked: 10 x 7, pad 1, stride 1 has Q = 7 origins per row, w = −1 .. 5;
  // the 8th pixel of a box starting at (0, −1, −1) is output row 1's first.
  const ConvProblem p = conv_f16(2, 10, 7, 32, 48, 3, 3, 1, 1);
  const Im2colNhwc t = conv_wgmma::x_map_of(p, 0);
  CHECK((t.upper_w() == -1 && t.upper_h() == -1 && t.lower_w() == -1));
  const Im2colPixel next_row = tma_im2col_walk(t, 0, -1, -1, 7, 0, 0);
  CHECK((next_row.n == 0 && next_row.h == 0 && next_row.w == -1 && !next_row.inside));
  const Im2colPixel next_image = tma_im2col_walk(t, 0, -1, -1, 70, 1, 1);  // P·Q = 70
  CHECK((next_image.n == 1 && next_image.h == 0 && next_image.w == 0 && next_image.inside));
}

TEST_CASE("hopper: the im2col rung states its supported set from the encoder's rules", "[hopper][cpu]") {
  CHECK(conv_wgmma::unsupported_reason(conv_f16(1, 8, 8, 12, 8, 3, 3, 1, 1)).find("multiple of 8") != std::string::npos);
  CHECK(!conv_wgmma::unsupported_reason(conv_f16(1, 40, 40, 8, 8, 3, 3, 9, 1)).empty());    // stride 9
  CHECK(!conv_wgmma::unsupported_reason(conv_f16(1, 8, 8, 8, 8, 3, 3, 1, 129)).empty());    // lower corner −129
  CHECK(!conv_wgmma::unsupported_reason(conv_f16(1, 200, 200, 8, 8, 131, 131, 1, 0)).empty());  // upper −130
  ConvProblem grouped = conv_f16(1, 8, 8, 16, 16, 3, 3, 1, 1);
  grouped.groups = 2;
  CHECK(!conv_wgmma::unsupported_reason(grouped).empty());
  ConvProblem f32 = conv_f16(1, 8, 8, 16, 16, 3, 3, 1, 1);
  f32.dtype = DType::f32;
  CHECK(!conv_wgmma::unsupported_reason(f32).empty());
  ConvProblem bf16 = conv_f16(1, 8, 8, 16, 16, 3, 3, 1, 1);
  bf16.dtype = DType::bf16;
  CHECK(conv_wgmma::unsupported_reason(bf16).empty());
  Im2colNhwc t = conv_wgmma::x_map_of(conv_f16(1, 8, 8, 16, 16, 3, 3, 1, 1), 0x1008);
  CHECK(tma_im2col_unsupported_reason(t).find("16-byte aligned") != std::string::npos);
}

TEST_CASE("hopper: in every conv slot, wgmma's descriptors read where the im2col and filter boxes land",
          "[hopper][cpu]") {
  int wrong = 0;
  for (int st = 0; st < conv_wgmma::kStages; ++st) {
    const uint32_t slot = 1024 + uint32_t(st) * conv_wgmma::kStageBytes;
    REQUIRE(slot % kTmaSwizzleAtomBytes == 0);
    REQUIRE(conv_wgmma::b_box_address(slot) % kTmaSwizzleAtomBytes == 0);
    for (int ks = 0; ks < conv_wgmma::kKSteps; ++ks) {
      for (int consumer = 0; consumer < conv_wgmma::kConsumers; ++consumer)
        for (int m = 0; m < 64; ++m)
          for (int k = 0; k < 16; ++k)
            wrong += gpu::wgmma_k_major_sw128_address(conv_wgmma::a_descriptor(slot, consumer, ks), m, k) !=
                     slot + tma_sw128_box_offset(consumer * 64 + m, ks * 16 + k, 2);
      for (int n = 0; n < conv_wgmma::kBlockN; ++n)
        for (int k = 0; k < 16; ++k)
          wrong += gpu::wgmma_k_major_sw128_address(conv_wgmma::b_descriptor(slot, ks), n, k) !=
                   conv_wgmma::b_box_address(slot) + tma_sw128_box_offset(n, ks * 16 + k, 2);
    }
  }
  CHECK(wrong == 0);
  // k items walk taps outer, channel blocks inner, covering j = (r·S + s)·C + c once.
  const conv_wgmma::KIter last = conv_wgmma::k_iter(3 * 5 * 2 - 1, 2, 5);
  CHECK((last.r == 2 && last.s == 4 && last.rs == 14 && last.c0 == 64));
}

// The quad's transpose before 10e's 16-byte y stores: every lane of 1, 3 and 64 warps must end
// with its quad's block tq, in column order (thread s's pair in word s). The rule's own check
// on the host: it is not the identity, and each quad's sixteen words are a permutation.
TEST_CASE("hopper: quad_transpose leaves each thread of a quad one whole block", "[hopper][gpu]") {
  for (int g = 0; g < 8; ++g)
    for (int tq = 0; tq < 4; ++tq)
      for (int s = 0; s < 4; ++s)
        CHECK((gpu::quad_transpose_word(0, g, tq, s) == gpu::quad_transpose_word(0, g, s, tq)) == (s == tq));
  if (testing::skip_without_gpu()) return;
#if CONVLAB_HAVE_CUDA
  for (int warps : {1, 3, 64}) {
    INFO(warps << " warps");
    CHECK(gpu::run_quad_transpose_probe(warps) == 0);
  }
  CHECK_THROWS_AS(gpu::run_quad_transpose_probe(0), std::invalid_argument);
#else
  FAIL("unreachable: skip_without_gpu() is true in a build without CUDA");
#endif
}

// The GPU half of the box of several panels: one 3-D copy, each element of the tile where
// tma_sw128_panels_offset says, zeros for rows past the matrix and for panels past its columns.
TEST_CASE("hopper: one TMA copy of several panels lands where the model says, zeros outside", "[hopper][gpu]") {
  if (testing::skip_without_gpu()) return;
#if CONVLAB_HAVE_CUDA
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty()) FAIL("sm_90a code cannot run here: " << why);
  std::mt19937_64 rng(testing::base_seed() + 91);
  const gpu::TmaPanelsCase cases[] = {
      {1152, 192, 64, 3, 0, 0},     // 11g's Wp stage at C_out 192
      {1152, 192, 64, 3, 1120, 0},  // the last stage runs 32 rows past the matrix
      {1152, 320, 64, 5, 64, 0},    // C_out 320: five panels
      {512, 320, 128, 2, 64, 192},  // panels 3 and 4 of 5, 128-row box
      {512, 320, 128, 2, 256, 256}, // the second panel lies past the columns
      {200, 128, 16, 2, 192, 0},    // rows not a multiple of the box
  };
  for (const gpu::TmaPanelsCase& c : cases) {
    std::vector<uint16_t> matrix(std::size_t(c.rows) * c.cols);
    for (uint16_t& v : matrix) v = uint16_t(1 + rng() % 0xfffe);  // never 0 (the fill) nor the poison 0xffff
    INFO(c.rows << " x " << c.cols << ", box " << c.box_rows << " x " << c.box_panels << " panels at (" << c.row0
                << ", " << c.col0 << ") (replay: CONVLAB_SEED=" << testing::base_seed() << ")");
    CHECK(gpu::run_tma_panels_probe(c, matrix) == 0);
  }
#else
  FAIL("unreachable: skip_without_gpu() is true in a build without CUDA");
#endif
}

// The GPU half of the multicast copy: every box, asked for once per cluster by the CTA whose
// rank it is, must land in every CTA of the cluster where tma_sw128_box_offset says. Shapes:
// clusters of 2 and 4, one box (most ranks issue nothing), a box count that does not divide
// among the ranks, and a full share each; three clusters, so that cluster and CTA indices differ.
TEST_CASE("hopper: a TMA copy multicast to a cluster lands in every CTA", "[hopper][gpu]") {
  if (testing::skip_without_gpu()) return;
#if CONVLAB_HAVE_CUDA
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty()) FAIL("sm_90a code cannot run here: " << why);
  std::mt19937_64 rng(testing::base_seed() + 90);
  for (int cluster : {2, 4})
    for (int boxes : {1, 5, 8}) {
      std::vector<uint16_t> matrix(std::size_t(boxes) * 64 * 64);
      for (uint16_t& v : matrix) v = uint16_t(rng() % 0xffff);  // never the poison 0xffff
      const std::vector<int> wrong = gpu::run_tma_multicast_probe(cluster, 3, boxes, matrix);
      INFO("cluster " << cluster << ", " << boxes << " boxes (replay: CONVLAB_SEED=" << testing::base_seed() << ")");
      REQUIRE(wrong.size() == std::size_t(cluster) * 3);
      for (std::size_t cta = 0; cta < wrong.size(); ++cta) {
        INFO("CTA " << cta);
        CHECK(wrong[cta] == 0);
      }
    }
#else
  FAIL("unreachable: skip_without_gpu() is true in a build without CUDA");
#endif
}

}  // namespace
}  // namespace convlab
