// tests/lesson09_wgmma_test.cpp — the wgmma conventions behind gpu/attention/09d_flash_wgmma.cu.
//
// Rung 09d is only right if four conventions are, each read from the PTX ISA
// (gpu/lib/wgmma.cuh): the accumulator layout, the A-from-registers layout,
// the shared-memory tile that cp.async writes, and the matrix descriptors that
// tell wgmma how to read that tile (K-major for Q and K, MN-major for V).
//
//   [cpu] The integer half, exhaustively, without a GPU: the fragment maps are
//         bijections and repeat mma.sync's per warp; S's accumulators of a key
//         k16 step are exactly P's A fragment; the tile layout is a bijection
//         with conflict-free 8-row phases; the descriptor fields sit at the
//         documented bits; and a model of the hardware's read (the PTX ISA's
//         canonical layouts, transcribed) finds every element of every k-step
//         where Sw128Tile put it.
//   [gpu] The probe (gpu/lib/wgmma_probe.cu): one tile of each product on the
//         GPU with those layouts, against a host product. If S = Q·Kᵀ is wrong,
//         the K-major descriptor, the tile or the accumulator map is; if S is
//         right and P·V from loaded P is wrong, the MN-major descriptor (V) or
//         the A-fragment map is; if only P·V from S's accumulators is wrong,
//         the accumulator-to-A reuse is. Each failure names the product and
//         the first wrong element.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab::gpu {
namespace {

// ---- register fragments ---------------------------------------------------------------

TEST_CASE("lesson 09: wgmma fragments D and register A are bijections with the mma.sync layouts per warp",
          "[wgmma][cpu][lesson09]") {
  constexpr int N = 128;
  std::set<std::pair<int, int>> d, a;
  for (int thread = 0; thread < 128; ++thread) {
    for (int i = 0; i < N / 2; ++i) {
      const MatrixCoord c = wgmma_d_coord(thread, i);
      CHECK((c.row >= 0 && c.row < 64 && c.col >= 0 && c.col < N));
      // Warp w owns rows 16w..16w+15; in each n8 column tile, mma.sync's C fragment.
      const MatrixCoord m = mma_c_coord(thread % 32, i % 4);
      CHECK(c == MatrixCoord{16 * (thread / 32) + m.row, 8 * (i / 4) + m.col});
      d.insert({c.row, c.col});
    }
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const MatrixCoord c = wgmma_a_coord(thread, reg, half);
        CHECK((c.row >= 0 && c.row < 64 && c.col >= 0 && c.col < 16));
        a.insert({c.row, c.col});
      }
  }
  CHECK(d.size() == std::size_t(64 * N));
  CHECK(a.size() == std::size_t(64 * 16));
  // Spot checks against the PTX ISA's figures: thread 0 holds D (0,0), (0,1),
  // (8,0), (8,1), then (0,8) ...; thread 37 (warp 1, lane 5: g = 1, t = 1) row 17.
  CHECK(wgmma_d_coord(0, 0) == MatrixCoord{0, 0});
  CHECK(wgmma_d_coord(0, 1) == MatrixCoord{0, 1});
  CHECK(wgmma_d_coord(0, 2) == MatrixCoord{8, 0});
  CHECK(wgmma_d_coord(0, 3) == MatrixCoord{8, 1});
  CHECK(wgmma_d_coord(0, 4) == MatrixCoord{0, 8});
  CHECK(wgmma_d_coord(37, 0) == MatrixCoord{17, 2});
  CHECK(wgmma_d_coord(127, 63) == MatrixCoord{63, 127});
  CHECK(wgmma_a_coord(37, 0, 0) == MatrixCoord{17, 2});
  CHECK(wgmma_a_coord(37, 3, 1) == MatrixCoord{25, 11});
}

TEST_CASE("lesson 09: wgmma accumulators of a 16-key step of S are the A fragment of P",
          "[wgmma][cpu][lesson09]") {
  // 09d_flash_wgmma packs p[kk][r] = (s[wgmma_d_index_for_a(kk, r, 0)], s[... 1]).
  for (int thread = 0; thread < 128; ++thread)
    for (int kk = 0; kk < 8; ++kk)
      for (int reg = 0; reg < 4; ++reg)
        for (int half = 0; half < 2; ++half) {
          const MatrixCoord want = wgmma_a_coord(thread, reg, half);  // {row, key within the k-step}
          const int i = wgmma_d_index_for_a(kk, reg, half);
          REQUIRE((i >= 0 && i < 64));
          const MatrixCoord got = wgmma_d_coord(thread, i);           // {row, key within the tile}
          INFO("thread " << thread << " k-step " << kk << " reg " << reg << " half " << half);
          CHECK(got == MatrixCoord{want.row, 16 * kk + want.col});
        }
}

