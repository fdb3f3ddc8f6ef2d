// tests/lesson06_degenerate_test.cpp — lesson 06's arithmetic, checked on the problem descriptors.
//
// The registry tests already run the depthwise, grouped and pointwise
// variants on the whole conv2d test table. What they do not check is the
// lesson's counting:
//
//   1. MobileNet's cost ratio. A depthwise R×S conv over C channels followed
//      by a pointwise C → K conv does
//        N·P·Q·C·R·S + N·P·Q·C·K   multiply-adds
//      where a dense R×S conv C → K does N·P·Q·C·K·R·S, so the ratio is
//        1/K + 1/(R·S)                                  (Howard et al. 2017)
//      exactly, whenever both convs see the same P×Q (stride 1, "same" pad).
//      Checked with ConvProblem::flops(), the numbers the benchmarks report.
//   2. The intensities the lesson quotes (Eq. 24–27 without the bias term,
//      large N·H·W so the weights do not count): at fp16 a depthwise 3x3 does
//      R·S/2 = 4.5 flops per byte whatever C is, grouped T = 8 does 36, and
//      pointwise 2·C·K / (2·(C + K)).
#include <cmath>

#include "ops/conv2d.hpp"
#include "tests/catch_compat.hpp"

namespace convlab {
namespace {

ConvProblem make(int N, int HW, int C, int K, int R, int groups, DType dtype = DType::f32) {
  ConvProblem p;
  p.N = N, p.H = p.W = HW, p.C = C, p.K = K, p.R = p.S = R;
  p.stride = 1, p.pad = R / 2, p.groups = groups, p.dtype = dtype;
  return p;
}

TEST_CASE("lesson 06: depthwise-separable flops are 1/K + 1/(R*S) of the dense conv's", "[lesson06]") {
  struct Case {
    int N, HW, C, K, R;
  };
  for (const Case c : {Case{8, 28, 128, 128, 3}, Case{1, 7, 32, 64, 3}, Case{128, 28, 384, 384, 3},
                       Case{2, 14, 96, 24, 5}, Case{1, 13, 17, 31, 7}}) {
    const ConvProblem dense = make(c.N, c.HW, c.C, c.K, c.R, 1);
    const ConvProblem depthwise = make(c.N, c.HW, c.C, c.C, c.R, c.C);
    const ConvProblem pointwise = make(c.N, c.HW, c.C, c.K, 1, 1);
    REQUIRE(depthwise.P() == pointwise.H);  // the pointwise conv reads what the depthwise writes
    const double measured = (depthwise.flops() + pointwise.flops()) / dense.flops();
    const double predicted = 1.0 / c.K + 1.0 / (c.R * c.R);
    CHECK(std::abs(measured - predicted) <= 1e-12 * predicted);
  }
}

TEST_CASE("lesson 06: grouped flops scale with the group width T", "[lesson06]") {
  const ConvProblem dense = make(8, 28, 256, 256, 3, 1);
  for (const int T : {1, 8, 32, 256}) {
    const ConvProblem grouped = make(8, 28, 256, 256, 3, 256 / T);
    CHECK(grouped.T() == T);
    CHECK(std::abs(grouped.flops() / dense.flops() - double(T) / 256) <= 1e-12);
  }
}

TEST_CASE("lesson 06: operational intensities of the kinds (Eq. 24-27, no bias)", "[lesson06]") {
  // Large N·H·W: the weights vanish from the byte count.
  const int N = 128, HW = 56, C = 256;
  const double bpe = 2;  // fp16
  const ConvProblem depthwise = make(N, HW, C, C, 3, C, DType::f16);
  const ConvProblem grouped = make(N, HW, C, C, 3, C / 8, DType::f16);
  const ConvProblem pointwise = make(N, HW, C, 4 * C, 1, 1, DType::f16);
  const auto intensity = [](const ConvProblem& p) { return p.flops() / p.min_bytes(); };
  // 2·T·R·S flops per output over (1 + C/K) elements moved per output: T·R·S/(1 + C/K) at 2 bytes.
  CHECK(std::abs(intensity(depthwise) - 2.0 * 9 / (bpe * 2)) < 0.01 * 4.5);
  CHECK(std::abs(intensity(grouped) - 2.0 * 72 / (bpe * 2)) < 0.01 * 36);
  CHECK(std::abs(intensity(pointwise) - 2.0 * C * 4 * C / (bpe * (C + 4.0 * C))) < 0.01 * 204.8);
  // Depthwise does 4.5 flops per byte whatever C is: far below any GPU's ridge (~175 at fp16 on an H200).
  CHECK(intensity(depthwise) < 5);
}

}  // namespace
}  // namespace convlab
