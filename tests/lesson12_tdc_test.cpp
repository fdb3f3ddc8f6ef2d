// tests/lesson12_tdc_test.cpp — lesson 12, Tucker-format convolution (TDC).
//
//   [cpu] the fp32 HOSVD (ops/tucker_conv.hpp) against the double reference
//         (reference/tucker.hpp): same approximation error at every rank, orthonormal
//         factors, exact at full rank, the noise level on a low-rank-plus-noise kernel;
//         the tile candidates and the analytical model's invariants; the CPU scheme
//         (cpu/lib/tdc_core_cpu.hpp) on every tile the model may return.
//   [gpu] the GPU kernel (gpu/lib/tdc_core.hpp) on every candidate tile of every test
//         shape, and on tiles outside the candidates (TC > C, odd TC, TW = 16), each run
//         on a NaN-poisoned output against the double reference, then run again.
// The registered rungs are also checked on the op's test table by the registry tests.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/tensor.hpp"
#include "cpu/lib/tdc_core_cpu.hpp"
#include "ops/tucker_conv.hpp"
#include "reference/conv2d.hpp"
#include "reference/tucker.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"
#ifdef CONVLAB_HAVE_CUDA
#include "gpu/lib/tdc_core.hpp"
#endif

namespace convlab {
namespace {

std::vector<float> random_floats(std::size_t n, std::mt19937_64& rng, float scale = 1.f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& e : v) e = u(rng);
  return v;
}

ref::ConvShape kernel_shape(int K, int C) { return {1, 3, 3, C, K, 3, 3, 1, 1, 1}; }

// ‖W − reconstruct(hosvd(W))‖/‖W‖ from the double reference.
double reference_error(int K, int C, int d1, int d2, const std::vector<float>& w) {
  const ref::ConvShape p = kernel_shape(K, C);
  const std::vector<double> wd(w.begin(), w.end());
  std::vector<double> u_in(size_t(C) * d1), core(size_t(d2) * 9 * d1), u_out(size_t(K) * d2), back(wd.size());
  ref::tucker_hosvd(p, d1, d2, wd.data(), u_in.data(), core.data(), u_out.data());
  ref::tucker_reconstruct(p, d1, d2, u_in.data(), core.data(), u_out.data(), back.data());
  double num = 0, den = 0;
  for (size_t i = 0; i < wd.size(); ++i) num += (back[i] - wd[i]) * (back[i] - wd[i]), den += wd[i] * wd[i];
  return std::sqrt(num / den);
}

double orthonormality_error(const std::vector<float>& f, int rows, int cols) {
  double worst = 0;
  for (int a = 0; a < cols; ++a)
    for (int b = 0; b < cols; ++b) {
      double dot = 0;
      for (int i = 0; i < rows; ++i) dot += double(f[size_t(i) * cols + a]) * f[size_t(i) * cols + b];
      worst = std::max(worst, std::abs(dot - (a == b ? 1.0 : 0.0)));
    }
  return worst;
}

// A KRSC kernel of exact Tucker ranks (d1, d2) plus uniform noise of relative size `noise`.
std::vector<float> low_rank_plus_noise(int K, int C, int d1, int d2, double noise, std::mt19937_64& rng) {
  const std::vector<float> a = random_floats(size_t(K) * d2, rng), b = random_floats(size_t(C) * d1, rng),
                           g = random_floats(size_t(d2) * 9 * d1, rng);
  std::vector<float> w(size_t(K) * 9 * C);
  for (int k = 0; k < K; ++k)
    for (int rs = 0; rs < 9; ++rs)
      for (int c = 0; c < C; ++c) {
        double acc = 0;
        for (int j = 0; j < d2; ++j)
          for (int i = 0; i < d1; ++i)
            acc += double(a[size_t(k) * d2 + j]) * g[(size_t(j) * 9 + rs) * d1 + i] * b[size_t(c) * d1 + i];
        w[(size_t(k) * 9 + rs) * C + c] = float(acc);
      }
  double norm = 0;
  for (float v : w) norm += double(v) * v;
  const double rms = std::sqrt(norm / double(w.size()));
  // uniform(-h, h) has rms h/√3: scale so the noise's norm is `noise` times the signal's.
  const std::vector<float> e = random_floats(w.size(), rng, float(noise * rms * std::sqrt(3.0)));
  for (size_t i = 0; i < w.size(); ++i) w[i] += e[i];
  return w;
}

TEST_CASE("lesson 12: fp32 HOSVD matches the reference's error at every rank, factors orthonormal",
          "[tucker][lesson12][cpu]") {
  const uint64_t seed = testing::seed_for("lesson12 hosvd");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  struct Case { int K, C; };
  for (const Case cs : {Case{12, 8}, Case{7, 13}, Case{32, 16}}) {
    const std::vector<float> w = random_floats(size_t(cs.K) * 9 * cs.C, rng);
    double previous = 2.0;
    for (int d : {1, 3, std::min(cs.K, cs.C) / 2, std::min(cs.K, cs.C)}) {
      const int d1 = std::min(d, cs.C), d2 = std::min(d, cs.K);
      const TuckerFactors f = tucker_hosvd_f32(cs.K, 3, 3, cs.C, d1, d2, w.data());
      REQUIRE(f.u_in.size() == size_t(cs.C) * d1);
      REQUIRE(f.core.size() == size_t(d2) * 9 * d1);
      REQUIRE(f.u_out.size() == size_t(cs.K) * d2);
      CHECK(orthonormality_error(f.u_in, cs.C, d1) < 1e-5);
      CHECK(orthonormality_error(f.u_out, cs.K, d2) < 1e-5);
      const double err = relative_error(tucker_reconstruct_f32(f), w);
      CHECK(std::abs(err - reference_error(cs.K, cs.C, d1, d2, w)) < 1e-5);
      CHECK(err <= previous + 1e-6);  // more rank never approximates worse
      previous = err;
    }
    // Full ranks: the factors are square orthogonal, the kernel comes back to fp32 rounding.
    const TuckerFactors full = tucker_hosvd_f32(cs.K, 3, 3, cs.C, cs.C, cs.K, w.data());
    CHECK(relative_error(tucker_reconstruct_f32(full), w) < 1e-5);
  }
}

TEST_CASE("lesson 12: HOSVD of a low-rank-plus-noise kernel recovers it to the noise level",
          "[tucker][lesson12][cpu]") {
  const uint64_t seed = testing::seed_for("lesson12 low rank");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const int K = 24, C = 20, d1 = 5, d2 = 7;
  for (double noise : {0.0, 1e-3, 1e-2}) {
    const std::vector<float> w = low_rank_plus_noise(K, C, d1, d2, noise, rng);
    const double at_rank = relative_error(tucker_reconstruct_f32(tucker_hosvd_f32(K, 3, 3, C, d1, d2, w.data())), w);
    INFO("noise " << noise << " error at the true ranks " << at_rank);
    CHECK(at_rank <= noise * 1.0 + 1e-5);  // the projection removes only (most of) the noise
    CHECK(at_rank >= noise * 0.5 - 1e-6);  // ... and the noise outside the subspaces is most of it
    if (noise > 0) {  // one rank short on either side loses signal, far above the noise
      const double short_rank =
          relative_error(tucker_reconstruct_f32(tucker_hosvd_f32(K, 3, 3, C, d1 - 1, d2, w.data())), w);
      CHECK(short_rank > 5 * at_rank);
    }
  }
}

TEST_CASE("lesson 12: HOSVD refuses ranks outside [1, C] and [1, K]", "[tucker][lesson12][cpu]") {
  const std::vector<float> w(2 * 9 * 3, 1.f);
  CHECK_THROWS_AS(tucker_hosvd_f32(2, 3, 3, 3, 0, 1, w.data()), std::invalid_argument);
  CHECK_THROWS_AS(tucker_hosvd_f32(2, 3, 3, 3, 4, 1, w.data()), std::invalid_argument);
  CHECK_THROWS_AS(tucker_hosvd_f32(2, 3, 3, 3, 1, 3, w.data()), std::invalid_argument);
  CHECK_THROWS_AS(tucker_hosvd_f32(2, 3, 3, 3, 1, 1, nullptr), std::invalid_argument);
}

// ---- candidates and the model -----------------------------------------------------------

TEST_CASE("lesson 12: tile candidates are legal and cover the image's own sizes", "[tucker][lesson12][cpu]") {
  for (const TuckerCoreProblem& p : tdc_paper_shapes()) {
    const std::vector<TdcTile> cand = tdc_candidates(p);
    REQUIRE(!cand.empty());
    bool has_tc_ge_c = false;
    for (const TdcTile& t : cand) {
      CHECK(t.th >= 1);
      CHECK(t.th <= std::min(p.H, 16));
      CHECK((t.tw >= 1 && t.tw <= std::min(p.W, kTdcMaxTileWidth)));
      CHECK((t.tc >= 1 && t.tc <= 64));
      CHECK(tdc_smem_bytes(t) <= kTdcMaxCandidateSmem);
      has_tc_ge_c = has_tc_ge_c || t.tc >= p.C;
    }
    CHECK(has_tc_ge_c == (p.C <= 64));
    if (p.H == 7) CHECK(std::find(cand.begin(), cand.end(), TdcTile{7, 7, 1}) != cand.end());
  }
  const TuckerCoreProblem tiny{1, 1, 1, 1, 1};
  CHECK(tdc_candidates(tiny) == std::vector<TdcTile>{{1, 1, 1}});
}

TEST_CASE("lesson 12: the model's counts by hand and its choice", "[tucker][lesson12][cpu]") {
  const TdcMachine m;
  SECTION("one block per image when the tile covers everything") {
    const TuckerCoreProblem p{3, 7, 7, 32, 32};
    const TdcPrediction r = tdc_predict(p, {7, 7, 32}, m);
    CHECK(r.blocks == 3);
    CHECK(r.waves == 1);
    CHECK(std::abs(r.overhead_s - m.launch_s) < 1e-15);  // one channel tile: no memset
    CHECK(r.latency_s == (m.stage_cycles + 7 * 32 * 3 * m.iter_cycles) / m.clock_hz);
    CHECK(r.total_s >= r.overhead_s + r.latency_s);
  }
  SECTION("occupancy: K = 150 runs 160 threads; shared memory binds a big cube") {
    const TuckerCoreProblem p{1, 28, 28, 192, 150};
    CHECK(tdc_threads(p) == 160);
    CHECK(tdc_threads({1, 28, 28, 192, 160}) == 160);
    CHECK(tdc_threads({1, 28, 28, 192, 161}) == 192);
    CHECK(tdc_predict(p, {1, 1, 1}, m).blocks_per_sm == 12);  // 2048 / 160
    const TdcTile big{16, 16, 32};                              // 18·18·32·4 = 41472 B
    CHECK(tdc_predict(p, big, m).blocks_per_sm == int(m.smem_per_sm / (41472 + m.smem_reserved_per_block)));
    CHECK(tdc_blocks(p, {4, 8, 32}) == 7.0 * 4 * 6);
    CHECK(tdc_predict(p, {4, 8, 32}, m).overhead_s > tdc_predict(p, {4, 8, 256}, m).overhead_s);  // memset
  }
  SECTION("waves: more blocks than one wave holds") {
    const TuckerCoreProblem p{1, 224, 224, 64, 32};
    const TdcPrediction r = tdc_predict(p, {1, 1, 1}, m);
    CHECK(r.blocks_per_sm == 32);
    CHECK(r.waves == std::ceil(224.0 * 224 * 64 / (32.0 * 132)));
  }
  SECTION("the choice is a candidate of least predicted time, and beats the degenerate tile") {
    for (const TuckerCoreProblem& p : tdc_paper_shapes()) {
      const std::vector<TdcPrediction> all = tdc_predict_all(p, m);
      const TdcTile choice = tdc_choose(p, m);
      double best = 1e300;
      bool found = false;
      for (const TdcPrediction& r : all) {
        CHECK(std::isfinite(r.total_s));
        CHECK(r.total_s > 0);
        best = std::min(best, r.total_s);
        if (r.tile == choice) found = true;
      }
      CHECK(found);
      CHECK(tdc_predict(p, choice, m).total_s == best);
      CHECK(best <= tdc_predict(p, {1, 1, 1}, m).total_s);
      if (p.H >= 56) CHECK(best < 0.5 * tdc_predict(p, {1, 1, 1}, m).total_s);  // big images: far from one pixel a block
    }
  }
  SECTION("K above one block's threads is not predicted runnable") {
    const TuckerCoreProblem p{1, 8, 8, 8, 1500};
    CHECK(std::isinf(tdc_predict(p, {2, 2, 2}, m).total_s));
  }
}

// ---- the CPU scheme on every tile ----------------------------------------------------------

struct SweepCase {
  TuckerCoreProblem p;
  std::vector<float> x, w;
  std::vector<double> ref;
};

SweepCase make_case(const TuckerCoreProblem& p) {
  const std::string spec = OpTraits<TuckerCoreProblem>::spec(p);
  std::mt19937_64 rng(testing::seed_for("lesson12 sweep " + spec));
  SweepCase s{p, random_floats(size_t(p.input_elems()), rng), random_floats(size_t(p.weight_elems()), rng,
                                                                             float(1 / std::sqrt(9.0 * p.C))), {}};
  std::vector<std::vector<double>> in{{s.x.begin(), s.x.end()}, {s.w.begin(), s.w.end()}}, out(1);
  out[0].resize(size_t(p.output_elems()));
  OpTraits<TuckerCoreProblem>::reference(p, in, out);
  s.ref = std::move(out[0]);
  return s;
}

// Tiles outside the candidate set that the kernels must still get right.
std::vector<TdcTile> extra_tiles(const TuckerCoreProblem& p) {
  return {{3, 5, 3}, {2, 16, 2 * p.C + 1}, {p.H + 1, std::min(p.W + 2, kTdcMaxTileWidth), p.C}, {5, 9, 7}, {1, 16, 128}, {17, 3, 1}};
}

TEST_CASE("lesson 12: the CPU scheme is right on every tile the model may return", "[tucker][lesson12][cpu]") {
  INFO("seed " << testing::base_seed());
  int runs = 0;
  for (const TuckerCoreProblem& p : OpTraits<TuckerCoreProblem>::shapes(ShapeTable::test, Device::cpu)) {
    const SweepCase s = make_case(p);
    std::vector<TdcTile> tiles = tdc_candidates(p);
    // Big shapes take every third candidate (a different third each shape), small ones all.
    if (p.output_elems() * p.C > 2e5) {
      std::vector<TdcTile> some;
      for (size_t i = runs % 3; i < tiles.size(); i += 3) some.push_back(tiles[i]);
      tiles = some;
    }
    for (const TdcTile& t : extra_tiles(p)) tiles.push_back(t);
    std::vector<float> y(s.ref.size());
    for (const TdcTile& t : tiles) {
      std::fill(y.begin(), y.end(), std::nanf(""));
      cpu::tdc_core_cpu(p, t, s.x.data(), s.w.data(), y.data(), false);
      const CompareResult r = compare(std::vector<double>(y.begin(), y.end()), s.ref, DType::f32, p.reduction_depth());
      INFO(OpTraits<TuckerCoreProblem>::spec(p) << " tile " << tile_name(t) << ": " << r.message);
      REQUIRE(r.ok);
      ++runs;
    }
  }
  CHECK(runs > 1000);
}

// ---- the whole layer against the dense conv of the reconstructed kernel ----------------------

TEST_CASE("lesson 12: the CPU Tucker layer equals the dense conv of the HOSVD-reconstructed kernel",
          "[tucker][lesson12][cpu]") {
  const Variant<TuckerConvProblem>* layer = find_variant<TuckerConvProblem>(Device::cpu, "12b_three_stage");
  REQUIRE(layer != nullptr);
  const uint64_t seed = testing::seed_for("lesson12 layer vs dense");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (const TuckerConvProblem p : {TuckerConvProblem{1, 9, 7, 24, 20, 6, 5}, TuckerConvProblem{3, 5, 6, 13, 17, 13, 2},
                                    TuckerConvProblem{1, 8, 8, 16, 16, 16, 16}}) {
    INFO(OpTraits<TuckerConvProblem>::spec(p));
    const std::vector<float> x = random_floats(size_t(p.pixels()) * p.C, rng);
    const std::vector<float> w = random_floats(size_t(p.K) * 9 * p.C, rng, float(1 / std::sqrt(9.0 * p.C)));
    const TuckerFactors f = tucker_hosvd_f32(p.K, 3, 3, p.C, p.D1, p.D2, w.data());
    // The layer's storage: core CRSN [D1,3,3,D2], u_outᵀ [D2, K].
    std::vector<float> core(f.core.size()), u_out_t(f.u_out.size());
    for (int j = 0; j < p.D2; ++j)
      for (int rs = 0; rs < 9; ++rs)
        for (int i = 0; i < p.D1; ++i) core[(size_t(i) * 9 + rs) * p.D2 + j] = f.core[(size_t(j) * 9 + rs) * p.D1 + i];
    for (int k = 0; k < p.K; ++k)
      for (int j = 0; j < p.D2; ++j) u_out_t[size_t(j) * p.K + k] = f.u_out[size_t(k) * p.D2 + j];
    std::vector<float> y(size_t(p.pixels()) * p.K, std::nanf(""));
    const std::size_t ws_bytes = (layer->workspace_bytes(p) + 63) / 64 * 64;  // as the harness would allot it
    const std::unique_ptr<void, decltype(&std::free)> work(std::aligned_alloc(64, ws_bytes), &std::free);
    REQUIRE(work != nullptr);
    layer->run(p, {x.data(), f.u_in.data(), core.data(), u_out_t.data(), y.data(), work.get()});
    // The dense conv (double) of the reconstructed kernel.
    const std::vector<float> wr = tucker_reconstruct_f32(f);
    const std::vector<double> xd(x.begin(), x.end()), wd(wr.begin(), wr.end());
    std::vector<double> dense(y.size());
    ref::conv2d({p.N, p.H, p.W, p.C, p.K, 3, 3, 1, 1, 1}, xd.data(), wd.data(), dense.data());
    const CompareResult r = compare(std::vector<double>(y.begin(), y.end()), dense, DType::f32, p.reduction_depth());
    INFO(r.message);
    CHECK(r.ok);
  }
}

TEST_CASE("lesson 12: convlab tucker refuses bad input with one line", "[tucker][lesson12][cpu][app]") {
  for (const char* args : {"tucker", "tucker fit", "tucker hosvd --ranks 0,4", "tucker hosvd --ranks x",
                           "tucker model --shape H=0", "tucker fit --oracle /nonexistent.json"}) {
    const testing::ProgramResult r = testing::run_convlab(args);
    INFO(args << " -> " << r.status << ": " << r.err);
    CHECK(r.status != 0);
    CHECK(r.status != -1);  // exited, did not crash
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  const testing::ProgramResult ok = testing::run_convlab("tucker model --shape H=7,C=8,K=8");
  CHECK(ok.status == 0);
  CHECK(ok.out.find("choice") != std::string::npos);
}

// ---- the GPU kernel on every tile -----------------------------------------------------------

#ifdef CONVLAB_HAVE_CUDA
// Runs the kernel on each tile (twice: poisoned output both times) and checks it.
void sweep_gpu(const TuckerCoreProblem& p, const std::vector<TdcTile>& tiles) {
  const SweepCase s = make_case(p);
  Tensor x({p.N, p.H, p.W, p.C}, DType::f32), w({p.C, 3, 3, p.K}, DType::f32);
  std::copy(s.x.begin(), s.x.end(), static_cast<float*>(x.data()));
  std::copy(s.w.begin(), s.w.end(), static_cast<float*>(w.data()));
  const Tensor dx = x.to(Device::gpu), dw = w.to(Device::gpu);
  Tensor dy({p.N, p.H, p.W, p.K}, DType::f32, Device::gpu);
  for (const TdcTile& t : tiles) {
    const std::string why = gpu::tdc_core_unsupported(p, t);
    INFO(OpTraits<TuckerCoreProblem>::spec(p) << " tile " << tile_name(t));
    REQUIRE(why.empty());
    for (int repeat = 0; repeat < 2; ++repeat) {
      dy.poison();
      gpu::tdc_core_launch(p, t, static_cast<const float*>(dx.data()), static_cast<const float*>(dw.data()),
                           static_cast<float*>(dy.data()));
      device_synchronize("tdc_core_kernel");
      const CompareResult r = compare(dy.to(Device::cpu), s.ref, DType::f32, p.reduction_depth());
      INFO("run " << repeat + 1 << ": " << r.message);
      REQUIRE(r.ok);
    }
  }
}
#endif

TEST_CASE("lesson 12: the GPU kernel is right on every candidate tile of every test shape",
          "[tucker][lesson12][gpu][sweep]") {
  if (testing::skip_without_gpu()) return;
#ifdef CONVLAB_HAVE_CUDA
  INFO("seed " << testing::base_seed());
  for (const TuckerCoreProblem& p : OpTraits<TuckerCoreProblem>::shapes(ShapeTable::test, Device::gpu)) {
    std::vector<TdcTile> tiles = tdc_candidates(p);
    for (const TdcTile& t : extra_tiles(p)) tiles.push_back(t);
    sweep_gpu(p, tiles);
  }
  // The model's choice on TDC's own shapes (at those sizes, not only the small ones).
  for (const TuckerCoreProblem& p : tdc_paper_shapes()) sweep_gpu(p, {tdc_choose(p)});
#endif
}

// A few tiles only, one of each kind (every register width, one and several channel
// tiles, TC > C, ragged edges): small enough for compute-sanitizer.
TEST_CASE("lesson 12: the GPU kernel on one tile of each kind", "[tucker][lesson12][gpu][sanitize]") {
  if (testing::skip_without_gpu()) return;
#ifdef CONVLAB_HAVE_CUDA
  const TuckerCoreProblem p{3, 9, 7, 20, 33};
  sweep_gpu(p, {{1, 1, 1}, {2, 2, 8}, {3, 4, 64}, {4, 7, 16}, {9, 7, 20}, {2, 16, 5}, {5, 3, 41}});
#endif
}

TEST_CASE("lesson 12: the GPU launcher refuses what it cannot run", "[tucker][lesson12][gpu]") {
  if (testing::skip_without_gpu()) return;
#ifdef CONVLAB_HAVE_CUDA
  const TuckerCoreProblem p{1, 8, 8, 8, 8};
  CHECK(!gpu::tdc_core_unsupported(p, {1, 17, 1}).empty());
  CHECK(!gpu::tdc_core_unsupported(p, {0, 1, 1}).empty());
  CHECK(!gpu::tdc_core_unsupported({1, 8, 8, 8, 1025}, {1, 1, 1}).empty());
  CHECK_THROWS_AS(gpu::tdc_core_launch(p, {1, 1, 0}, nullptr, nullptr, nullptr), std::invalid_argument);
#endif
}

}  // namespace
}  // namespace convlab