// ---- the swizzled tile --------------------------------------------------------------------

template <int kRows, int kCols> void check_tile_layout() {
  using Tile = Sw128Tile<kRows, kCols>;
  INFO("Sw128Tile<" << kRows << ", " << kCols << ">");
  std::vector<int> hits(Tile::kBytes / 2, 0);
  for (int row = 0; row < kRows; ++row)
    for (int col = 0; col < kCols; ++col) {
      const int b = Tile::byte_offset(row, col);
      REQUIRE((b >= 0 && b < Tile::kBytes && b % 2 == 0));
      ++hits[b / 2];
      // The 8 elements of a 16-byte chunk stay together and in order.
      CHECK(b - Tile::byte_offset(row, col - col % 8) == 2 * (col % 8));
      // A row of a panel stays in its own 128-byte line.
      CHECK(b / 128 == (col / 64) * kRows + row);
    }
  CHECK(std::count(hits.begin(), hits.end(), 1) == Tile::kBytes / 2);
  // cp.async writes and wgmma reads touch 8 consecutive rows at one logical
  // chunk: they must land in 8 different 16-byte bank groups.
  for (int row0 = 0; row0 < kRows; row0 += 8)
    for (int col = 0; col < kCols; col += 8) {
      std::set<int> groups;
      for (int r = row0; r < row0 + 8; ++r) groups.insert((Tile::byte_offset(r, col) / 16) % 8);
      CHECK(groups.size() == 8);
    }
}

TEST_CASE(
    "lesson 09: wgmma tile Sw128Tile is a bijection that keeps chunks whole and spreads 8 rows over 8 bank groups",
    "[wgmma][cpu][lesson09]") {
  check_tile_layout<128, 128>();
  check_tile_layout<128, 64>();
  check_tile_layout<64, 128>();
}

// ---- descriptors ----------------------------------------------------------------------------

TEST_CASE("lesson 09: wgmma descriptor fields sit at the PTX ISA bit positions", "[wgmma][cpu][lesson09]") {
  // start 0x1230 -> 0x123 in bits 0-13; LBO 16 -> 1 at bit 16; SBO 1024 -> 64
  // at bit 32; 128-byte swizzle = 1 in bits 62-63; base offset 0.
  CHECK(wgmma_descriptor(0x1230, 16, 1024, WgmmaSwizzle::b128) == 0x4000004000010123ull);
  CHECK(wgmma_descriptor(0, 0, 0, WgmmaSwizzle::b64) == 0x8000000000000000ull);
  CHECK(wgmma_descriptor(0x3FFF0, 0, 0, WgmmaSwizzle::none) == 0x3FFFull);
  const WgmmaDescriptorFields f = wgmma_decode(wgmma_descriptor(0x2A400, 16384, 1024, WgmmaSwizzle::b128));
  CHECK(f.start_address == 0x2A400u);
  CHECK(f.leading_byte_offset == 16384u);
  CHECK(f.stride_byte_offset == 1024u);
  CHECK(f.base_offset == 0u);
  CHECK(f.swizzle == WgmmaSwizzle::b128);
  // Adding (bytes >> 4) to a descriptor moves its start address and nothing else.
  const uint64_t desc = wgmma_descriptor(0x8000, 16, 1024, WgmmaSwizzle::b128);
  CHECK(desc + (0x60 >> 4) == wgmma_descriptor(0x8060, 16, 1024, WgmmaSwizzle::b128));
}

