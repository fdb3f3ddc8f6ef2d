// tests/core/checker_test.cpp — the checker is tested too.
//
// Deliberately wrong conv2d and GEMM variants — an off-by-one window, a
// skipped tail, a low-precision accumulator, an unwritten element — run
// through the very same harness path as real variants (random inputs, poisoned
// outputs, compare against the double reference) and must be rejected on every
// shape of the test table. A correct variant that merely sums in another
// order must be accepted, so the tolerance is not simply "reject everything".
#include <cmath>
#include <functional>
#include <string>

#include "ops/conv2d.hpp"
#include "ops/gemm.hpp"
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
  const auto [passed, tried] = run_on_f32_table(conv_variant<ConvDefect::none_reversed_order>("reversed_order"));
  REQUIRE(tried > 5);
  CHECK(passed == tried);
}

TEST_CASE("checker: wrong conv variants are rejected on every shape", "[checker][cpu]") {
  SECTION("window off by one row") {
    const auto [passed, tried] = run_on_f32_table(conv_variant<ConvDefect::window_off_by_one>("off_by_one"));
    REQUIRE(tried > 5);
    CHECK(passed == 0);
  }
  SECTION("last output element never written") {
    const auto [passed, tried] = run_on_f32_table(conv_variant<ConvDefect::skip_last_output>("skipped_tail"));
    CHECK(passed == 0);
  }
  SECTION("last output channel never written") {
    const auto [passed, tried] = run_on_f32_table(conv_variant<ConvDefect::skip_last_channel>("skipped_channel"));
    CHECK(passed == 0);
  }
  SECTION("bf16 accumulator in an fp32 problem") {
    const auto [passed, tried] = run_on_f32_table(conv_variant<ConvDefect::bf16_accumulator>("low_precision"));
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
    const auto [passed, tried] = run_on_f32_table(gemm_variant<GemmDefect::k_loop_short>("k_short"));
    REQUIRE(tried > 5);
    CHECK(passed == 0);
  }
  SECTION("fp32 inputs rounded to fp16") {
    const auto [passed, tried] = run_on_f32_table(gemm_variant<GemmDefect::fp16_inputs>("fp16_inputs"));
    CHECK(passed == 0);
  }
  SECTION("last row never written") {
    const auto [passed, tried] = run_on_f32_table(gemm_variant<GemmDefect::rows_one_short>("rows_short"));
    CHECK(passed == 0);
  }
}

}  // namespace convlab
