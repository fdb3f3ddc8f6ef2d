// tests/core/checker_test.cpp — the checker is tested too.
//
// Deliberately wrong conv2d and GEMM variants — an off-by-one window, a
// skipped tail, a low-precision accumulator, an unwritten element — run
// through the very same harness path as real variants (random inputs, poisoned
// outputs, compare against the double reference) and must be rejected on every
// shape of the test table; a precision defect on every shape whose reference
// has four non-zero outputs or more (one output can round within the bound by
// chance: run_on_f32_table's min_nonzero). A correct variant that merely sums in another
// order must be accepted, so the tolerance is not simply "reject everything".
//
// conv_bias_relu_pool's epilogue gives compare() error magnitudes (an output
// whose |conv·scale| and |bias| cancel is judged against its terms, not
// against its tiny self): a correct variant that rounds the product on its own
// is accepted, and a dropped bias or an fp16 output is still rejected.
//
// One planted bug is a student's real one: lesson 03's five loops with a
// micro-kernel whose `accumulate` branch is broken, so each depth slice
// overwrites C instead of adding to it. Correct whenever K <= KC; the op's
// own test table must hold a K > KC shape that catches it, so that lesson 03's
// ladder test (tests/gemm_cpu_test.cpp) is not the only guard.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "ops/conv2d.hpp"
#include "ops/conv_pool.hpp"
#include "ops/gemm.hpp"
#include "cpu/lib/gemm_kernels.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {
namespace {

using testing::run_on_f32_table;

// How a deliberately wrong conv deviates from the definition.
enum class ConvDefect { none_reversed_order, window_off_by_one, skip_last_output, bf16_accumulator, skip_last_channel };

template <ConvDefect defect> void wrong_conv(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* x = static_cast<const float*>(a.x);
  const float* w = static_cast<const float*>(a.w);
  float* y = static_cast<float*>(a.y);
  const int P = p.P(), Q = p.Q(), T = p.T(), Kg = p.K_per_group();
  const int64_t total = int64_t(p.N) * P * Q * p.K;
  for (int n = 0; n < p.N; ++n)
    for (int oh = 0; oh < P; ++oh)
      for (int ow = 0; ow < Q; ++ow)
        for (int k = 0; k < p.K; ++k) {
          const int64_t out = ((int64_t(n) * P + oh) * Q + ow) * p.K + k;
          if (defect == ConvDefect::skip_last_output && out == total - 1) continue;
          if (defect == ConvDefect::skip_last_channel && k == p.K - 1) continue;
          float acc = 0.f;
          for (int r = p.R - 1; r >= 0; --r)  // reversed order: still correct
            for (int s = p.S - 1; s >= 0; --s) {
              const int shift = defect == ConvDefect::window_off_by_one ? 1 : 0;
              const int ih = oh * p.stride + r - p.pad + shift, iw = ow * p.stride + s - p.pad;
              if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
              for (int t = T - 1; t >= 0; --t) {
                const float prod = w[((int64_t(k) * p.R + r) * p.S + s) * T + t] *
                                   x[((int64_t(n) * p.H + ih) * p.W + iw) * p.C + (k / Kg) * T + t];
                acc += prod;
                if (defect == ConvDefect::bf16_accumulator) acc = float(round_to(DType::bf16, acc));
              }
            }
          y[out] = acc;
        }
}

template <ConvDefect defect> Variant<ConvProblem> conv_variant(const char* name) {
  Variant<ConvProblem> v;
  v.name = name;
  v.run = wrong_conv<defect>;
  return v;
}

}  // namespace

TEST_CASE("checker: a correct conv summed in another order is accepted", "[checker][cpu]") {
  const auto [passed, tried, report] =
      run_on_f32_table(conv_variant<ConvDefect::none_reversed_order>("reversed_order"));
  INFO(report);
  REQUIRE(tried > 5);
  CHECK(passed == tried);
}

TEST_CASE("checker: wrong conv variants are rejected on every shape", "[checker][cpu]") {
  SECTION("window off by one row") {
    const auto [passed, tried, report] = run_on_f32_table(conv_variant<ConvDefect::window_off_by_one>("off_by_one"));
    INFO(report);
    REQUIRE(tried > 5);
    CHECK(passed == 0);
  }
  SECTION("last output element never written") {
    const auto [passed, tried, report] = run_on_f32_table(conv_variant<ConvDefect::skip_last_output>("skipped_tail"));
    INFO(report);
    CHECK(passed == 0);
  }
  SECTION("last output channel never written") {
    const auto [passed, tried, report] =
        run_on_f32_table(conv_variant<ConvDefect::skip_last_channel>("skipped_channel"));
    INFO(report);
    CHECK(passed == 0);
  }
  SECTION("bf16 accumulator in an fp32 problem") {
    const auto [passed, tried, report] =
        run_on_f32_table(conv_variant<ConvDefect::bf16_accumulator>("low_precision"), 4);
    INFO(report);
    REQUIRE(tried > 5);
    CHECK(passed == 0);
  }
}