// Every element of every k16 step that 09d_flash_wgmma reads through a
// K-major descriptor (A = Q rows of warpgroup w, B = a K tile) is where the
// tile layout stored it, per the PTX ISA's canonical K-major layout.
template <int kHeadDim> void check_k_major_reads() {
  using QTile = Sw128Tile<128, kHeadDim>;
  using KTile = Sw128Tile<128, kHeadDim>;
  INFO("d = " << kHeadDim);
  const uint32_t q_tile = 0x0400 * 16, k_tile = q_tile + QTile::kBytes;  // 1024-aligned, as in the kernel
  for (int ks = 0; ks < kHeadDim / 16; ++ks) {
    for (int warpgroup = 0; warpgroup < 2; ++warpgroup) {  // A: 64 rows x 16 k
      const uint64_t a = k_major_descriptor<QTile>(q_tile, 64 * warpgroup, 16 * ks);
      CHECK(wgmma_decode(a).base_offset == 0u);
      // The kernel's form: the k0 = 0 descriptor advanced by a constant.
      CHECK(wgmma_advance(k_major_descriptor<QTile>(q_tile, 64 * warpgroup, 0), k_major_step_bytes<QTile>(16 * ks)) ==
            a);
      for (int m = 0; m < 64; ++m)
        for (int k = 0; k < 16; ++k) {
          INFO("A k-step " << ks << " warpgroup " << warpgroup << " m " << m << " k " << k);
          REQUIRE(wgmma_k_major_sw128_address(a, m, k) ==
                  q_tile + uint32_t(QTile::byte_offset(64 * warpgroup + m, 16 * ks + k)));
        }
    }
    const uint64_t b = k_major_descriptor<KTile>(k_tile, 0, 16 * ks);  // B: 128 keys (n) x 16 k
    CHECK(wgmma_advance(k_major_descriptor<KTile>(k_tile, 0, 0), k_major_step_bytes<KTile>(16 * ks)) == b);
    for (int n = 0; n < 128; ++n)
      for (int k = 0; k < 16; ++k) {
        INFO("B k-step " << ks << " n " << n << " k " << k);
        REQUIRE(wgmma_k_major_sw128_address(b, n, k) == k_tile + uint32_t(KTile::byte_offset(n, 16 * ks + k)));
      }
  }
}

TEST_CASE("lesson 09: wgmma K-major descriptors of Q and K read what Sw128Tile wrote", "[wgmma][cpu][lesson09]") {
  check_k_major_reads<128>();
  check_k_major_reads<64>();
}

// V [key][d] as the B operand of P·V: K x N = keys x d, d contiguous (MN-major).
template <int kHeadDim> void check_mn_major_reads() {
  using VTile = Sw128Tile<128, kHeadDim>;
  INFO("d = " << kHeadDim);
  const uint32_t v_tile = 0x0400 * 48;
  for (int kk = 0; kk < 128 / 16; ++kk) {
    const uint64_t b = mn_major_descriptor<VTile>(v_tile, 16 * kk);
    CHECK(wgmma_decode(b).base_offset == 0u);
    CHECK(wgmma_advance(mn_major_descriptor<VTile>(v_tile, 0), mn_major_step_bytes<VTile>(16 * kk)) == b);
    for (int k = 0; k < 16; ++k)
      for (int n = 0; n < kHeadDim; ++n) {
        INFO("k-step " << kk << " k " << k << " n " << n);
        REQUIRE(wgmma_mn_major_sw128_address(b, k, n) == v_tile + uint32_t(VTile::byte_offset(16 * kk + k, n)));
      }
  }
}

TEST_CASE("lesson 09: wgmma MN-major descriptor of V reads what Sw128Tile wrote", "[wgmma][cpu][lesson09]") {
  check_mn_major_reads<128>();
  check_mn_major_reads<64>();
}

// ---- the GPU probe ----------------------------------------------------------------------------

#if CONVLAB_HAVE_CUDA
uint16_t to_bits(DType dtype, float x) { return dtype == DType::f16 ? float_to_half(x) : float_to_bf16(x); }
float from_bits(DType dtype, uint16_t b) { return dtype == DType::f16 ? half_to_float(b) : bf16_to_float(b); }

// Random matrix of `count` elements in [lo, hi), as dtype bit patterns.
std::vector<uint16_t> random_bits(DType dtype, std::size_t count, float lo, float hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<uint16_t> out(count);
  for (uint16_t& b : out) b = to_bits(dtype, dist(rng));
  return out;
}

// C [rows x cols] = A [rows x inner] · B, B given as [cols x inner] (b_transposed) or [inner x cols].
std::vector<double> host_product(const std::vector<double>& a, const std::vector<double>& b, int rows, int inner,
                                 int cols, bool b_transposed) {
  std::vector<double> c(std::size_t(rows) * cols, 0.0);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      double acc = 0.0;
      for (int x = 0; x < inner; ++x)
        acc += a[std::size_t(i) * inner + x] *
               (b_transposed ? b[std::size_t(j) * inner + x] : b[std::size_t(x) * cols + j]);
      c[std::size_t(i) * cols + j] = acc;
    }
  return c;
}

