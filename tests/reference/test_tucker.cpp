// tests/reference/test_tucker.cpp — self-tests of the truncated HOSVD of a
// conv kernel and of the three-stage Tucker convolution: a hand case, exact
// reconstruction at full rank, exact recovery of a kernel that is low-rank by
// construction, and Tucker conv against the dense conv.
#include <algorithm>
#include <cmath>
#include <vector>

#include "reference/conv2d.hpp"
#include "reference/tucker.hpp"
#include "tests/catch_compat.hpp"
#include "tests/reference/ref_test_util.hpp"

namespace ref = convlab::ref;
using convlab::ref::ConvShape;
using convlab::ref_test::check_all_close;
using convlab::ref_test::random_vector;
using convlab::ref_test::throws_invalid_argument;

namespace {

ConvShape make_conv(int N, int H, int W, int C, int K, int R, int S, int stride, int pad) {
  ConvShape p;
  p.N = N, p.H = H, p.W = W, p.C = C, p.K = K, p.R = R, p.S = S, p.stride = stride, p.pad = pad;
  return p;
}

struct Tucker {
  std::vector<double> u_in, core, u_out;
};

Tucker hosvd(const ConvShape& p, int rank_c, int rank_k, const std::vector<double>& w) {
  Tucker t{std::vector<double>(size_t(p.C) * rank_c, -999.0),
           std::vector<double>(size_t(rank_k) * p.R * p.S * rank_c, -999.0),
           std::vector<double>(size_t(p.K) * rank_k, -999.0)};
  ref::tucker_hosvd(p, rank_c, rank_k, w.data(), t.u_in.data(), t.core.data(), t.u_out.data());
  return t;
}

std::vector<double> reconstruct(const ConvShape& p, int rank_c, int rank_k, const Tucker& t) {
  std::vector<double> w(size_t(p.weight_elems()), -999.0);
  ref::tucker_reconstruct(p, rank_c, rank_k, t.u_in.data(), t.core.data(), t.u_out.data(), w.data());
  return w;
}

// Max |FᵀF − I| of a [rows, cols] row-major factor: how far its columns are from orthonormal.
double orthonormality_error(const std::vector<double>& factor, int rows, int cols) {
  double worst = 0.0;
  for (int a = 0; a < cols; ++a)
    for (int b = 0; b < cols; ++b) {
      double dot = 0.0;
      for (int i = 0; i < rows; ++i) dot += factor[size_t(i) * cols + a] * factor[size_t(i) * cols + b];
      worst = std::max(worst, std::abs(dot - (a == b ? 1.0 : 0.0)));
    }
  return worst;
}

double frobenius_distance(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(sum);
}

}  // namespace

TEST_CASE("reference: tucker_hosvd hand-computed 1x1 kernel, K = 1, C = 2", "[reference]") {
  // w = [3, 4] (one filter over two channels).
  // Mode-K unfolding [1, 2]: its only left singular vector is [1]  ->  u_out = [1].
  // Mode-C unfolding [2, 1] = [3; 4] = 5·[0.6; 0.8]: first left singular vector
  // [0.6, 0.8]; the second is orthogonal, ±[0.8, −0.6], signed so that its
  // largest entry is positive: [0.8, −0.6]. So u_in = [0.6 0.8; 0.8 −0.6].
  // core[0,0,0,i] = Σ_c w[c]·u_in[c, i] = [3·0.6 + 4·0.8, 3·0.8 − 4·0.6] = [5, 0].
  const ConvShape p = make_conv(1, 1, 1, 2, 1, 1, 1, 1, 0);
  const std::vector<double> w = {3, 4};
  const Tucker t = hosvd(p, 2, 1, w);
  check_all_close(t.u_out, {1}, 1e-15);
  check_all_close(t.u_in, {0.6, 0.8, 0.8, -0.6}, 1e-14);
  check_all_close(t.core, {5, 0}, 1e-14);
  SECTION("rank_c = 1 keeps only the leading direction, which here loses nothing") {
    const Tucker t1 = hosvd(p, 1, 1, w);
    check_all_close(t1.u_in, {0.6, 0.8}, 1e-14);
    check_all_close(t1.core, {5}, 1e-14);
    check_all_close(reconstruct(p, 1, 1, t1), w, 1e-14);
  }
  SECTION("tucker_conv2d on one pixel x = [1, 1] gives 3 + 4 = 7") {
    const std::vector<double> x = {1, 1};
    std::vector<double> y(1, -999.0);
    ref::tucker_conv2d(p, 2, 1, x.data(), t.u_in.data(), t.core.data(), t.u_out.data(), y.data());
    check_all_close(y, {7}, 1e-14);
  }
}

TEST_CASE("reference: HOSVD at full ranks reconstructs the kernel", "[reference]") {
  struct Case { int K, R, S, C; };
  const Case cases[] = {
      {4, 3, 3, 5},   // typical 3x3
      {12, 1, 1, 3},  // K > R·S·C: u_out needs the full U
      {1, 1, 1, 4},   // C > K·R·S: u_in needs the full U
      {6, 3, 1, 6},   // R != S
  };
  uint64_t seed = 1500;
  for (const Case& c : cases) {
    CAPTURE(c.K, c.R, c.S, c.C);
    const ConvShape p = make_conv(1, 4, 4, c.C, c.K, c.R, c.S, 1, 1);
    const auto w = random_vector(size_t(p.weight_elems()), ++seed);
    const Tucker t = hosvd(p, c.C, c.K, w);
    CHECK(orthonormality_error(t.u_in, c.C, c.C) <= 1e-13);
    CHECK(orthonormality_error(t.u_out, c.K, c.K) <= 1e-13);
    check_all_close(reconstruct(p, c.C, c.K, t), w, 1e-13);
  }
}

