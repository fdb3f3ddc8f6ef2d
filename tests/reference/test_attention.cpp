// tests/reference/test_attention.cpp — self-tests of softmax_rows and
// attention: hand cases (including the top-left causal convention), stability
// at large magnitudes, and attention rebuilt from ref::gemm + softmax_rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/attention.hpp"
#include "reference/softmax.hpp"
#include "reference/conv2d.hpp"
#include "reference/gemm.hpp"
#include "tests/catch_compat.hpp"
#include "tests/reference/ref_test_util.hpp"

namespace ref = convlab::ref;
using convlab::ref_test::check_all_close;
using convlab::ref_test::random_vector;
using convlab::ref_test::throws_invalid_argument;

namespace {

// softmax(Q·Kᵀ·scale [+ mask])·V per (b, h), from ref::gemm and ref::softmax_rows.
// Masked logits are set to −inf before the softmax (top-left: key j > query i).
std::vector<double> attention_by_gemm(const ref::AttentionShape& s, const std::vector<double>& q,
                                      const std::vector<double>& k, const std::vector<double>& v) {
  std::vector<double> o(size_t(s.B) * s.H * s.Nq * s.d);
  for (int bh = 0; bh < s.B * s.H; ++bh) {
    const double* qh = &q[size_t(bh) * s.Nq * s.d];
    const double* kh = &k[size_t(bh) * s.Nk * s.d];
    const double* vh = &v[size_t(bh) * s.Nk * s.d];
    std::vector<double> k_transposed(size_t(s.d) * s.Nk), logits(size_t(s.Nq) * s.Nk);
    for (int j = 0; j < s.Nk; ++j)
      for (int t = 0; t < s.d; ++t) k_transposed[size_t(t) * s.Nk + j] = kh[size_t(j) * s.d + t];
    ref::gemm(s.Nq, s.Nk, s.d, qh, k_transposed.data(), logits.data());
    for (int i = 0; i < s.Nq; ++i)
      for (int j = 0; j < s.Nk; ++j) {
        double& logit = logits[size_t(i) * s.Nk + j];
        logit = (s.causal && j > i) ? -std::numeric_limits<double>::infinity() : logit * s.scale;
      }
    ref::softmax_rows(s.Nq, s.Nk, logits.data(), logits.data());
    ref::gemm(s.Nq, s.d, s.Nk, logits.data(), vh, &o[size_t(bh) * s.Nq * s.d]);
  }
  return o;
}

ref::AttentionShape make_shape(int B, int H, int Nq, int Nk, int d, bool causal) {
  ref::AttentionShape s;
  s.B = B, s.H = H, s.Nq = Nq, s.Nk = Nk, s.d = d, s.causal = causal;
  s.scale = s.standard_scale();
  return s;
}

}  // namespace

TEST_CASE("reference: softmax_rows hand-computed", "[reference]") {
  const double inf = std::numeric_limits<double>::infinity();
  // Row 0: exps 1, 2, 5 (sum 8).  Row 1: equal logits.  Row 2: −inf is a masked entry.
  const std::vector<double> x = {0, std::log(2.0), std::log(5.0), 3, 3, 3, -inf, 0, 0};
  std::vector<double> y(9, -999.0);
  ref::softmax_rows(3, 3, x.data(), y.data());
  check_all_close(y, {1.0 / 8, 2.0 / 8, 5.0 / 8, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0.0, 0.5, 0.5}, 1e-15);
}

