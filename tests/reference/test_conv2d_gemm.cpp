// tests/reference/test_conv2d_gemm.cpp — self-tests of ref::conv2d and
// ref::gemm: hand-computed cases, and identities against independent
// formulations (im2col + GEMM, per-group slices, per-channel 2-D convolution).
#include <cstdint>
#include <vector>

#include "reference/conv2d.hpp"
#include "reference/gemm.hpp"
#include "tests/catch_compat.hpp"
#include "tests/reference/ref_test_util.hpp"

using convlab::ref::ConvShape;
using convlab::ref_test::check_all_close;
using convlab::ref_test::random_vector;
using convlab::ref_test::throws_invalid_argument;

namespace {

ConvShape make_conv(int N, int H, int W, int C, int K, int R, int S, int stride, int pad, int groups) {
  ConvShape p;
  p.N = N, p.H = H, p.W = W, p.C = C, p.K = K, p.R = R, p.S = S;
  p.stride = stride, p.pad = pad, p.groups = groups;
  return p;
}

std::vector<double> run_conv(const ConvShape& p, const std::vector<double>& x, const std::vector<double>& w) {
  std::vector<double> y(size_t(p.output_elems()), -999.0);
  convlab::ref::conv2d(p, x.data(), w.data(), y.data());
  return y;
}

// Dense convolution written as an explicit im2col matrix times the filter
// matrix: rows are output pixels (n, p, q), columns are (r, s, c) taps.
std::vector<double> dense_conv_by_im2col(const ConvShape& p, const std::vector<double>& x,
                                         const std::vector<double>& w) {
  const int P = p.P(), Q = p.Q(), taps = p.R * p.S * p.C;
  const int rows = p.N * P * Q;
  std::vector<double> columns(size_t(rows) * taps, 0.0);
  for (int n = 0; n < p.N; ++n)
    for (int oh = 0; oh < P; ++oh)
      for (int ow = 0; ow < Q; ++ow)
        for (int r = 0; r < p.R; ++r)
          for (int s = 0; s < p.S; ++s)
            for (int c = 0; c < p.C; ++c) {
              const int ih = oh * p.stride - p.pad + r, iw = ow * p.stride - p.pad + s;
              if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
              const int row = (n * P + oh) * Q + ow, col = (r * p.S + s) * p.C + c;
              columns[size_t(row) * taps + col] = x[((size_t(n) * p.H + ih) * p.W + iw) * p.C + c];
            }
  // KRSC weights are [K, taps]; GEMM needs them as [taps, K].
  std::vector<double> filters(size_t(taps) * p.K);
  for (int k = 0; k < p.K; ++k)
    for (int t = 0; t < taps; ++t) filters[size_t(t) * p.K + k] = w[size_t(k) * taps + t];
  std::vector<double> y(size_t(rows) * p.K);
  convlab::ref::gemm(rows, p.K, taps, columns.data(), filters.data(), y.data());
  return y;
}

// One channel, one filter, plain 2-D cross-correlation on row-major planes.
std::vector<double> plane_conv(int H, int W, int R, int S, int stride, int pad, const double* plane,
                               const double* filter) {
  const int P = (H + 2 * pad - R) / stride + 1, Q = (W + 2 * pad - S) / stride + 1;
  std::vector<double> out(size_t(P) * Q, 0.0);
  for (int oh = 0; oh < P; ++oh)
    for (int ow = 0; ow < Q; ++ow)
      for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {
          const int ih = oh * stride - pad + r, iw = ow * stride - pad + s;
          if (ih >= 0 && ih < H && iw >= 0 && iw < W) out[size_t(oh) * Q + ow] += filter[r * S + s] * plane[ih * W + iw];
        }
  return out;
}

}  // namespace

TEST_CASE("reference: gemm hand-computed 2x3 times 3x2", "[reference]") {
  // a = [1 2 3; 4 5 6], b = [7 8; 9 10; 11 12]
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  std::vector<double> c(4, -999.0);
  convlab::ref::gemm(2, 2, 3, a.data(), b.data(), c.data());
  // c00 = 1·7 + 2·9 + 3·11 = 58     c01 = 1·8 + 2·10 + 3·12 = 64
  // c10 = 4·7 + 5·9 + 6·11 = 139    c11 = 4·8 + 5·10 + 6·12 = 154
  check_all_close(c, {58, 64, 139, 154}, 0.0);
}

