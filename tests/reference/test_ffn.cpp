// tests/reference/test_ffn.cpp — self-tests of ref::linear and ref::ffn
// (Eq. 30): hand cases, the layer-by-layer composition from ref::gemm, and
// the loop-fused form of Eq. 32.
#include <vector>

#include "reference/conv2d.hpp"
#include "reference/gemm.hpp"
#include "reference/ffn.hpp"
#include "tests/catch_compat.hpp"
#include "tests/reference/ref_test_util.hpp"

namespace ref = convlab::ref;
using convlab::ref::Activation;
using convlab::ref_test::check_all_close;
using convlab::ref_test::random_vector;
using convlab::ref_test::throws_invalid_argument;

TEST_CASE("reference: linear hand-computed", "[reference]") {
  // x = [1 2; 3 −1], w = [1 0 2; 0 1 −1], bias = [0.5, 0, −1]
  const std::vector<double> x = {1, 2, 3, -1}, w = {1, 0, 2, 0, 1, -1}, bias = {0.5, 0, -1};
  std::vector<double> y(6, -999.0);
  ref::linear(2, 2, 3, x.data(), w.data(), bias.data(), y.data());
  // row 0: [1 + 0.5, 2 + 0, 2 − 2 − 1] = [1.5, 2, −1]
  // row 1: [3 + 0.5, −1 + 0, 6 + 1 − 1] = [3.5, −1, 6]
  check_all_close(y, {1.5, 2, -1, 3.5, -1, 6}, 0.0);
  ref::linear(2, 2, 3, x.data(), w.data(), nullptr, y.data());
  check_all_close(y, {1, 2, 0, 3, -1, 7}, 0.0);
}

TEST_CASE("reference: ffn hand-computed, C = 1, hidden = 2", "[reference]") {
  // u = [1, −1], a = [0, 1], v = [2; 3], b = [0.5]; inputs x = 2 and x = −3.
  // Hidden pre-activations: x·u + a = [2, −1] and [−3, 4].
  const std::vector<double> x = {2, -3}, u = {1, -1}, a = {0, 1}, v = {2, 3}, b = {0.5};
  ref::FfnShape s;
  s.P = 2, s.in_channels = 1, s.hidden_channels = 2, s.out_channels = 1;
  std::vector<double> z(2, -999.0);
  SECTION("relu") {
    // relu: [2, 0] -> 2·2 + 0·3 + 0.5 = 4.5;   [0, 4] -> 0·2 + 4·3 + 0.5 = 12.5
    s.activation = Activation::relu;
    ref::ffn(s, x.data(), u.data(), a.data(), v.data(), b.data(), z.data());
    check_all_close(z, {4.5, 12.5}, 0.0);
  }
  SECTION("identity") {
    // [2, −1] -> 4 − 3 + 0.5 = 1.5;   [−3, 4] -> −6 + 12 + 0.5 = 6.5
    s.activation = Activation::identity;
    ref::ffn(s, x.data(), u.data(), a.data(), v.data(), b.data(), z.data());
    check_all_close(z, {1.5, 6.5}, 0.0);
  }
}