TEST_CASE("reference: softmax_rows is stable at magnitude 1e4", "[reference]") {
  SECTION("hand case: [1e4, 1e4 − 1, −1e4]") {
    // Naively e^1e4 overflows. After subtracting the max: e^0, e^−1, e^−2e4 (= 0).
    // p0 = 1/(1 + e^−1) = 0.7310585786300049, p1 = e^−1/(1 + e^−1) = 0.2689414213699951.
    const std::vector<double> x = {1e4, 1e4 - 1, -1e4};
    std::vector<double> y(3, -999.0);
    ref::softmax_rows(1, 3, x.data(), y.data());
    check_all_close(y, {0.7310585786300049, 0.2689414213699951, 0.0}, 1e-15);
  }
  SECTION("random rows scaled to 1e4: finite, in [0, 1], summing to 1") {
    const int rows = 50, cols = 37;
    auto x = random_vector(size_t(rows) * cols, 700, -1e4, 1e4);
    std::vector<double> y(x.size(), -999.0);
    ref::softmax_rows(rows, cols, x.data(), y.data());
    for (int i = 0; i < rows; ++i) {
      CAPTURE(i);
      double sum = 0.0;
      bool finite_and_bounded = true;
      for (int j = 0; j < cols; ++j) {
        const double p = y[size_t(i) * cols + j];
        finite_and_bounded = finite_and_bounded && std::isfinite(p) && p >= 0.0 && p <= 1.0;
        sum += p;
      }
      CHECK(finite_and_bounded);
      CHECK(std::abs(sum - 1.0) <= 1e-14);
    }
  }
  SECTION("shifting a row by a constant changes nothing") {
    const auto x = random_vector(4 * 9, 701, -3.0, 3.0);
    std::vector<double> shifted = x, y(x.size()), y_shifted(x.size());
    for (double& v : shifted) v += 5e3;
    ref::softmax_rows(4, 9, x.data(), y.data());
    ref::softmax_rows(4, 9, shifted.data(), y_shifted.data());
    check_all_close(y_shifted, y, 1e-12);
  }
}

TEST_CASE("reference: attention hand-computed, one query and two keys", "[reference]") {
  // d = 2. q = [1, 0]; k0 = [0, 5], k1 = [ln 3, −7]: logits q·k = [0, ln 3]
  // (the zero in q hides k's second column). Softmax = [1/4, 3/4].
  // v0 = [4, −1], v1 = [8, 3]:  o = [4/4 + 8·3/4, −1/4 + 3·3/4] = [7, 2].
  const double ln3 = std::log(3.0);
  const std::vector<double> k = {0, 5, ln3, -7}, v = {4, -1, 8, 3};
  ref::AttentionShape s;
  s.Nq = 1, s.Nk = 2, s.d = 2;
  std::vector<double> o(2, -999.0);
  SECTION("scale 1") {
    s.scale = 1.0;
    const std::vector<double> q = {1, 0};
    ref::attention(s, q.data(), k.data(), v.data(), o.data());
    check_all_close(o, {7, 2}, 1e-14);
  }
  SECTION("scale 2 with q halved gives the same logits") {
    s.scale = 2.0;
    const std::vector<double> q = {0.5, 0};
    ref::attention(s, q.data(), k.data(), v.data(), o.data());
    check_all_close(o, {7, 2}, 1e-14);
  }
}

TEST_CASE("reference: causal attention is top-left aligned", "[reference]") {
  // d = 1, all queries 0: every visible key gets equal weight, so each output
  // is the mean of the visible values. v = [2, 4, 100].
  const std::vector<double> k = {0.3, -0.7, 1.1}, v = {2, 4, 100};
  SECTION("Nq = 2 < Nk = 3") {
    // Query 0 sees key 0: 2. Query 1 sees keys 0, 1: (2 + 4)/2 = 3. Key 2 is seen by nobody.
    // (Bottom-right alignment would give (2 + 4)/2 = 3 and (2 + 4 + 100)/3 instead.)
    const std::vector<double> q = {0, 0};
    std::vector<double> o(2, -999.0);
    ref::attention(make_shape(1, 1, 2, 3, 1, true), q.data(), k.data(), v.data(), o.data());
    check_all_close(o, {2, 3}, 1e-15);
  }
  SECTION("Nq = 4 > Nk = 3: rows past the last key see every key") {
    const std::vector<double> q = {0, 0, 0, 0};
    std::vector<double> o(4, -999.0);
    ref::attention(make_shape(1, 1, 4, 3, 1, true), q.data(), k.data(), v.data(), o.data());
    check_all_close(o, {2, 3, 106.0 / 3, 106.0 / 3}, 1e-13);
  }
}

