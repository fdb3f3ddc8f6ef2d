// tests/reference/test_elementwise.cpp — self-tests of the activations and
// the per-channel scale/bias: hand values and algebraic identities.
#include <cmath>
#include <string>
#include <vector>

#include "reference/elementwise.hpp"
#include "tests/catch_compat.hpp"
#include "tests/reference/ref_test_util.hpp"

namespace ref = convlab::ref;
using convlab::ref::Activation;
using convlab::ref_test::check_all_close;
using convlab::ref_test::random_vector;
using convlab::ref_test::throws_invalid_argument;

TEST_CASE("reference: activations at hand-computed points", "[reference]") {
  const double tol = 1e-15, ln3 = std::log(3.0);
  CHECK(ref::relu(2.5) == 2.5);
  CHECK(ref::relu(-3.0) == 0.0);
  CHECK(ref::relu(0.0) == 0.0);
  CHECK(ref::sigmoid(0.0) == 0.5);
  // sigmoid(ln 3) = 1 / (1 + 1/3) = 3/4, sigmoid(−ln 3) = 1 / (1 + 3) = 1/4
  CHECK(std::abs(ref::sigmoid(ln3) - 0.75) <= tol);
  CHECK(std::abs(ref::sigmoid(-ln3) - 0.25) <= tol);
  // silu(ln 3) = ln 3 · 3/4, silu(−ln 3) = −ln 3 · 1/4
  CHECK(std::abs(ref::silu(ln3) - 0.75 * ln3) <= tol);
  CHECK(std::abs(ref::silu(-ln3) + 0.25 * ln3) <= tol);
  // gelu(1) = Φ(1) = ½(1 + erf(1/√2)) = ½(1 + 0.6826894921370859) = 0.8413447460685429
  // gelu(−1) = −(1 − Φ(1)) = −0.15865525393145707
  CHECK(ref::gelu(0.0) == 0.0);
  CHECK(std::abs(ref::gelu(1.0) - 0.8413447460685429) <= tol);
  CHECK(std::abs(ref::gelu(-1.0) + 0.15865525393145707) <= tol);
  // gelu_tanh(1) = ½(1 + tanh(√(2/π)·1.044715)) = ½(1 + tanh(0.8335565596...)) = 0.8411919906082768
  // gelu_tanh(2) = 2·½(1 + tanh(√(2/π)·2.35772))  = 1.954597694087775
  CHECK(ref::gelu_tanh(0.0) == 0.0);
  CHECK(std::abs(ref::gelu_tanh(1.0) - 0.8411919906082768) <= tol);
  CHECK(std::abs(ref::gelu_tanh(2.0) - 1.954597694087775) <= tol);
  // activate() dispatches to the right function.
  CHECK(ref::activate(Activation::identity, -1.5) == -1.5);
  CHECK(ref::activate(Activation::relu, -1.5) == 0.0);
  CHECK(std::abs(ref::activate(Activation::silu, ln3) - 0.75 * ln3) <= tol);
  CHECK(std::abs(ref::activate(Activation::gelu, 1.0) - 0.8413447460685429) <= tol);
  CHECK(std::abs(ref::activate(Activation::gelu_tanh, 1.0) - 0.8411919906082768) <= tol);
  CHECK(std::string(ref::activation_name(Activation::gelu_tanh)) == "gelu_tanh");
}

TEST_CASE("reference: activation identities on random inputs", "[reference]") {
  const auto x = random_vector(2000, 11, -8.0, 8.0);
  for (double v : x) {
    CAPTURE(v);
    CHECK(std::abs(ref::sigmoid(v) - 1.0 / (1.0 + std::exp(-v))) <= 1e-15);
    CHECK(std::abs(ref::sigmoid(-v) - (1.0 - ref::sigmoid(v))) <= 1e-15);
    CHECK(std::abs(ref::silu(v) - v / (1.0 + std::exp(-v))) <= 1e-14);
    // Φ(x) + Φ(−x) = 1, so gelu(x) − gelu(−x) = x·Φ(x) + x·Φ(−x) = x.
    CHECK(std::abs(ref::gelu(v) - ref::gelu(-v) - v) <= 1e-14);
    // The tanh form approximates the erf form to within 5e-4 everywhere.
    CHECK(std::abs(ref::gelu_tanh(v) - ref::gelu(v)) <= 5e-4);
    CHECK(ref::relu(v) == (v > 0 ? v : 0.0));
  }
}