TEST_CASE("reference: ffn equals its two layers done separately", "[reference]") {
  struct Case { int P, C, hidden, out; };
  const Case cases[] = {{13, 8, 32, 8}, {1, 5, 7, 5}, {20, 6, 24, 10}};
  const Activation activations[] = {Activation::identity, Activation::relu, Activation::silu, Activation::gelu,
                                    Activation::gelu_tanh};
  uint64_t seed = 800;
  for (const Case& c : cases)
    for (Activation act : activations) {
      CAPTURE(c.P, c.C, c.hidden, c.out, ref::activation_name(act));
      const auto x = random_vector(size_t(c.P) * c.C, ++seed, -2.0, 2.0);
      const auto u = random_vector(size_t(c.C) * c.hidden, ++seed);
      const auto a = random_vector(c.hidden, ++seed);
      const auto v = random_vector(size_t(c.hidden) * c.out, ++seed);
      const auto b = random_vector(c.out, ++seed);

      // Layer 1 by GEMM, then bias and φ per element; layer 2 by GEMM, then bias.
      std::vector<double> hidden(size_t(c.P) * c.hidden), expected(size_t(c.P) * c.out);
      ref::gemm(c.P, c.hidden, c.C, x.data(), u.data(), hidden.data());
      for (int i = 0; i < c.P; ++i)
        for (int j = 0; j < c.hidden; ++j) {
          double& h = hidden[size_t(i) * c.hidden + j];
          h = ref::activate(act, h + a[j]);
        }
      ref::gemm(c.P, c.out, c.hidden, hidden.data(), v.data(), expected.data());
      for (int i = 0; i < c.P; ++i)
        for (int o = 0; o < c.out; ++o) expected[size_t(i) * c.out + o] += b[o];

      ref::FfnShape s;
      s.P = c.P, s.in_channels = c.C, s.hidden_channels = c.hidden, s.out_channels = c.out, s.activation = act;
      std::vector<double> z(expected.size(), -999.0);
      ref::ffn(s, x.data(), u.data(), a.data(), v.data(), b.data(), z.data());
      check_all_close(z, expected, 1e-13);
    }
}

TEST_CASE("reference: ffn equals the loop-fused form of Eq. 32", "[reference]") {
  // FFN(X) = Σ_r φ(X·U^r + a_r)·V_r + b: one hidden channel at a time, each an
  // outer product of a column (over P) and a row (over C) added to Z.
  const int P = 17, C = 6, hidden = 18;
  const auto x = random_vector(size_t(P) * C, 810), u = random_vector(size_t(C) * hidden, 811);
  const auto a = random_vector(hidden, 812), v = random_vector(size_t(hidden) * C, 813);
  const auto b = random_vector(C, 814);
  std::vector<double> expected(size_t(P) * C);
  for (int i = 0; i < P; ++i)
    for (int o = 0; o < C; ++o) expected[size_t(i) * C + o] = b[o];
  for (int r = 0; r < hidden; ++r) {
    std::vector<double> channel(P);  // Y^r = φ(X·U^r + a_r)
    for (int i = 0; i < P; ++i) {
      double acc = a[r];
      for (int c = 0; c < C; ++c) acc += x[size_t(i) * C + c] * u[size_t(c) * hidden + r];
      channel[i] = ref::silu(acc);
    }
    for (int i = 0; i < P; ++i)
      for (int o = 0; o < C; ++o) expected[size_t(i) * C + o] += channel[i] * v[size_t(r) * C + o];
  }
  ref::FfnShape s;
  s.P = P, s.in_channels = C, s.hidden_channels = hidden, s.out_channels = C, s.activation = Activation::silu;
  std::vector<double> z(expected.size(), -999.0);
  ref::ffn(s, x.data(), u.data(), a.data(), v.data(), b.data(), z.data());
  check_all_close(z, expected, 1e-13);
}

TEST_CASE("reference: ffn and linear reject invalid arguments", "[reference]") {
  std::vector<double> buf(64, 0.0);
  double* p = buf.data();
  ref::FfnShape s;
  s.P = 2, s.in_channels = 2, s.hidden_channels = 0, s.out_channels = 2;
  CHECK(throws_invalid_argument([&] { ref::ffn(s, p, p, p, p, p, p); }, "hidden_channels"));
  s.hidden_channels = 4;
  CHECK(throws_invalid_argument([&] { ref::ffn(s, p, nullptr, p, p, p, p); }, "'u'"));
  s.activation = static_cast<Activation>(-1);
  CHECK(throws_invalid_argument([&] { ref::ffn(s, p, p, p, p, p, p); }, "Activation"));
  CHECK(throws_invalid_argument([&] { ref::linear(2, 0, 2, p, p, p, p); }, "in must be positive"));
  CHECK(throws_invalid_argument([&] { ref::linear(-2, 2, 2, p, p, p, p); }, "rows"));
}