std::vector<double> widen(DType dtype, const std::vector<uint16_t>& bits) {
  std::vector<double> out(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) out[i] = from_bits(dtype, bits[i]);
  return out;
}

// "" if got matches want within tol (absolute, fp32 accumulation of exact products),
// else the first mismatch and the number of mismatches.
std::string compare_product(const char* what, const std::vector<float>& got, const std::vector<double>& want,
                            int cols, double tol) {
  int bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = got[i];
    if (std::isfinite(g) && std::fabs(g - want[i]) <= tol) continue;
    if (bad++ == 0)
      first << what << ": first wrong element (row " << i / cols << ", column " << i % cols << "): got " << g
            << ", want " << want[i];
  }
  if (bad == 0) return "";
  first << "; " << bad << " of " << want.size() << " elements wrong";
  return first.str();
}
#endif  // CONVLAB_HAVE_CUDA

void check_probe(DType dtype, int d) {
  if (testing::skip_without_gpu()) return;
#if CONVLAB_HAVE_CUDA
  if (const std::string why = wgmma_unavailable_reason(); !why.empty()) FAIL("wgmma cannot run here: " << why);
  const uint64_t seed = testing::base_seed() + uint64_t(d) + (dtype == DType::bf16 ? 1000 : 0);
  INFO(dtype_name(dtype) << ", d = " << d << " (replay: CONVLAB_SEED=" << testing::base_seed() << ")");
  std::mt19937_64 rng(seed);
  constexpr int R = kWgmmaProbeRows, K = kWgmmaProbeKeys;
  const std::vector<uint16_t> q = random_bits(dtype, std::size_t(R) * d, -1.f, 1.f, rng);
  const std::vector<uint16_t> k = random_bits(dtype, std::size_t(K) * d, -1.f, 1.f, rng);
  const std::vector<uint16_t> p = random_bits(dtype, std::size_t(R) * K, 0.f, 1.f, rng);
  const std::vector<uint16_t> v = random_bits(dtype, std::size_t(K) * d, -1.f, 1.f, rng);
  const WgmmaProbeResult r = run_wgmma_probe(dtype, d, q, k, p, v);

  // Products of 16-bit inputs are exact in fp32; only the fp32 sums round:
  // |error| ≲ depth · u_fp32 · Σ|terms| ≈ 128 · 6e-8 · 128 ≈ 1e-3 at worst.
  // A wrong layout moves whole terms (errors of order 1).
  const double tol = 2e-3;
  const std::vector<double> s_want = host_product(widen(dtype, q), widen(dtype, k), R, d, K, /*b_transposed=*/true);
  const std::string s_error = compare_product("S = Q·Kᵀ (K-major descriptors, D fragment)", r.s, s_want, K, tol);
  {
    INFO(s_error);
    CHECK(s_error.empty());
  }

  const std::vector<double> o_want = host_product(widen(dtype, p), widen(dtype, v), R, K, d, false);
  const std::string o_error =
      compare_product("O = P·V (register A fragment, MN-major V descriptor)", r.o_from_p, o_want, d, tol);
  {
    INFO(o_error);
    CHECK(o_error.empty());
  }

  // The rung's path: P rounded from S's accumulators. Round the GPU's own S
  // (checked above) so that ties at rounding boundaries cannot differ.
  std::vector<double> s_rounded(r.s.size());
  for (std::size_t i = 0; i < r.s.size(); ++i) s_rounded[i] = from_bits(dtype, to_bits(dtype, r.s[i]));
  const std::vector<double> os_want = host_product(s_rounded, widen(dtype, v), R, K, d, false);
  // |S| ≤ d here, so the terms are up to d times larger than P's: scale the tolerance.
  const std::string os_error = compare_product("O = round(S)·V (accumulators reused as the A fragment)",
                                               r.o_from_s, os_want, d, tol * d);
  INFO(os_error);
  CHECK(os_error.empty());
#else
  FAIL("unreachable: skip_without_gpu() is true in a build without CUDA");
#endif
}

TEST_CASE(
    "lesson 09: wgmma probe on the GPU matches the host for S from Q and K and for PV with P loaded or from S",
    "[wgmma][gpu][lesson09]") {
  SECTION("f16, d = 128") { check_probe(DType::f16, 128); }
  SECTION("bf16, d = 128") { check_probe(DType::bf16, 128); }
  SECTION("f16, d = 64") { check_probe(DType::f16, 64); }
  SECTION("bf16, d = 64") { check_probe(DType::bf16, 64); }
}

}  // namespace
}  // namespace convlab::gpu