TEST_CASE("reference: conv2d hand-computed 3x3 input, 2x2 kernel", "[reference]") {
  // One image, one channel, one filter:
  //   x = [1 2 3; 4 5 6; 7 8 9]     w = [1 2; 3 4]
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 2, 3, 4};

  SECTION("stride 1, no padding: 2x2 output") {
    // y00 = 1·1 + 2·2 + 3·4 + 4·5 = 37    y01 = 1·2 + 2·3 + 3·5 + 4·6 = 47
    // y10 = 1·4 + 2·5 + 3·7 + 4·8 = 67    y11 = 1·5 + 2·6 + 3·8 + 4·9 = 77
    check_all_close(run_conv(make_conv(1, 3, 3, 1, 1, 2, 2, 1, 0, 1), x, w), {37, 47, 67, 77}, 0.0);
  }
  SECTION("stride 2, padding 1: P = (3 + 2 − 2)/2 + 1 = 2") {
    // Output (p, q) reads input rows 2p−1 … 2p, columns 2q−1 … 2q; row/col −1 is padding.
    // y00: only x[0][0] under w[1][1]:              4·1 = 4
    // y01: x[0][1], x[0][2] under w[1][0], w[1][1]:  3·2 + 4·3 = 18
    // y10: x[1][0], x[2][0] under w[0][1], w[1][1]:  2·4 + 4·7 = 36
    // y11: x[1..2][1..2] under all of w:             1·5 + 2·6 + 3·8 + 4·9 = 77
    check_all_close(run_conv(make_conv(1, 3, 3, 1, 1, 2, 2, 2, 1, 1), x, w), {4, 18, 36, 77}, 0.0);
  }
  SECTION("stride 2, no padding: a single output, the last row and column unread") {
    // P = (3 − 2)/2 + 1 = 1: y00 = 37 as above.
    check_all_close(run_conv(make_conv(1, 3, 3, 1, 1, 2, 2, 2, 0, 1), x, w), {37}, 0.0);
  }
}

TEST_CASE("reference: conv2d hand-computed multi-channel and grouped cases", "[reference]") {
  // x: one 2x2 image, two channels. Channel 0 = [1 2; 3 4], channel 1 = [5 6; 7 8],
  // interleaved NHWC: (h0,w0) = (1,5), (h0,w1) = (2,6), (h1,w0) = (3,7), (h1,w1) = (4,8).
  const std::vector<double> x = {1, 5, 2, 6, 3, 7, 4, 8};

  SECTION("dense: two 2x2 filters over both channels") {
    // KRSC [2, 2, 2, 2]. Filter 0 = all ones on channel 0, zeros on channel 1;
    // filter 1 = 1 at (r0,s0,c0) and 1 at (r1,s1,c1).
    const std::vector<double> w = {1, 0, 1, 0, 1, 0, 1, 0,  //
                                   1, 0, 0, 0, 0, 0, 0, 1};
    // y0 = 1 + 2 + 3 + 4 = 10      y1 = x(0,0,c0) + x(1,1,c1) = 1 + 8 = 9
    check_all_close(run_conv(make_conv(1, 2, 2, 2, 2, 2, 2, 1, 0, 1), x, w), {10, 9}, 0.0);
  }
  SECTION("grouped, groups = 2: filter k sees only channel k") {
    // KRSC [2, 2, 2, 1]: filter 0 = [1 2; 3 4] on channel 0, filter 1 = [1 0; 0 −1] on channel 1.
    const std::vector<double> w = {1, 2, 3, 4, 1, 0, 0, -1};
    // y0 = 1·1 + 2·2 + 3·3 + 4·4 = 30      y1 = 1·5 − 1·8 = −3
    check_all_close(run_conv(make_conv(1, 2, 2, 2, 2, 2, 2, 1, 0, 2), x, w), {30, -3}, 0.0);
  }
}