TEST_CASE("reference: truncated HOSVD recovers a kernel of known multilinear rank", "[reference]") {
  // Build w from random factors with ranks (2, 3): its mode-C and mode-K
  // unfoldings have ranks <= 2 and 3, so truncating there loses nothing,
  // but only if the right singular vectors are kept.
  const ConvShape p = make_conv(1, 5, 5, 6, 8, 3, 3, 1, 1);
  const int rank_c = 2, rank_k = 3;
  const Tucker source{random_vector(size_t(p.C) * rank_c, 1600), random_vector(size_t(rank_k) * 9 * rank_c, 1601),
                      random_vector(size_t(p.K) * rank_k, 1602)};
  const auto w = reconstruct(p, rank_c, rank_k, source);
  const Tucker t = hosvd(p, rank_c, rank_k, w);
  CHECK(orthonormality_error(t.u_in, p.C, rank_c) <= 1e-13);
  CHECK(orthonormality_error(t.u_out, p.K, rank_k) <= 1e-13);
  check_all_close(reconstruct(p, rank_c, rank_k, t), w, 1e-12);
  SECTION("one rank lower loses something") {
    const Tucker lower = hosvd(p, rank_c - 1, rank_k, w);
    CHECK(frobenius_distance(reconstruct(p, rank_c - 1, rank_k, lower), w) > 1e-3);
  }
}

TEST_CASE("reference: HOSVD truncation error shrinks as the ranks grow", "[reference]") {
  // Nested subspaces: a larger rank projects onto a superset, so the error
  // ‖w − ŵ‖ can only fall, and reaches zero at full rank.
  const ConvShape p = make_conv(1, 4, 4, 6, 6, 3, 3, 1, 1);
  const auto w = random_vector(size_t(p.weight_elems()), 1700);
  double previous = 1e300;
  for (int rank = 1; rank <= 6; ++rank) {
    CAPTURE(rank);
    const double error = frobenius_distance(reconstruct(p, rank, rank, hosvd(p, rank, rank, w)), w);
    CHECK(error <= previous + 1e-12);
    if (rank < 6) CHECK(error > 1e-6);
    else CHECK(error <= 1e-12);
    previous = error;
  }
}

TEST_CASE("reference: tucker_conv2d equals the dense conv with the reconstructed kernel", "[reference]") {
  struct Case { int N, H, W, C, K, R, S, stride, pad, rank_c, rank_k; };
  const Case cases[] = {
      {2, 6, 5, 5, 4, 3, 3, 1, 1, 5, 4},  // full ranks
      {1, 7, 7, 6, 8, 3, 3, 2, 1, 6, 8},  // full ranks, stride 2
      {1, 6, 6, 8, 6, 3, 3, 1, 1, 3, 2},  // truncated
      {2, 5, 4, 4, 4, 1, 3, 1, 0, 2, 3},  // truncated, 1x3 kernel, no padding
  };
  uint64_t seed = 1800;
  for (const Case& c : cases) {
    CAPTURE(c.N, c.H, c.W, c.C, c.K, c.R, c.S, c.stride, c.pad, c.rank_c, c.rank_k);
    const ConvShape p = make_conv(c.N, c.H, c.W, c.C, c.K, c.R, c.S, c.stride, c.pad);
    const auto x = random_vector(size_t(p.input_elems()), ++seed);
    const auto w = random_vector(size_t(p.weight_elems()), ++seed);
    const Tucker t = hosvd(p, c.rank_c, c.rank_k, w);
    std::vector<double> y(size_t(p.output_elems()), -999.0), expected(y.size());
    ref::tucker_conv2d(p, c.rank_c, c.rank_k, x.data(), t.u_in.data(), t.core.data(), t.u_out.data(), y.data());
    ref::conv2d(p, x.data(), reconstruct(p, c.rank_c, c.rank_k, t).data(), expected.data());
    check_all_close(y, expected, 1e-12);
    if (c.rank_c == c.C && c.rank_k == c.K) {  // full rank: the original kernel's conv
      ref::conv2d(p, x.data(), w.data(), expected.data());
      check_all_close(y, expected, 1e-12);
    }
  }
}

TEST_CASE("reference: tucker functions reject invalid arguments", "[reference]") {
  std::vector<double> b(4096, 0.0);
  double* q = b.data();
  ConvShape p = make_conv(1, 4, 4, 4, 4, 3, 3, 1, 1);
  CHECK(throws_invalid_argument([&] { ref::tucker_hosvd(p, 0, 2, q, q, q, q); }, "rank_c"));
  CHECK(throws_invalid_argument([&] { ref::tucker_hosvd(p, 2, 5, q, q, q, q); }, "rank_k"));
  CHECK(throws_invalid_argument([&] { ref::tucker_reconstruct(p, 2, 2, q, nullptr, q, q); }, "'core'"));
  p.groups = 2;
  CHECK(throws_invalid_argument([&] { ref::tucker_conv2d(p, 2, 2, q, q, q, q, q); }, "groups == 1"));
  p.groups = 1, p.pad = 0, p.H = 2;  // 3x3 filter on an unpadded 2-row image
  CHECK(throws_invalid_argument([&] { ref::tucker_conv2d(p, 2, 2, q, q, q, q, q); }, "larger than"));
}
