// tests/core/compare_test.cpp — the tolerance model, dtype conversions and
// tensors, checked on cases whose answers are known by hand.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/compare.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"
#include "tests/catch_compat.hpp"

namespace convlab {

TEST_CASE("compare: exact output passes, NaN and size mismatches fail", "[compare][cpu]") {
  const std::vector<double> ref = {1.0, -2.0, 3.0, 0.5};
  CHECK(compare(ref, ref, DType::f32, 10).ok);

  std::vector<double> out = ref;
  out[2] = std::numeric_limits<double>::quiet_NaN();
  const CompareResult nan = compare(out, ref, DType::f32, 10);
  CHECK_FALSE(nan.ok);
  CHECK(nan.non_finite == 1);
  CHECK(nan.worst_index == 2);

  out = ref;
  out[1] = std::numeric_limits<double>::infinity();
  CHECK_FALSE(compare(out, ref, DType::f32, 10).ok);
  CHECK_FALSE(compare(std::vector<double>{1.0}, ref, DType::f32, 10).ok);
}

TEST_CASE("compare: the bound follows u_acc·√depth + u_out", "[compare][cpu]") {
  const double u32 = 0x1p-24, u16 = 0x1p-11;
  const Tolerance t32 = tolerance_for(DType::f32, 400);
  CHECK(std::abs(t32.rel_l2 - kToleranceL2 * (u32 * 20 + u32)) < 1e-15);
  const Tolerance t16 = tolerance_for(DType::f16, 400);
  CHECK(std::abs(t16.rel_l2 - kToleranceL2 * (u32 * 20 + u16)) < 1e-15);

  // One fp16 rounding of every output passes an fp16 problem but not an fp32 one.
  std::vector<double> ref(1000), rounded(1000);
  for (int i = 0; i < 1000; ++i) {
    ref[i] = std::sin(0.37 * i + 0.1) * 3.0;
    rounded[i] = round_to(DType::f16, ref[i]);
  }
  CHECK(compare(rounded, ref, DType::f16, 64).ok);
  CHECK_FALSE(compare(rounded, ref, DType::f32, 64).ok);

  // One element off by 0.1% in a million: the L2 error (1e-6) is within its
  // bound (5.2e-6 at depth 100), but the max-abs test (bound 2.1e-5) catches it.
  std::vector<double> big(1000000, 1.0), one_off = big;
  one_off[777] *= 1.001;
  const CompareResult r = compare(one_off, big, DType::f32, 100);
  CHECK(r.rel_l2 < r.bound.rel_l2);
  CHECK_FALSE(r.ok);
  CHECK(r.worst_index == 777);
}

TEST_CASE("compare: an epilogue's magnitudes give a cancelling output the room its terms need", "[compare][cpu]") {
  // y = x·s + b with x = s = 1 + 2⁻¹², b = −1, all exact in fp32: x·s = 1 + 2⁻¹¹ + 2⁻²⁴
  // rounds to 1 + 2⁻¹¹ (a tie, to even), so the fp32 answer 2⁻¹¹ is off by 2⁻²⁴.
  // That is 1.2e-4 of y, far over the depth-1 bound 8·2u ≈ 9.5e-7, but 3e-8 of
  // the terms' size |x·s| + |b| ≈ 2.
  const double x = 1 + 0x1p-12, s = x, b = -1;
  const std::vector<double> ref = {x * s + b};
  volatile float product = float(x) * float(s);  // rounded on its own: no fused multiply-add
  const std::vector<double> out = {double(product + float(b))};
  REQUIRE(ref[0] - out[0] == 0x1p-24);
  CHECK_FALSE(compare(out, ref, DType::f32, 1).ok);
  const std::vector<double> magnitude = {std::abs(x * s) + std::abs(b)};
  CHECK(compare(out, ref, DType::f32, 1, {}, magnitude).ok);
  // The room is relative to the terms, not unlimited: an error of 1e-5 of them fails.
  CHECK_FALSE(compare(std::vector<double>{ref[0] + 2e-5}, ref, DType::f32, 1, {}, magnitude).ok);
  // A magnitude below |ref| changes nothing, and there is one per output or none.
  CHECK_FALSE(compare(out, ref, DType::f32, 1, {}, std::vector<double>{0.0}).ok);
  bool threw = false;
  try {
    compare(out, ref, DType::f32, 1, {}, std::vector<double>{1.0, 1.0});
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
}

TEST_CASE("compare: an all-zero reference is judged by absolute error", "[compare][cpu]") {
  const std::vector<double> zeros(16, 0.0);
  CHECK(compare(zeros, zeros, DType::f32, 1).ok);
  std::vector<double> out = zeros;
  out[3] = 1e-3;
  CHECK_FALSE(compare(out, zeros, DType::f32, 1).ok);
}

TEST_CASE("dtype: half and bfloat16 conversions round to nearest even", "[dtype][cpu]") {
  CHECK(float_to_half(1.0f) == 0x3C00);
  CHECK(float_to_half(-2.0f) == 0xC000);
  CHECK(float_to_half(65504.0f) == 0x7BFF);      // largest finite half
  CHECK(float_to_half(65520.0f) == 0x7C00);      // rounds up to infinity
  CHECK(float_to_half(0x1p-24f) == 0x0001);      // smallest subnormal
  CHECK(float_to_half(0x1p-25f) == 0x0000);      // a tie: rounds to even (zero)
  CHECK(float_to_half(1.0f + 0x1p-11f) == 0x3C00);  // tie between 1 and 1+2^-10: even is 1
  CHECK(float_to_half(1.0f + 0x1.8p-11f) == 0x3C01);
  CHECK(half_to_float(0x3555) == 0x1.554p-2f);
  CHECK(half_to_float(0x8001) == -0x1p-24f);
  CHECK(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  CHECK(float_to_bf16(1.0f) == 0x3F80);
  CHECK(bf16_to_float(float_to_bf16(1.0f + 0x1p-8f)) == 1.0f);  // tie to even
  CHECK(bf16_to_float(float_to_bf16(1.0f + 0x1.8p-8f)) == 1.0f + 0x1p-7f);
  for (int i = 0; i < 0x7C00; i += 7)  // every 7th finite positive half survives a round trip
    CHECK(float_to_half(half_to_float(uint16_t(i))) == i);
}

TEST_CASE("tensor: poison makes every element NaN, values round to the dtype", "[tensor][cpu]") {
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    Tensor x({3, 5, 7}, t);
    CHECK(x.numel() == 105);
    CHECK(x.bytes() == 105 * dtype_size(t));
    std::mt19937_64 rng(1);
    x.fill_uniform(rng);
    bool all_in_range = true, any_nonzero = false;
    for (double v : x.to_double()) {
      all_in_range = all_in_range && v >= -1.0 && v <= 1.0;
      any_nonzero = any_nonzero || v != 0.0;
    }
    CHECK(all_in_range);
    CHECK(any_nonzero);
    x.poison();
    for (double v : x.to_double()) REQUIRE(std::isnan(v));
    x.set(4, 1.0 / 3.0);
    CHECK(x.get(4) == round_to(t, 1.0 / 3.0));
  }
  CHECK(reinterpret_cast<uintptr_t>(Tensor({5}, DType::f32).data()) % 64 == 0);
}

}  // namespace convlab