TEST_CASE("reference: 1x1 conv2d equals GEMM", "[reference]") {
  // A 1x1 conv is X[N·H·W, C] · Wᵀ[C, K]; with stride 2 it is the same GEMM on
  // the pixels (2p, 2q) only.
  const int N = 2, H = 5, W = 3, C = 7, K = 6;
  const auto x = random_vector(size_t(N) * H * W * C, 101);
  const auto w = random_vector(size_t(K) * C, 102);
  std::vector<double> w_t(size_t(C) * K);
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < C; ++c) w_t[size_t(c) * K + k] = w[size_t(k) * C + c];

  SECTION("stride 1") {
    std::vector<double> expected(size_t(N) * H * W * K);
    convlab::ref::gemm(N * H * W, K, C, x.data(), w_t.data(), expected.data());
    check_all_close(run_conv(make_conv(N, H, W, C, K, 1, 1, 1, 0, 1), x, w), expected, 1e-13);
  }
  SECTION("stride 2 samples every other pixel") {
    const int P = 3, Q = 2;  // (5 − 1)/2 + 1, (3 − 1)/2 + 1
    std::vector<double> sampled;
    for (int n = 0; n < N; ++n)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q)
          for (int c = 0; c < C; ++c) sampled.push_back(x[((size_t(n) * H + 2 * p) * W + 2 * q) * C + c]);
    std::vector<double> expected(size_t(N) * P * Q * K);
    convlab::ref::gemm(N * P * Q, K, C, sampled.data(), w_t.data(), expected.data());
    check_all_close(run_conv(make_conv(N, H, W, C, K, 1, 1, 2, 0, 1), x, w), expected, 1e-13);
  }
}

TEST_CASE("reference: dense conv2d (groups = 1) equals im2col + GEMM", "[reference]") {
  struct Case { int N, H, W, C, K, R, S, stride, pad; };
  const Case cases[] = {
      {1, 5, 5, 3, 4, 3, 3, 1, 1},  // same padding
      {2, 7, 6, 5, 3, 3, 3, 2, 1},  // stride 2, odd sizes
      {1, 4, 9, 2, 5, 2, 3, 1, 0},  // R != S, no padding
      {3, 6, 5, 1, 1, 5, 5, 1, 2},  // single channel, wide pad
      {1, 8, 8, 4, 2, 3, 1, 3, 0},  // stride 3
  };
  uint64_t seed = 200;
  for (const Case& c : cases) {
    const ConvShape p = make_conv(c.N, c.H, c.W, c.C, c.K, c.R, c.S, c.stride, c.pad, 1);
    CAPTURE(c.N, c.H, c.W, c.C, c.K, c.R, c.S, c.stride, c.pad);
    const auto x = random_vector(size_t(p.input_elems()), ++seed);
    const auto w = random_vector(size_t(p.weight_elems()), ++seed);
    check_all_close(run_conv(p, x, w), dense_conv_by_im2col(p, x, w), 1e-12);
  }
}

TEST_CASE("reference: grouped conv2d equals G dense convs on channel slices", "[reference]") {
  struct Case { int N, H, W, C, K, R, S, stride, pad, groups; };
  const Case cases[] = {
      {1, 5, 4, 8, 6, 3, 3, 1, 1, 2},    // T = 4 inputs, 3 outputs per group
      {2, 7, 7, 12, 12, 3, 3, 2, 1, 3},  // stride 2
      {1, 6, 5, 16, 8, 1, 1, 1, 0, 4},   // grouped 1x1
      {1, 4, 4, 6, 12, 2, 3, 1, 1, 6},   // T = 1, two outputs per group
  };
  uint64_t seed = 300;
  for (const Case& c : cases) {
    const ConvShape p = make_conv(c.N, c.H, c.W, c.C, c.K, c.R, c.S, c.stride, c.pad, c.groups);
    CAPTURE(c.N, c.H, c.W, c.C, c.K, c.R, c.S, c.stride, c.pad, c.groups);
    const auto x = random_vector(size_t(p.input_elems()), ++seed);
    const auto w = random_vector(size_t(p.weight_elems()), ++seed);
    const int T = p.T(), Kg = p.K_per_group(), P = p.P(), Q = p.Q();
    const size_t pixels_in = size_t(p.N) * p.H * p.W, pixels_out = size_t(p.N) * P * Q;

    // Stitch the answer together from one dense conv per group.
    std::vector<double> expected(pixels_out * p.K, -999.0);
    for (int g = 0; g < p.groups; ++g) {
      std::vector<double> x_slice(pixels_in * T);  // channels g·T … g·T + T − 1
      for (size_t px = 0; px < pixels_in; ++px)
        for (int t = 0; t < T; ++t) x_slice[px * T + t] = x[px * p.C + g * T + t];
      // Filters g·Kg … g·Kg + Kg − 1 are contiguous in KRSC.
      const std::vector<double> w_slice(w.begin() + size_t(g) * Kg * p.R * p.S * T,
                                        w.begin() + size_t(g + 1) * Kg * p.R * p.S * T);
      const ConvShape dense = make_conv(p.N, p.H, p.W, T, Kg, p.R, p.S, p.stride, p.pad, 1);
      const auto y_slice = run_conv(dense, x_slice, w_slice);
      for (size_t px = 0; px < pixels_out; ++px)
        for (int k = 0; k < Kg; ++k) expected[px * p.K + g * Kg + k] = y_slice[px * Kg + k];
    }
    check_all_close(run_conv(p, x, w), expected, 1e-12);
  }
}

