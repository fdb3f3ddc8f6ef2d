// tests/lesson10_convfirst_test.cpp — lesson 10's claims that the registry tests do not check.
//
// The registry tests run every convfirst rung on the test table against
// ref::convfirst_block. Beside that:
//
//   1. The descriptor's counts, by hand on a tiny block (MACs, compulsory
//      bytes, layer-by-layer bytes), and the plans agree with the descriptor:
//      the layer-by-layer plan's kernels add up to layer_by_layer_bytes(), the
//      fused plan's to min_bytes(), every plan to the block's MACs.
//   2. The fused CPU rung's workspace does not grow with N·H·W.
//   3. `convlab run convfirst --in` takes 7 files, or 9 for a projecting
//      stride-2 block, and refuses other counts and mismatches with one line.
//   4. `convlab plans convfirst` prints the three plans; --json parses.
//   5. The stride-2 rungs' index arithmetic (gpu/lib/blurpool_s2_indexing.cuh),
//      run on the host over staged rows built as the kernel builds them:
//      10d's 81 combos and 10f's composed 5×5 slots with their edge terms both
//      reproduce blurpool(gconv3x3(x) + b), the shortcut blurpool(x), and read
//      only staged rows and columns inside the image.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/npy.hpp"
#include "gpu/lib/blurpool_s2_indexing.cuh"
#include "ops/convfirst.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace {

using namespace convlab;

ConvFirstProblem block(int N, int H, int W, int C, int hidden, int C_out, int stride, DType dtype = DType::f32) {
  ConvFirstProblem p;
  p.N = N, p.H = H, p.W = W, p.C = C, p.hidden = hidden, p.C_out = C_out, p.stride = stride, p.dtype = dtype;
  return p;
}

using convlab::testing::contains;

std::filesystem::path work_dir() { return convlab::testing::scratch_dir("l10_test"); }

using convlab::testing::random_tensor;

}  // namespace

TEST_CASE("convfirst: the descriptor's counts by hand", "[convfirst][lesson10][cpu]") {
  // N=1, 2x3 image, C=8, hidden=16: 6 pixels.
  const ConvFirstProblem p = block(1, 2, 3, 8, 16, 8, 1);
  CHECK(p.conv_macs() == 6.0 * 8 * 72);                 // 72 MACs per output channel (3x3 x 8 channels)
  CHECK(p.ffn_macs() == 6.0 * (8 * 16 + 16 * 8));
  CHECK(p.macs() == 3456.0 + 1536.0);
  CHECK(p.flops() == 2.0 * p.macs());
  const double weights = 8 * 72 + 8 + 8 * 16 + 16 + 16 * 8 + 8;  // conv w, b; U, a; V, b
  CHECK(p.weight_elems() == weights);
  CHECK(p.min_bytes() == 4.0 * (48 + weights + 48));
  // + t written and read, h (6 x 16) written and read, x read again by the shortcut
  CHECK(p.layer_by_layer_bytes() == p.min_bytes() + 4.0 * (2 * 48 + 2 * 96 + 48));

  // Stride 2, 5x5 -> 3x3, C 8 -> 16: the projection adds C·C_out MACs per output pixel.
  const ConvFirstProblem s = block(1, 5, 5, 8, 32, 16, 2);
  REQUIRE(s.has_projection());
  CHECK(s.P() == 3);
  CHECK(s.Q() == 3);
  CHECK(s.conv_macs() == 25.0 * 8 * 72);  // the conv runs at full resolution
  CHECK(s.shortcut_macs() == 9.0 * 8 * 16);
  CHECK(block(1, 5, 5, 8, 32, 8, 2).shortcut_macs() == 0.0);  // identity shortcut
}