namespace {
enum class GemmDefect { k_loop_short, fp16_inputs, rows_one_short };

template <GemmDefect defect> void wrong_gemm(const GemmProblem& p, const Args<GemmProblem>& args) {
  const float* a = static_cast<const float*>(args.a);
  const float* b = static_cast<const float*>(args.b);
  float* c = static_cast<float*>(args.c);
  const int rows = defect == GemmDefect::rows_one_short ? p.M - 1 : p.M;
  const int depth = defect == GemmDefect::k_loop_short ? p.K - 1 : p.K;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < p.N; ++j) {
      float acc = 0.f;
      for (int k = 0; k < depth; ++k) {
        float ak = a[int64_t(i) * p.K + k], bk = b[int64_t(k) * p.N + j];
        if (defect == GemmDefect::fp16_inputs) {  // what a careless tensor-core path does to fp32 data
          ak = float(round_to(DType::f16, ak));
          bk = float(round_to(DType::f16, bk));
        }
        acc += ak * bk;
      }
      c[int64_t(i) * p.N + j] = acc;
    }
}

template <GemmDefect defect> Variant<GemmProblem> gemm_variant(const char* name) {
  Variant<GemmProblem> v;
  v.name = name;
  v.run = wrong_gemm<defect>;
  return v;
}
}  // namespace

TEST_CASE("checker: wrong GEMM variants are rejected on every shape", "[checker][cpu]") {
  SECTION("k loop one short") {
    const auto [passed, tried, report] = run_on_f32_table(gemm_variant<GemmDefect::k_loop_short>("k_short"));
    INFO(report);
    REQUIRE(tried > 5);
    CHECK(passed == 0);
  }
  SECTION("fp32 inputs rounded to fp16") {
    const auto [passed, tried, report] = run_on_f32_table(gemm_variant<GemmDefect::fp16_inputs>("fp16_inputs"), 4);
    INFO(report);
    REQUIRE(tried > 5);
    CHECK(passed == 0);
  }
  SECTION("last row never written") {
    const auto [passed, tried, report] = run_on_f32_table(gemm_variant<GemmDefect::rows_one_short>("rows_short"));
    INFO(report);
    CHECK(passed == 0);
  }
}

namespace {
// The micro-kernel contract with the `accumulate` branch broken: later depth
// slices of the five loops overwrite C rather than add to it.
void overwriting_micro_kernel(int kc, const float* ap, const float* bp, float* c, std::ptrdiff_t ldc,
                              bool /*accumulate*/) {
  cpu_gemm::micro_kernel_portable(kc, ap, bp, c, ldc, /*accumulate=*/false);
}
void five_loops_overwriting(const GemmProblem& p, const Args<GemmProblem>& a) {
  cpu_gemm::gemm_packed(p, static_cast<const float*>(a.a), static_cast<const float*>(a.b), static_cast<float*>(a.c),
                        a.workspace, overwriting_micro_kernel);
}
std::size_t five_loops_workspace(const GemmProblem& p) { return cpu_gemm::packed_workspace_bytes(p, 1); }
}  // namespace

TEST_CASE("checker: a GEMM whose later depth slices overwrite C is caught by the op's own table", "[checker][cpu]") {
  Variant<GemmProblem> planted;
  planted.name = "overwrites_c";
  planted.run = five_loops_overwriting;
  planted.workspace_bytes = five_loops_workspace;
  const std::vector<std::string> rejected = testing::rejected_shapes(planted);
  INFO("rejected on: " << [&] {
    std::string all;
    for (const std::string& r : rejected) all += r + "; ";
    return all;
  }());
  // Rejected exactly where the bug lives: every f32 shape of the table with
  // K > KC and at least one full MR x NR tile, and no other (with K <= KC the
  // broken branch never runs; a partial edge tile is added into C by the
  // macro-kernel itself, not by the micro-kernel: both are then right and
  // must be accepted).
  int deep_shapes = 0;
  for (const GemmProblem& p : OpTraits<GemmProblem>::shapes(ShapeTable::test, Device::cpu)) {
    if (p.dtype != DType::f32) continue;
    const bool deep = p.K > cpu_gemm::kKC && p.M >= cpu_gemm::kMR && p.N >= cpu_gemm::kNR;
    deep_shapes += deep;
    const bool was_rejected =
        std::find(rejected.begin(), rejected.end(), OpTraits<GemmProblem>::spec(p)) != rejected.end();
    INFO(OpTraits<GemmProblem>::spec(p));
    CHECK(was_rejected == deep);
  }
  CHECK(deep_shapes >= 2);
}

