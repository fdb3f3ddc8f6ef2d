// tests/reference/test_batchnorm.cpp — self-tests of batch-norm at inference
// and of folding it into a convolution: hand cases, and "folded conv equals
// conv then BN" on random dense, grouped and depthwise convs.
#include <vector>

#include "reference/batchnorm.hpp"
#include "reference/conv2d.hpp"
#include "reference/elementwise.hpp"
#include "tests/catch_compat.hpp"
#include "tests/reference/ref_test_util.hpp"

namespace ref = convlab::ref;
using convlab::ref_test::check_all_close;
using convlab::ref_test::random_vector;
using convlab::ref_test::throws_invalid_argument;

TEST_CASE("reference: batchnorm_inference hand-computed", "[reference]") {
  // Two channels: γ = [2, 0.5], β = [1, −1], μ = [3, 0], σ² = [3, 15], ε = 1,
  // so √(σ² + ε) = [2, 4].
  const std::vector<double> gamma = {2, 0.5}, beta = {1, -1}, mean = {3, 0}, var = {3, 15};
  ref::BatchNormParams bn{gamma.data(), beta.data(), mean.data(), var.data(), 1.0};
  const std::vector<double> x = {5, 8, 1, -4};  // two pixels
  std::vector<double> y(4, -999.0);
  ref::batchnorm_inference(2, 2, x.data(), bn, y.data());
  // pixel 0: 2·(5 − 3)/2 + 1 = 3      0.5·(8 − 0)/4 − 1 = 0
  // pixel 1: 2·(1 − 3)/2 + 1 = −1     0.5·(−4 − 0)/4 − 1 = −1.5
  check_all_close(y, {3, 0, -1, -1.5}, 1e-15);
}

TEST_CASE("reference: fold_batchnorm hand-computed 1x1 conv", "[reference]") {
  // One filter over two channels, w = [1, 2], conv bias 0.5;
  // BN: γ = 3, β = 1, μ = 2.5, σ² = 3, ε = 1  ->  s = 3/√4 = 1.5.
  convlab::ref::ConvShape p;
  p.C = 2, p.K = 1;
  const std::vector<double> w = {1, 2}, conv_bias = {0.5};
  const std::vector<double> gamma = {3}, beta = {1}, mean = {2.5}, var = {3};
  ref::BatchNormParams bn{gamma.data(), beta.data(), mean.data(), var.data(), 1.0};
  std::vector<double> folded_w(2, -999.0), folded_b(1, -999.0);
  ref::fold_batchnorm(p, w.data(), conv_bias.data(), bn, folded_w.data(), folded_b.data());
  // w' = [1·1.5, 2·1.5] = [1.5, 3];   b' = (0.5 − 2.5)·1.5 + 1 = −2
  check_all_close(folded_w, {1.5, 3}, 1e-15);
  check_all_close(folded_b, {-2}, 1e-15);
  SECTION("without a conv bias the bias is −μ·s + β") {
    ref::fold_batchnorm(p, w.data(), nullptr, bn, folded_w.data(), folded_b.data());
    check_all_close(folded_b, {-2.5 * 1.5 + 1}, 1e-15);
  }
}

TEST_CASE("reference: folded batch-norm equals conv then batch-norm", "[reference]") {
  struct Case { int N, H, W, C, K, R, S, stride, pad, groups; bool conv_bias; };
  const Case cases[] = {
      {2, 6, 5, 4, 6, 3, 3, 1, 1, 1, true},    // dense 3x3 with bias
      {1, 7, 7, 8, 4, 3, 3, 2, 1, 2, false},   // grouped, stride 2, no conv bias
      {1, 5, 6, 5, 5, 3, 3, 1, 1, 5, true},    // depthwise
      {3, 4, 4, 16, 8, 1, 1, 1, 0, 1, false},  // 1x1
  };
  uint64_t seed = 600;
  for (const Case& c : cases) {
    CAPTURE(c.C, c.K, c.R, c.stride, c.groups, c.conv_bias);
    convlab::ref::ConvShape p;
    p.N = c.N, p.H = c.H, p.W = c.W, p.C = c.C, p.K = c.K, p.R = c.R, p.S = c.S;
    p.stride = c.stride, p.pad = c.pad, p.groups = c.groups;
    const auto x = random_vector(size_t(p.input_elems()), ++seed);
    const auto w = random_vector(size_t(p.weight_elems()), ++seed);
    const auto bias = random_vector(p.K, ++seed);
    const auto gamma = random_vector(p.K, ++seed, 0.5, 2.0);
    const auto beta = random_vector(p.K, ++seed);
    const auto mean = random_vector(p.K, ++seed);
    const auto var = random_vector(p.K, ++seed, 0.1, 3.0);
    const ref::BatchNormParams bn{gamma.data(), beta.data(), mean.data(), var.data(), 1e-3};
    const double* conv_bias = c.conv_bias ? bias.data() : nullptr;
    const size_t out = size_t(p.output_elems());
    const int64_t pixels = int64_t(out / p.K);

    // Unfolded: conv, + bias, then BN as its own layer.
    std::vector<double> expected(out);
    ref::conv2d(p, x.data(), w.data(), expected.data());
    ref::channel_scale_bias(pixels, p.K, expected.data(), nullptr, conv_bias, expected.data());
    ref::batchnorm_inference(pixels, p.K, expected.data(), bn, expected.data());

    // Folded: one conv with w', then + b'.
    std::vector<double> folded_w(w.size()), folded_b(p.K), y(out);
    ref::fold_batchnorm(p, w.data(), conv_bias, bn, folded_w.data(), folded_b.data());
    ref::conv2d(p, x.data(), folded_w.data(), y.data());
    ref::channel_scale_bias(pixels, p.K, y.data(), nullptr, folded_b.data(), y.data());

    check_all_close(y, expected, 1e-12);
  }
}

TEST_CASE("reference: batch-norm functions reject invalid arguments", "[reference]") {
  const std::vector<double> ones(4, 1.0), bad_var = {1.0, -1.0, 1.0, 1.0};
  std::vector<double> b(64, 0.0);
  double* p = b.data();
  const ref::BatchNormParams good{ones.data(), ones.data(), ones.data(), ones.data(), 1e-5};
  const ref::BatchNormParams negative_var{ones.data(), ones.data(), ones.data(), bad_var.data(), 1e-5};
  const ref::BatchNormParams missing_gamma{nullptr, ones.data(), ones.data(), ones.data(), 1e-5};
  CHECK(throws_invalid_argument([&] { ref::batchnorm_inference(2, 4, p, negative_var, p); }, "channel 1"));
  CHECK(throws_invalid_argument([&] { ref::batchnorm_inference(2, 4, p, missing_gamma, p); }, "'gamma'"));
  CHECK(throws_invalid_argument([&] { ref::batchnorm_inference(2, 0, p, good, p); }, "channels"));
  convlab::ref::ConvShape conv;
  conv.C = 4, conv.K = 4, conv.groups = 3;  // 3 does not divide 4
  CHECK(throws_invalid_argument([&] { ref::fold_batchnorm(conv, p, nullptr, good, p, p); }, "groups"));
  conv.groups = 1;
  CHECK(throws_invalid_argument([&] { ref::fold_batchnorm(conv, p, nullptr, negative_var, p, p); }, "variance"));
  CHECK(throws_invalid_argument([&] { ref::fold_batchnorm(conv, p, nullptr, good, nullptr, p); }, "'folded_w'"));
}