TEST_CASE("convfirst: every plan adds up to the descriptor", "[convfirst][lesson10][cpu]") {
  for (const ConvFirstProblem& p :
       {block(2, 7, 9, 16, 64, 16, 1, DType::f16), block(1, 13, 7, 24, 72, 40, 2), block(3, 7, 7, 8, 32, 8, 2)}) {
    INFO(OpTraits<ConvFirstProblem>::spec(p));
    const std::vector<ConvFirstPlan> plans = convfirst_plans(p);
    REQUIRE(plans.size() == 4);
    CHECK(plans[0].name == "layer_by_layer");
    CHECK(std::abs(plans[0].dram_bytes() - p.layer_by_layer_bytes()) <= 1e-9 * p.layer_by_layer_bytes());
    CHECK(plans[1].name == "fused");
    CHECK(plans[1].dram_bytes() == p.min_bytes());
    CHECK(plans[2].name == "large_c");
    CHECK(plans[2].global_bytes > plans[1].global_bytes);  // t and h cross between the CTAs
    // At a split of 2, t and h each cross once (16-bit): the cluster plan's extra global bytes.
    const double e = p.dtype == DType::f32 ? 4.0 : 2.0, extra = e * (double(p.output_pixels()) * p.C + double(p.output_pixels()) * p.hidden);
    if (p.stride == 1) CHECK(std::abs(plans[2].global_bytes - plans[1].global_bytes - extra) <= 1e-9 * extra);
    // The fused grid: one CTA per 128-pixel output tile (a partial last tile too), times the split.
    const double tiles = std::ceil(p.output_pixels() / 128);
    CHECK(plans[0].ctas == 0);
    CHECK(plans[1].ctas == tiles);
    CHECK(plans[2].ctas == 2 * tiles);
    // Cut by hidden column: t crosses as before, h never does, and each CTA's copy of the other
    // CTA's output channels crosses once, in fp32: at a split of 2, e·t + 4·y on top of fused.
    CHECK(plans[3].name == "large_c_hidden");
    CHECK(plans[3].ctas == 2 * tiles);
    CHECK(plans[3].dram_bytes() == p.min_bytes());
    const double extra_hidden = e * double(p.output_pixels()) * p.C + 4.0 * double(p.output_pixels()) * p.C_out;
    if (p.stride == 1)
      CHECK(std::abs(plans[3].global_bytes - plans[1].global_bytes - extra_hidden) <= 1e-9 * extra_hidden);
    // It moves less than the cut by output channel exactly when 4·C_out < e·hidden (α = 4 in f16: half the h bytes).
    if (p.stride == 1) CHECK((plans[3].global_bytes < plans[2].global_bytes) == (4.0 * p.C_out < e * p.hidden));
    CHECK(convfirst_plans(p, 64, 4)[3].ctas == 4 * std::ceil(p.output_pixels() / 64));
    CHECK(convfirst_plans(p, 64, 4)[2].ctas == 4 * std::ceil(p.output_pixels() / 64));
    for (const ConvFirstPlan& plan : plans) CHECK(std::abs(plan.macs() - p.macs()) <= 1e-9 * p.macs());
    // The suite's own layer-by-layer rungs move more than the plan's floor.
    CHECK(p.suite_layer_by_layer_bytes() > p.layer_by_layer_bytes());
  }
}

TEST_CASE("convfirst: the fused CPU rung's workspace does not grow with the image", "[convfirst][lesson10][cpu]") {
  const std::size_t small = testing::workspace_of("convfirst", Device::cpu, "10b_fused", "N=1,H=7,C=64");
  const std::size_t big = testing::workspace_of("convfirst", Device::cpu, "10b_fused", "N=4,H=56,C=64");
  CHECK(small == big);
  const std::size_t layers = testing::workspace_of("convfirst", Device::cpu, "10a_layer_by_layer", "N=4,H=56,C=64");
  CHECK(layers > 4u * 56 * 56 * 64 * 4);  // at least t (and the FFN's hidden tensor) in memory
}