TEST_CASE("checker: the gemm test table crosses every blocking boundary of the CPU rungs", "[checker][cpu]") {
  using namespace cpu_gemm;
  bool deep_ragged = false, rows_past_mc = false, cols_past_nc = false, ragged_tile = false, blocks_ragged = false;
  for (const GemmProblem& p : OpTraits<GemmProblem>::shapes(ShapeTable::test, Device::cpu)) {
    if (p.dtype != DType::f32) continue;
    deep_ragged |= p.K > 2 * kKC && p.K % kKC != 0;
    rows_past_mc |= p.M > kMC && p.K > kKC;
    cols_past_nc |= p.N > kNC;
    ragged_tile |= p.M % kMR != 0 && p.N % kNR != 0 && p.M > kMR && p.N > kNR && p.K > kKC;
    blocks_ragged |= p.M > kBlockM && p.N > kBlockN && p.K > kBlockK && p.M % kBlockM && p.N % kBlockN &&
                     p.K % kBlockK;
  }
  CHECK(deep_ragged);
  CHECK(rows_past_mc);
  CHECK(cols_past_nc);
  CHECK(ragged_tile);
  CHECK(blocks_ragged);
}

TEST_CASE("checker: failure messages give coordinates in the output's layout", "[checker][cpu]") {
  // The last output row of an NHWC conv never written: the message names y[n,p,q,k].
  const ConvProblem p{1, 9, 7, 4, 5, 3, 3, 1, 1, 1, DType::f32};
  Variant<ConvProblem> v = conv_variant<ConvDefect::skip_last_output>("skipped_tail");
  const VariantInfo info{"conv2d", v.name, v.device, 0, v.threads, "", false};
  Case<ConvProblem> c(v, info, p, random_inputs(p, 7), "");
  const CompareResult r = checked_run(c);
  INFO(r.message);
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("y[0,8,6,4] (NHWC)") != std::string::npos);  // N=1, P=9, Q=7, K=5: the last element
  CHECK(r.message.find("rel L2") == std::string::npos);               // no L2 error beside NaN
  CHECK_FALSE(r.has_rel_l2());
}

TEST_CASE("checker: one broken variant's failures are capped, the rest named on one line", "[checker][cpu]") {
  const Variant<ConvProblem> v = conv_variant<ConvDefect::skip_last_output>("skipped_tail");
  const VariantInfo info{"conv2d", v.name, v.device, 0, v.threads, "", false};
  std::vector<std::string> specs;
  for (const ConvProblem& p : OpTraits<ConvProblem>::shapes(ShapeTable::test, Device::cpu))
    if (p.dtype == DType::f32) specs.push_back(OpTraits<ConvProblem>::spec(p));
  const testing::TableFailures f = testing::run_table(specs, [&](const std::string& spec) -> std::unique_ptr<ICase> {
    const ConvProblem p = OpTraits<ConvProblem>::parse(spec);
    return std::make_unique<Case<ConvProblem>>(v, info, p, random_inputs(p, 3), "");
  });
  REQUIRE(f.failed == f.tested);  // it fails everywhere
  REQUIRE(f.failed > testing::kMaxReportedFailures);
  CHECK(int(f.shown.size()) == testing::kMaxReportedFailures);
  CHECK(f.unshown.find(specs.back()) != std::string::npos);
  for (const std::string& s : f.shown) {
    INFO(s);
    CHECK(s.find("(NHWC)") != std::string::npos);  // coordinates, in the output's layout
  }
}