TEST_CASE("reference: causal attention's first row equals V[0]", "[reference]") {
  const ref::AttentionShape s = make_shape(2, 3, 5, 5, 4, true);
  const size_t n = size_t(s.B) * s.H * s.Nq * s.d;
  const auto q = random_vector(n, 710), k = random_vector(n, 711), v = random_vector(n, 712);
  std::vector<double> o(n, -999.0);
  ref::attention(s, q.data(), k.data(), v.data(), o.data());
  for (int bh = 0; bh < s.B * s.H; ++bh) {
    CAPTURE(bh);
    const size_t row0 = size_t(bh) * s.Nq * s.d;  // o[b,h,0,:] and v[b,h,0,:] (Nq == Nk)
    check_all_close(std::vector<double>(o.begin() + row0, o.begin() + row0 + s.d),
                    std::vector<double>(v.begin() + row0, v.begin() + row0 + s.d), 1e-15);
  }
}

TEST_CASE("reference: attention equals softmax(Q Kt * scale) V from gemm and softmax_rows", "[reference]") {
  struct Case { int B, H, Nq, Nk, d; bool causal; };
  const Case cases[] = {
      {2, 3, 7, 7, 8, false},  // square
      {1, 2, 3, 11, 5, false}, // Nq < Nk
      {2, 1, 9, 4, 3, false},  // Nq > Nk
      {2, 2, 13, 13, 4, true}, // causal, square
      {1, 3, 5, 9, 6, true},   // causal, Nq < Nk
      {1, 1, 8, 3, 2, true},   // causal, Nq > Nk
      {1, 1, 1, 1, 1, true},   // single element
  };
  uint64_t seed = 720;
  for (const Case& c : cases) {
    CAPTURE(c.B, c.H, c.Nq, c.Nk, c.d, c.causal);
    const ref::AttentionShape s = make_shape(c.B, c.H, c.Nq, c.Nk, c.d, c.causal);
    const auto q = random_vector(size_t(c.B) * c.H * c.Nq * c.d, ++seed, -2.0, 2.0);
    const auto k = random_vector(size_t(c.B) * c.H * c.Nk * c.d, ++seed, -2.0, 2.0);
    const auto v = random_vector(size_t(c.B) * c.H * c.Nk * c.d, ++seed);
    std::vector<double> o(q.size(), -999.0);
    ref::attention(s, q.data(), k.data(), v.data(), o.data());
    check_all_close(o, attention_by_gemm(s, q, k, v), 1e-14);
  }
}

TEST_CASE("reference: attention with huge logits stays a convex combination of V", "[reference]") {
  // |q·k·scale| reaches ~1e4: naive exponentials would overflow.
  const ref::AttentionShape s = make_shape(1, 2, 6, 10, 4, false);
  const auto q = random_vector(size_t(2) * 6 * 4, 730, -100.0, 100.0);
  const auto k = random_vector(size_t(2) * 10 * 4, 731, -100.0, 100.0);
  const auto v = random_vector(size_t(2) * 10 * 4, 732);
  std::vector<double> o(q.size(), -999.0);
  ref::attention(s, q.data(), k.data(), v.data(), o.data());
  const double v_min = *std::min_element(v.begin(), v.end()), v_max = *std::max_element(v.begin(), v.end());
  bool finite_and_inside = true;
  for (double x : o) finite_and_inside = finite_and_inside && std::isfinite(x) && x >= v_min && x <= v_max;
  CHECK(finite_and_inside);
  check_all_close(o, attention_by_gemm(s, q, k, v), 1e-12);
}

TEST_CASE("reference: attention and softmax reject invalid arguments", "[reference]") {
  std::vector<double> b(64, 0.0);
  double* p = b.data();
  ref::AttentionShape unscaled;  // scale left as NaN
  CHECK(throws_invalid_argument([&] { ref::attention(unscaled, p, p, p, p); }, "scale"));
  ref::AttentionShape s = make_shape(1, 1, 2, 0, 2, false);
  CHECK(throws_invalid_argument([&] { ref::attention(s, p, p, p, p); }, "Nk must be positive"));
  s = make_shape(1, 1, 2, 2, 2, false);
  CHECK(throws_invalid_argument([&] { ref::attention(s, p, nullptr, p, p); }, "'k'"));
  CHECK(throws_invalid_argument([&] { ref::softmax_rows(2, 0, p, p); }, "cols"));
  CHECK(throws_invalid_argument([&] { ref::softmax_rows(-1, 2, p, p); }, "rows"));
}