TEST_CASE("reference: depthwise conv2d equals a 2-D convolution per channel", "[reference]") {
  struct Case { int N, H, W, C, R, S, stride, pad; };
  const Case cases[] = {{2, 6, 5, 4, 3, 3, 1, 1}, {1, 7, 8, 3, 3, 3, 2, 1}, {1, 5, 5, 2, 5, 5, 1, 2}};
  uint64_t seed = 400;
  for (const Case& c : cases) {
    const ConvShape p = make_conv(c.N, c.H, c.W, c.C, c.C, c.R, c.S, c.stride, c.pad, c.C);
    CAPTURE(c.N, c.H, c.W, c.C, c.R, c.S, c.stride, c.pad);
    const auto x = random_vector(size_t(p.input_elems()), ++seed);
    const auto w = random_vector(size_t(p.weight_elems()), ++seed);  // [C, R, S, 1]
    const int P = p.P(), Q = p.Q();
    std::vector<double> expected(size_t(p.N) * P * Q * p.C);
    for (int n = 0; n < p.N; ++n)
      for (int ch = 0; ch < p.C; ++ch) {
        std::vector<double> plane(size_t(p.H) * p.W);
        for (int i = 0; i < p.H * p.W; ++i) plane[i] = x[(size_t(n) * p.H * p.W + i) * p.C + ch];
        const auto out = plane_conv(p.H, p.W, p.R, p.S, p.stride, p.pad, plane.data(), &w[size_t(ch) * p.R * p.S]);
        for (int i = 0; i < P * Q; ++i) expected[(size_t(n) * P * Q + i) * p.C + ch] = out[i];
      }
    check_all_close(run_conv(p, x, w), expected, 1e-13);
  }
}

TEST_CASE("reference: conv2d and gemm reject invalid arguments", "[reference]") {
  std::vector<double> buffer(4096, 0.0);
  double* b = buffer.data();
  auto conv = [b](const ConvShape& p) { return [p, b] { convlab::ref::conv2d(p, b, b, b); }; };
  CHECK(throws_invalid_argument(conv(make_conv(1, 4, 4, 6, 4, 3, 3, 1, 1, 4)), "groups must divide"));
  CHECK(throws_invalid_argument(conv(make_conv(1, 4, 4, 8, 6, 3, 3, 1, 1, 4)), "groups must divide"));
  CHECK(throws_invalid_argument(conv(make_conv(1, 2, 2, 1, 1, 5, 5, 1, 1, 1)), "larger than the padded input"));
  CHECK(throws_invalid_argument(conv(make_conv(1, 4, 4, 1, 1, 3, 3, 0, 1, 1)), "stride"));
  CHECK(throws_invalid_argument(conv(make_conv(0, 4, 4, 1, 1, 3, 3, 1, 1, 1)), "positive"));
  CHECK(throws_invalid_argument(
      [b] { convlab::ref::conv2d(make_conv(1, 4, 4, 1, 1, 3, 3, 1, 1, 1), nullptr, b, b); }, "'x'"));
  CHECK(throws_invalid_argument([b] { convlab::ref::gemm(0, 2, 2, b, b, b); }, "M must be positive"));
  CHECK(throws_invalid_argument([b] { convlab::ref::gemm(2, 2, 2, b, nullptr, b); }, "'b'"));
  // A valid problem goes through.
  CHECK(!throws_invalid_argument(conv(make_conv(1, 4, 4, 8, 8, 3, 3, 1, 1, 8))));
}