TEST_CASE("checker: CONVLAB_TEST_FLOP_LIMIT leaves out the large cases, never the smallest", "[checker][cpu]") {
  const Variant<ConvProblem> v = conv_variant<ConvDefect::skip_last_output>("skipped_tail");  // fails everywhere
  const VariantInfo info{"conv2d", v.name, v.device, 0, v.threads, "", false};
  std::vector<std::string> specs;
  std::vector<double> flops;
  for (const ConvProblem& p : OpTraits<ConvProblem>::shapes(ShapeTable::test, Device::cpu))
    if (p.dtype == DType::f32) specs.push_back(OpTraits<ConvProblem>::spec(p)), flops.push_back(p.flops());
  REQUIRE(specs.size() > 3);
  const auto make = [&](const std::string& spec) -> std::unique_ptr<ICase> {
    const ConvProblem p = OpTraits<ConvProblem>::parse(spec);
    return std::make_unique<Case<ConvProblem>>(v, info, p, random_inputs(p, 3), "");
  };
  std::vector<double> sorted = flops;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  const auto at_most = [&](double limit) { return int(std::count_if(flops.begin(), flops.end(), [&](double x) { return x <= limit; })); };
  struct Env {
    explicit Env(const char* v) { setenv("CONVLAB_TEST_FLOP_LIMIT", v, 1); }
    ~Env() { unsetenv("CONVLAB_TEST_FLOP_LIMIT"); }
  };
  {
    const Env e(std::to_string(median).c_str());
    const testing::TableFailures f = testing::run_table(specs, make);
    CHECK(f.tested == at_most(median));
    CHECK(f.left_out == int(specs.size()) - at_most(median));
    CHECK(f.failed == f.tested);  // the cases that ran still fail: nothing is hidden but the large ones
  }
  {
    const Env e("1");  // below every case: the smallest still runs
    const testing::TableFailures f = testing::run_table(specs, make);
    CHECK(f.tested == 1);
    CHECK(f.left_out == int(specs.size()) - 1);
    REQUIRE(f.shown.size() == 1);
    const std::size_t smallest = std::min_element(flops.begin(), flops.end()) - flops.begin();
    CHECK(f.shown[0].rfind(specs[smallest] + ",", 0) == 0);
  }
  {
    const Env e("lots");  // not a number: the whole table
    const testing::TableFailures f = testing::run_table(specs, make);
    CHECK(f.tested == int(specs.size()));
    CHECK(f.left_out == 0);
  }
}

namespace {
enum class PoolDefect { none_separate_rounding, bias_dropped, f16_output };

// Plain loops in fp32: conv, then the product acc·scale rounded on its own
// (no fused multiply-add, so a bias that cancels it exposes its rounding), bias,
// ReLU, max.
template <PoolDefect defect> void wrong_conv_pool(const ConvPoolProblem& p, const Args<ConvPoolProblem>& a) {
  const ConvProblem c = p.conv();
  const float* x = static_cast<const float*>(a.x);
  const float* w = static_cast<const float*>(a.w);
  const float* scale = static_cast<const float*>(a.scale);
  const float* bias = static_cast<const float*>(a.bias);
  float* y = static_cast<float*>(a.y);
  const int T = c.T(), Kg = c.K_per_group();
  for (int n = 0; n < p.N; ++n)
    for (int i = 0; i < p.P2(); ++i)
      for (int j = 0; j < p.Q2(); ++j)
        for (int k = 0; k < p.K; ++k) {
          float best = 0.f;  // ReLU: the window's max of max(v, 0)
          for (int e = 0; e < 4; ++e) {
            const int oh = 2 * i + e / 2, ow = 2 * j + e % 2;
            float acc = 0.f;
            for (int r = 0; r < p.R; ++r)
              for (int s = 0; s < p.S; ++s) {
                const int ih = oh * p.stride + r - p.pad, iw = ow * p.stride + s - p.pad;
                if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                for (int t = 0; t < T; ++t)
                  acc += w[((int64_t(k) * p.R + r) * p.S + s) * T + t] *
                         x[((int64_t(n) * p.H + ih) * p.W + iw) * p.C + (k / Kg) * T + t];
              }
            volatile float product = acc * scale[k];
            const float v = product + (defect == PoolDefect::bias_dropped ? 0.f : bias[k]);
            best = std::max(best, v);
          }
          if (defect == PoolDefect::f16_output) best = float(round_to(DType::f16, best));
          y[((int64_t(n) * p.P2() + i) * p.Q2() + j) * p.K + k] = best;
        }
}

template <PoolDefect defect> Variant<ConvPoolProblem> conv_pool_variant() {
  Variant<ConvPoolProblem> v;
  v.name = "planted";
  v.run = wrong_conv_pool<defect>;
  return v;
}
}  // namespace

TEST_CASE("checker: conv_bias_relu_pool's epilogue magnitudes accept rounding and reject defects", "[checker][cpu]") {
  SECTION("a correct layer, product and bias rounded separately") {
    const auto [passed, tried, report] = run_on_f32_table(conv_pool_variant<PoolDefect::none_separate_rounding>());
    INFO(report);
    REQUIRE(tried == 12);
    CHECK(passed == tried);
  }
  SECTION("bias dropped") {
    const auto [passed, tried, report] = run_on_f32_table(conv_pool_variant<PoolDefect::bias_dropped>(), 4);
    INFO(report);
    REQUIRE(tried >= 10);
    CHECK(passed == 0);
  }
  SECTION("an fp32 layer's output rounded to fp16") {
    const auto [passed, tried, report] = run_on_f32_table(conv_pool_variant<PoolDefect::f16_output>(), 4);
    INFO(report);
    REQUIRE(tried >= 10);
    CHECK(passed == 0);
  }
}

}  // namespace convlab