TEST_CASE("convfirst: convlab run --in takes 7 files, or 9 with the projection", "[convfirst][lesson10][app][cpu]") {
  if (testing::skip_without_program("lesson 10 app test")) return;
  const auto dir = work_dir();
  const auto file = [&](const std::string& name, const Shape& shape, uint64_t seed, double scale) {
    const std::string path = (dir / (name + ".npy")).string();
    write_npy(path, random_tensor(shape, seed, scale));
    return path;
  };
  // Stride 2, 7x5 -> 4x3, C = 16 -> 32, hidden 48.
  const std::vector<std::string> files = {
      file("x", {1, 7, 5, 16}, 1, 1.0),     file("conv_w", {16, 3, 3, 8}, 2, 0.2), file("conv_b", {16}, 3, 0.5),
      file("u", {16, 48}, 4, 0.4),          file("a", {48}, 5, 0.5),               file("v", {48, 32}, 6, 0.35),
      file("b", {32}, 7, 0.5),              file("shortcut_w", {16, 32}, 8, 0.4), file("shortcut_b", {32}, 9, 0.5)};
  const auto joined = [&](std::size_t count) {
    std::string s;
    for (std::size_t i = 0; i < count; ++i) s += (i ? "," : "") + files[i];
    return s;
  };
  const std::string out = (dir / "y.npy").string();
  const testing::ProgramResult ok =
      testing::run_convlab("run convfirst --in " + joined(9) + " --shape stride=2 --out " + out);
  INFO(ok.out << ok.err);
  REQUIRE(ok.status == 0);
  CHECK(contains(ok.out, " ok "));
  CHECK(read_npy(out).shape() == Shape{1, 4, 3, 32});

  struct Refusal {
    std::string args, says;
  };
  for (const Refusal& r : {Refusal{"run convfirst --in " + joined(8) + " --shape stride=2", "takes 7 input files"},
                           Refusal{"run convfirst --in " + joined(9), "identity"},
                           Refusal{"run convfirst --in " + joined(7) + " --shape stride=2", "shortcut_w"},
                           Refusal{"run convfirst --in " + joined(9) + " --shape stride=2,bogus=1", "bogus"}}) {
    testing::check_refused(r.args, 2, {r.says});
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("convfirst: convlab plans prints the four tensor machines", "[convfirst][lesson10][app][cpu]") {
  if (testing::skip_without_program("lesson 10 app test")) return;
  const testing::ProgramResult text = testing::run_convlab("plans convfirst --shape N=8,H=14,C=32,dtype=f16 --machine h200");
  INFO(text.err);
  REQUIRE(text.status == 0);
  for (const char* part : {"plan layer_by_layer (Fig. 7a)", "plan fused (Fig. 7b)", "plan large_c (Fig. 7c)", "plan large_c_hidden (Fig. 7c)", "DRAM",
                           "local (smem/regs)", "attainable"})
    CHECK(contains(text.out, part));
  const testing::ProgramResult js = testing::run_convlab("plans convfirst --json --shape N=8,H=14,C=32,dtype=f16 --machine h200");
  REQUIRE(js.status == 0);
  const json::Value v = json::parse(js.out);
  const json::Value* plans = v.find("plans");
  REQUIRE(plans != nullptr);
  CHECK(plans->items.size() == 4);
  CHECK(testing::run_convlab("plans ffn").status == 2);
  // N=8 14x14 = 1568 pixels = 13 tiles of 128 (the last partial); split 4: 52 CTAs on 26 SMs = 2 per SM.
  const testing::ProgramResult grid =
      testing::run_convlab("plans convfirst --shape N=8,H=14,C=32,dtype=f16 --machine h200 --split 4 --sms 26");
  INFO(grid.err);
  REQUIRE(grid.status == 0);
  CHECK(contains(grid.out, "grid: 13 CTAs (128-pixel tiles) on 26 SMs = 0.50 CTAs per SM"));
  CHECK(contains(grid.out, "grid: 52 CTAs (128-pixel tiles × 4 CTAs each) on 26 SMs = 2.00 CTAs per SM"));
  CHECK(testing::run_convlab("plans convfirst --sms 0").status == 2);
}

TEST_CASE("convfirst: 10d's combos, 10f's composed slots and the staged rows reproduce blurpool(gconv3x3) and blurpool(x)",
          "[convfirst][lesson10][cpu]") {
  namespace s2 = convlab::gpu::blurpool_s2;
  constexpr int C = 16, G = 8;  // two groups: the group offset is exercised
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  // N, H, W: one pixel, single-pixel images across a tile, odd and even sizes, tiles ± 1 output pixel.
  const int sizes[][3] = {{1, 1, 1}, {5, 1, 1}, {3, 7, 9}, {2, 3, 57}, {1, 13, 13}, {1, 5, 85},
                          {1, 2, 253}, {2, 6, 6}, {3, 57, 3}, {2, 4, 2}, {1, 3, 1}};
  for (const auto& sz : sizes) {
    const int N = sz[0], H = sz[1], W = sz[2], P = (H - 1) / 2 + 1, Q = (W - 1) / 2 + 1, M = N * P * Q;
    INFO("N=" << N << " H=" << H << " W=" << W);
    std::vector<double> x(std::size_t(N) * H * W * C), w(C * 9 * G), b(C);
    for (double& v : x) v = uni(rng);
    for (double& v : w) v = uni(rng);
    for (double& v : b) v = uni(rng);
    const auto X = [&](int n, int h, int ww, int c) { return x[((std::size_t(n) * H + h) * W + ww) * C + c]; };
    // Plain loops: t = gconv3x3(x) + b at full resolution, then the zero-padded binomial blur at stride 2.
    std::vector<double> t(x.size()), tp(std::size_t(M) * C), sp(std::size_t(M) * C);
    for (int n = 0; n < N; ++n)
      for (int h = 0; h < H; ++h)
        for (int ww = 0; ww < W; ++ww)
          for (int k = 0; k < C; ++k) {
            double acc = b[k];
            for (int r = 0; r < 3; ++r)
              for (int s = 0; s < 3; ++s)
                for (int c = 0; c < G; ++c) {
                  const int ih = h + r - 1, iw = ww + s - 1;
                  if (ih >= 0 && ih < H && iw >= 0 && iw < W) acc += w[(k * 9 + r * 3 + s) * G + c] * X(n, ih, iw, (k / G) * G + c);
                }
            t[((std::size_t(n) * H + h) * W + ww) * C + k] = acc;
          }
    const double beta[3] = {1, 2, 1};
    for (int n = 0; n < N; ++n)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q)
          for (int k = 0; k < C; ++k) {
            double at = 0, as = 0;
            for (int i = 0; i < 3; ++i)
              for (int j = 0; j < 3; ++j) {
                const int h = 2 * p + i - 1, ww = 2 * q + j - 1;
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                at += beta[i] * beta[j] / 16 * t[((std::size_t(n) * H + h) * W + ww) * C + k];
                as += beta[i] * beta[j] / 16 * X(n, h, ww, k);
              }
            tp[((std::size_t(n) * P + p) * Q + q) * C + k] = at;
            sp[((std::size_t(n) * P + p) * Q + q) * C + k] = as;
          }
    // column_slot is a permutation of 0 .. W−1, and column 2q sits at slot q.
    std::vector<int> seen(W, 0);
    for (int col = 0; col < W; ++col) {
      const int slot = s2::column_slot(col, W);
      REQUIRE(slot >= 0);
      REQUIRE(slot < W);
      ++seen[slot];
    }
    CHECK(std::count(seen.begin(), seen.end(), 1) == W);
    for (int q = 0; q < Q; ++q) CHECK(s2::column_slot(2 * q, W) == q);
    for (const int block_rows : {128, 16}) {
      INFO("block_rows=" << block_rows);
      for (int m0 = 0; m0 < M; m0 += block_rows) {
        const int last = std::min(m0 + block_rows, M) - 1;
        const int first = s2::first_staged_row(m0, P, Q, H);
        const int rows = s2::staged_rows(m0, last, P, Q, H);
        REQUIRE(rows >= 1);
        REQUIRE(rows <= s2::staged_rows_bound(block_rows, N, P, Q));
        // The staged rows as the kernel stages them: flattened x rows first .. first + rows − 1, zero outside
        // [0, N·H); a read names the slot column the kernel computes (column_slot(2q) + column_slot_offset(dc))
        // and the x column it means to read.
        const auto staged = [&](int slot, int slot_col, int col, int c) {
          REQUIRE(slot >= 0);
          REQUIRE(slot < rows);
          REQUIRE(col >= 0);
          REQUIRE(col < W);
          REQUIRE(slot_col == s2::column_slot(col, W));
          const int row = first + slot;
          return row < 0 || row >= N * H ? 0.0 : x[(std::size_t(row) * W + col) * C + c];
        };
        for (int m = m0; m <= last; ++m) {
          const s2::OutPixel o = s2::decode(m, P, Q);
          REQUIRE(((o.n * P + o.p) * Q + o.q) == m);
          const unsigned rm = s2::axis_mask(2 * o.p, H), cm = s2::axis_mask(2 * o.q, W);
          const int centre = o.n * H + 2 * o.p - first;  // staged row of x row 2p
          for (int k = 0; k < C; ++k) {
            double acc = s2::bias_weight(rm, cm) * b[k];
            for (int c = 0; c < s2::kCombos; ++c) {
              if (!s2::combo_valid(c, rm, cm)) continue;
              const int h = 2 * o.p + s2::combo_row_offset(c);
              REQUIRE(h >= 0);  // a valid combo reads a pixel of its own image
              REQUIRE(h < H);
              for (int ci = 0; ci < G; ++ci)
                acc += s2::combo_scale(c) * w[(k * 9 + s2::combo_tap(c)) * G + ci] *
                       staged(centre + s2::combo_row_offset(c),
                              s2::column_slot(2 * o.q, W) + s2::column_slot_offset(s2::combo_col_offset(c), W),
                              2 * o.q + s2::combo_col_offset(c), (k / G) * G + ci);
            }
            CHECK(std::abs(acc / 16 - tp[std::size_t(m) * C + k]) < 1e-12);
            // 10f's composed form: 50 slots (25 taps of the 5×5 kernel, the edge terms), the same staged reads.
            double composed = s2::bias_weight(rm, cm) * b[k];
            for (int sl = 0; sl < s2::kComposedSlots; ++sl) {
              if (!s2::slot_valid(sl, rm, cm)) continue;
              const int dr = s2::slot_row_offset(sl), dc = s2::slot_col_offset(sl);
              REQUIRE(2 * o.p + dr >= 0);  // a valid slot reads a pixel of its own image
              REQUIRE(2 * o.p + dr < H);
              for (int ci = 0; ci < G; ++ci) {
                double weight = 0;
                for (int r = 0; r < 3; ++r)
                  for (int s = 0; s < 3; ++s) weight += s2::slot_factor(sl, r, s) * w[(k * 9 + r * 3 + s) * G + ci];
                composed += weight * staged(centre + dr, s2::column_slot(2 * o.q, W) + s2::column_slot_offset(dc, W),
                                            2 * o.q + dc, (k / G) * G + ci);
              }
            }
            CHECK(std::abs(composed / 16 - tp[std::size_t(m) * C + k]) < 1e-12);
            double s = 0;
            for (int i = 0; i < 3; ++i)
              for (int j = 0; j < 3; ++j)
                if (s2::blur_tap_valid(i, j, rm, cm))
                  s += s2::binomial(i) * s2::binomial(j) *
                       staged(centre + i - 1, s2::column_slot(2 * o.q, W) + s2::column_slot_offset(j - 1, W),
                              2 * o.q + j - 1, k);
            CHECK(std::abs(s / 16 - sp[std::size_t(m) * C + k]) < 1e-12);
            // 10f makes S from the conv's main slots (their A fragments) with B = β·I.
            double s_slots = 0;
            for (int sl = 0; sl < s2::kComposedSlots; ++sl)
              if (s2::shortcut_factor(sl) != 0 && s2::slot_valid(sl, rm, cm))
                s_slots += s2::shortcut_factor(sl) *
                           staged(centre + s2::slot_row_offset(sl),
                                  s2::column_slot(2 * o.q, W) + s2::column_slot_offset(s2::slot_col_offset(sl), W),
                                  2 * o.q + s2::slot_col_offset(sl), k);
            CHECK(std::abs(s_slots / 16 - sp[std::size_t(m) * C + k]) < 1e-12);
          }
        }
      }
    }
  }
  // The combos: 81 distinct (blur tap, conv tap) pairs, scales 1, 2, 4 summing to 16 per conv tap.
  for (int tap = 0; tap < 9; ++tap) {
    int total = 0;
    for (int c = tap; c < s2::kCombos; c += 9) total += s2::combo_scale(c);
    CHECK(total == 16);
  }
  CHECK(s2::kComboSteps == 41);
  // The composed slots: the 25 main taps' factors are the 81 combos' scales regrouped (they sum to 16 per
  // conv tap), the zero slot is empty, and the steps the kernel skips as a unit hold only their own terms.
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s) {
      int total = 0;
      for (int sl = 0; sl < 25; ++sl) total += s2::slot_factor(sl, r, s);
      CHECK(total == 16);
    }
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s) CHECK(s2::slot_factor(25, r, s) == 0);
  CHECK(s2::kComposedSteps == 25);
  CHECK(2 * s2::kMainSteps == 26);
  for (int sl = 26; sl < s2::kComposedSlots; ++sl) {
    const s2::Slot k = s2::composed_slot(sl);
    CHECK((k.row_term >= 5 || k.col_term >= 5));  // every slot past the main steps has an edge term
  }
}