TEST_CASE("reference: activations stay finite at extreme inputs", "[reference]") {
  for (double v : {-1e3, -745.0, -40.0, 40.0, 745.0, 1e3}) {
    CAPTURE(v);
    const double s = ref::sigmoid(v);
    CHECK(std::isfinite(s));
    CHECK((s >= 0.0 && s <= 1.0));
    CHECK(std::isfinite(ref::silu(v)));
    CHECK(std::isfinite(ref::gelu(v)));
    CHECK(std::isfinite(ref::gelu_tanh(v)));
  }
  CHECK(ref::sigmoid(-1e3) == 0.0);
  CHECK(ref::sigmoid(1e3) == 1.0);
  CHECK(ref::silu(1e3) == 1e3);
  CHECK(ref::gelu(-40.0) == 0.0);  // −40·Φ(−40) underflows to −0
}

TEST_CASE("reference: array activations, in place included", "[reference]") {
  const std::vector<double> x = {-2.0, 0.0, std::log(3.0)};
  std::vector<double> y(3, -999.0);
  ref::relu(3, x.data(), y.data());
  check_all_close(y, {0.0, 0.0, std::log(3.0)}, 0.0);
  ref::sigmoid(3, x.data(), y.data());
  // sigmoid(−2) = 1/(1 + e²) = 0.11920292202211755
  check_all_close(y, {0.11920292202211755, 0.5, 0.75}, 1e-15);
  ref::silu(3, x.data(), y.data());
  check_all_close(y, {-2.0 * 0.11920292202211755, 0.0, 0.75 * std::log(3.0)}, 1e-15);
  ref::gelu(3, x.data(), y.data());
  // gelu(−2) = −2·Φ(−2) = −2·0.022750131948179195
  check_all_close(y, {-2.0 * 0.022750131948179195, 0.0, std::log(3.0) * 0.5 * (1 + std::erf(std::log(3.0) / std::sqrt(2.0)))},
                  1e-15);
  std::vector<double> in_place = {-1.0, 1.0};
  ref::activate(Activation::gelu_tanh, 2, in_place.data(), in_place.data());
  check_all_close(in_place, {-0.15880800939172324, 0.8411919906082768}, 1e-15);
  ref::gelu_tanh(0, nullptr, nullptr);  // an empty range touches nothing
}

TEST_CASE("reference: channel_scale_bias hand-computed", "[reference]") {
  // Two pixels, three channels; scale = [2, −1, 0.5], bias = [10, 0, −1].
  const std::vector<double> x = {1, 2, 3, 4, 5, 6}, scale = {2, -1, 0.5}, bias = {10, 0, -1};
  std::vector<double> y(6, -999.0);
  SECTION("scale and bias") {
    // [1·2+10, 2·(−1)+0, 3·0.5−1,  4·2+10, 5·(−1)+0, 6·0.5−1]
    ref::channel_scale_bias(2, 3, x.data(), scale.data(), bias.data(), y.data());
    check_all_close(y, {12, -2, 0.5, 18, -5, 2}, 0.0);
  }
  SECTION("bias only (scale = nullptr)") {
    ref::channel_scale_bias(2, 3, x.data(), nullptr, bias.data(), y.data());
    check_all_close(y, {11, 2, 2, 14, 5, 5}, 0.0);
  }
  SECTION("scale only (bias = nullptr), in place") {
    std::vector<double> z = x;
    ref::channel_scale_bias(2, 3, z.data(), scale.data(), nullptr, z.data());
    check_all_close(z, {2, -2, 1.5, 8, -5, 3}, 0.0);
  }
}

TEST_CASE("reference: elementwise functions reject invalid arguments", "[reference]") {
  std::vector<double> b(8, 0.0);
  double* p = b.data();
  CHECK(throws_invalid_argument([p] { ref::relu(-1, p, p); }, "count"));
  CHECK(throws_invalid_argument([p] { ref::sigmoid(4, nullptr, p); }, "'x'"));
  CHECK(throws_invalid_argument([p] { ref::silu(4, p, nullptr); }, "'y'"));
  CHECK(throws_invalid_argument([p] { ref::activate(static_cast<Activation>(42), 4, p, p); }, "Activation"));
  CHECK(throws_invalid_argument([p] { ref::channel_scale_bias(2, 0, p, p, p, p); }, "channels"));
  CHECK(throws_invalid_argument([p] { ref::channel_scale_bias(2, 2, p, p, p, nullptr); }, "'y'"));
}
