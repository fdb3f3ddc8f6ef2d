// tests/reference/test_blocks.cpp — self-tests of squeeze-excitation and the
// ConvFirst and MBConv blocks: hand cases, and each block rebuilt one layer at
// a time from the individual references (conv2d, gemm, blurpool, ffn,
// global_avgpool, activations). The blocks are written with their own loops,
// so these are two independent computations.
#include <cmath>
#include <vector>

#include "reference/blocks.hpp"
#include "reference/conv2d.hpp"
#include "reference/gemm.hpp"
#include "reference/elementwise.hpp"
#include "reference/ffn.hpp"
#include "reference/pooling.hpp"
#include "reference/squeeze_excitation.hpp"
#include "tests/catch_compat.hpp"
#include "tests/reference/ref_test_util.hpp"

namespace ref = convlab::ref;
using convlab::ref::ConvShape;
using convlab::ref::Activation;
using convlab::ref_test::check_all_close;
using convlab::ref_test::random_vector;
using convlab::ref_test::throws_invalid_argument;

namespace {

// y[rows, out] = x[rows, in]·w[in, out] (+ bias), by ref::gemm.
std::vector<double> gemm_bias(int rows, int in, int out, const std::vector<double>& x, const std::vector<double>& w,
                              const double* bias) {
  std::vector<double> y(size_t(rows) * out);
  ref::gemm(rows, out, in, x.data(), w.data(), y.data());
  if (bias) ref::channel_scale_bias(rows, out, y.data(), nullptr, bias, y.data());
  return y;
}

std::vector<double> conv_bias(const ConvShape& p, const std::vector<double>& x, const std::vector<double>& w,
                              const double* bias) {
  std::vector<double> y(size_t(p.output_elems()));
  ref::conv2d(p, x.data(), w.data(), y.data());
  if (bias) ref::channel_scale_bias(int64_t(p.N) * p.P() * p.Q(), p.K, y.data(), nullptr, bias, y.data());
  return y;
}

ConvShape conv3x3(int N, int H, int W, int C, int stride, int groups, int size = 3) {
  ConvShape p;
  p.N = N, p.H = H, p.W = W, p.C = C, p.K = C, p.R = size, p.S = size, p.stride = stride, p.pad = size / 2;
  p.groups = groups;
  return p;
}

// SE rebuilt from global_avgpool, gemm, activations and a per-image channel scale.
std::vector<double> se_by_layers(const ref::SqueezeExcitationShape& s, const std::vector<double>& x,
                                 const std::vector<double>& w1, const double* b1, const std::vector<double>& w2,
                                 const double* b2) {
  const int C = s.channels, Cr = s.reduced_channels;
  std::vector<double> mean(size_t(s.N) * C);
  ref::global_avgpool(s.N, s.H, s.W, C, x.data(), mean.data());
  auto reduced = gemm_bias(s.N, C, Cr, mean, w1, b1);
  ref::activate(s.activation, int64_t(reduced.size()), reduced.data(), reduced.data());
  auto gate = gemm_bias(s.N, Cr, C, reduced, w2, b2);
  ref::sigmoid(int64_t(gate.size()), gate.data(), gate.data());
  std::vector<double> y(x.size());
  const int64_t pixels = int64_t(s.H) * s.W;
  for (int n = 0; n < s.N; ++n)
    ref::channel_scale_bias(pixels, C, &x[size_t(n) * pixels * C], &gate[size_t(n) * C], nullptr,
                            &y[size_t(n) * pixels * C]);
  return y;
}

}  // namespace

// ---- squeeze-excitation ----------------------------------------------------------

TEST_CASE("reference: squeeze_excitation hand-computed", "[reference]") {
  // One image of two pixels, two channels: x = [1 2 | 3 4] -> channel means [2, 3].
  // FC1 (2 -> 1): w = [1; −1], b = 2:  relu(2·1 + 3·(−1) + 2) = relu(1) = 1.
  // FC2 (1 -> 2): w = [0, ln 3], b = [0, 0]:  gates sigmoid([0, ln 3]) = [1/2, 3/4].
  // y = [1·1/2, 2·3/4 | 3·1/2, 4·3/4] = [0.5, 1.5 | 1.5, 3].
  const std::vector<double> x = {1, 2, 3, 4}, w1 = {1, -1}, b1 = {2}, w2 = {0, std::log(3.0)}, b2 = {0, 0};
  ref::SqueezeExcitationShape s;
  s.N = 1, s.H = 1, s.W = 2, s.channels = 2, s.reduced_channels = 1, s.activation = Activation::relu;
  const ref::SqueezeExcitationWeights wt{w1.data(), b1.data(), w2.data(), b2.data()};
  std::vector<double> y(4, -999.0);
  ref::squeeze_excitation(s, wt, x.data(), y.data());
  check_all_close(y, {0.5, 1.5, 1.5, 3}, 1e-15);
}

TEST_CASE("reference: squeeze_excitation equals pool, FC, act, FC, sigmoid, scale", "[reference]") {
  for (Activation act : {Activation::relu, Activation::silu}) {
    CAPTURE(ref::activation_name(act));
    ref::SqueezeExcitationShape s;
    s.N = 3, s.H = 5, s.W = 4, s.channels = 12, s.reduced_channels = 3, s.activation = act;
    const auto x = random_vector(size_t(s.N) * s.H * s.W * s.channels, 900);
    const auto w1 = random_vector(size_t(12) * 3, 901), b1 = random_vector(3, 902);
    const auto w2 = random_vector(size_t(3) * 12, 903), b2 = random_vector(12, 904);
    const auto expected = se_by_layers(s, x, w1, b1.data(), w2, b2.data());
    std::vector<double> y = x;  // in place
    ref::squeeze_excitation(s, {w1.data(), b1.data(), w2.data(), b2.data()}, y.data(), y.data());
    check_all_close(y, expected, 1e-14);
  }
}

// ---- ConvFirst -------------------------------------------------------------------

namespace {

struct ConvFirstData {
  std::vector<double> x, conv_w, conv_b, expand_w, expand_b, project_w, project_b, shortcut_w, shortcut_b;
  ref::ConvFirstWeights weights(bool projection) const {
    ref::ConvFirstWeights w;
    w.conv_w = conv_w.data(), w.conv_b = conv_b.data();
    w.expand_w = expand_w.data(), w.expand_b = expand_b.data();
    w.project_w = project_w.data(), w.project_b = project_b.data();
    if (projection) {
      w.shortcut_w = shortcut_w.data();
      w.shortcut_b = shortcut_b.data();
    }
    return w;
  }
};

ConvFirstData random_convfirst(const ref::ConvFirstShape& s, uint64_t seed) {
  ConvFirstData d;
  const int C = s.in_channels, Hd = s.hidden_channels, Co = s.out_channels;
  d.x = random_vector(size_t(s.N) * s.H * s.W * C, seed + 1);
  d.conv_w = random_vector(size_t(C) * 9 * s.group_width, seed + 2, -0.5, 0.5);
  d.conv_b = random_vector(C, seed + 3);
  d.expand_w = random_vector(size_t(C) * Hd, seed + 4, -0.5, 0.5);
  d.expand_b = random_vector(Hd, seed + 5);
  d.project_w = random_vector(size_t(Hd) * Co, seed + 6, -0.5, 0.5);
  d.project_b = random_vector(Co, seed + 7);
  d.shortcut_w = random_vector(size_t(C) * Co, seed + 8);
  d.shortcut_b = random_vector(Co, seed + 9);
  return d;
}

// The block one layer at a time, as blocks.hpp documents it.
std::vector<double> convfirst_by_layers(const ref::ConvFirstShape& s, const ConvFirstData& d) {
  const int C = s.in_channels;
  const auto conv = conv_bias(conv3x3(s.N, s.H, s.W, C, 1, C / s.group_width), d.x, d.conv_w, d.conv_b.data());
  std::vector<double> ffn_in = conv, shortcut = d.x;
  if (s.stride == 2) {
    ffn_in.assign(size_t(s.N) * s.P() * s.Q() * C, 0.0);
    shortcut.assign(ffn_in.size(), 0.0);
    ref::blurpool(s.N, s.H, s.W, C, conv.data(), ffn_in.data());
    ref::blurpool(s.N, s.H, s.W, C, d.x.data(), shortcut.data());
  }
  const int pixels = s.N * s.P() * s.Q();
  ref::FfnShape f;
  f.P = pixels, f.in_channels = C, f.hidden_channels = s.hidden_channels, f.out_channels = s.out_channels;
  f.activation = s.activation;
  std::vector<double> y(size_t(pixels) * s.out_channels);
  ref::ffn(f, ffn_in.data(), d.expand_w.data(), d.expand_b.data(), d.project_w.data(), d.project_b.data(), y.data());
  if (s.has_projection_shortcut()) shortcut = gemm_bias(pixels, C, s.out_channels, shortcut, d.shortcut_w, d.shortcut_b.data());
  for (size_t i = 0; i < y.size(); ++i) y[i] += shortcut[i];
  return y;
}

}  // namespace

TEST_CASE("reference: convfirst_block hand-computed 1x1 image", "[reference]") {
  // C = 1, group width 1, one pixel x = 2: only the centre tap of the 3x3 conv
  // lands inside the image. Centre weight 3, conv bias 1: t = 3·2 + 1 = 7.
  // FFN: U = [1], a = [−5] -> relu(7 − 5) = 2;  V = [4], b = [0.5] -> 8.5.
  // Residual: y = 8.5 + 2 = 10.5.
  const std::vector<double> x = {2}, conv_w = {9, 9, 9, 9, 3, 9, 9, 9, 9}, conv_b = {1};
  const std::vector<double> u = {1}, a = {-5}, v = {4}, b = {0.5};
  ref::ConvFirstShape s;
  s.in_channels = s.out_channels = s.hidden_channels = s.group_width = 1;
  ref::ConvFirstWeights w;
  w.conv_w = conv_w.data(), w.conv_b = conv_b.data(), w.expand_w = u.data(), w.expand_b = a.data();
  w.project_w = v.data(), w.project_b = b.data();
  std::vector<double> y(1, -999.0);
  ref::convfirst_block(s, w, x.data(), y.data());
  check_all_close(y, {10.5}, 1e-15);
  SECTION("stride 2: the blur keeps only its centre tap 4/16 on a 1x1 image") {
    // t' = 7·4/16 = 1.75 -> relu(1.75 − 5) = 0 -> 0.5; shortcut blur(x) = 2·4/16 = 0.5: y = 1.
    s.stride = 2;
    ref::convfirst_block(s, w, x.data(), y.data());
    check_all_close(y, {1.0}, 1e-15);
  }
}

TEST_CASE("reference: convfirst_block stride 1 equals its layers one at a time", "[reference]") {
  struct Case { int N, H, W, C, hidden, group_width; Activation act; };
  const Case cases[] = {
      {2, 5, 4, 16, 64, 8, Activation::relu},  // the paper's group width 8, α = 4
      {1, 3, 7, 8, 24, 8, Activation::silu},   // a single group
      {1, 6, 6, 12, 20, 4, Activation::gelu},  // another group width
      {1, 1, 1, 8, 16, 8, Activation::relu},   // a 1x1 image: only centre taps
  };
  uint64_t seed = 1000;
  for (const Case& c : cases) {
    CAPTURE(c.N, c.H, c.W, c.C, c.hidden, c.group_width, ref::activation_name(c.act));
    ref::ConvFirstShape s;
    s.N = c.N, s.H = c.H, s.W = c.W, s.in_channels = c.C, s.out_channels = c.C, s.hidden_channels = c.hidden;
    s.group_width = c.group_width, s.activation = c.act, s.stride = 1;
    const ConvFirstData d = random_convfirst(s, seed += 10);
    std::vector<double> y(size_t(s.N) * s.P() * s.Q() * s.out_channels, -999.0);
    ref::convfirst_block(s, d.weights(false), d.x.data(), y.data());
    check_all_close(y, convfirst_by_layers(s, d), 1e-13);
  }
}

TEST_CASE("reference: convfirst_block stride 2 (BlurPool) equals its layers one at a time", "[reference]") {
  struct Case { int N, H, W, C, hidden, out; };
  const Case cases[] = {
      {2, 6, 6, 16, 48, 16},  // identity shortcut on blurred x
      {1, 5, 7, 16, 32, 24},  // odd sizes, projection shortcut to 24 channels
      {1, 4, 3, 8, 16, 16},   // widening 8 -> 16
      {1, 1, 2, 8, 8, 8},     // tiny image
  };
  uint64_t seed = 1100;
  for (const Case& c : cases) {
    CAPTURE(c.N, c.H, c.W, c.C, c.hidden, c.out);
    ref::ConvFirstShape s;
    s.N = c.N, s.H = c.H, s.W = c.W, s.in_channels = c.C, s.out_channels = c.out, s.hidden_channels = c.hidden;
    s.stride = 2, s.activation = Activation::relu;
    REQUIRE(s.P() == ref::blurpool_output_size(c.H));
    const ConvFirstData d = random_convfirst(s, seed += 10);
    std::vector<double> y(size_t(s.N) * s.P() * s.Q() * s.out_channels, -999.0);
    ref::convfirst_block(s, d.weights(s.has_projection_shortcut()), d.x.data(), y.data());
    check_all_close(y, convfirst_by_layers(s, d), 1e-13);
  }
}

TEST_CASE("reference: convfirst_block rejects invalid arguments", "[reference]") {
  ref::ConvFirstShape s;
  s.H = s.W = 4, s.in_channels = 16, s.out_channels = 16, s.hidden_channels = 32;
  const ConvFirstData d = random_convfirst(s, 1200);
  std::vector<double> y(4096);
  auto run = [&](const ref::ConvFirstShape& shape, const ref::ConvFirstWeights& w) {
    return [&, shape, w] { ref::convfirst_block(shape, w, d.x.data(), y.data()); };
  };
  CHECK(!throws_invalid_argument(run(s, d.weights(false))));
  ref::ConvFirstShape bad = s;
  bad.in_channels = bad.out_channels = 12;  // 8 does not divide 12
  CHECK(throws_invalid_argument(run(bad, d.weights(false)), "group width 8 does not divide in_channels 12"));
  bad = s, bad.out_channels = 24;  // stride 1 needs Cout == C
  CHECK(throws_invalid_argument(run(bad, d.weights(false)), "out_channels"));
  bad = s, bad.stride = 3;
  CHECK(throws_invalid_argument(run(bad, d.weights(false)), "stride must be 1 or 2"));
  CHECK(throws_invalid_argument(run(s, d.weights(true)), "identity"));  // shortcut weights not wanted
  bad = s, bad.stride = 2, bad.out_channels = 24;
  CHECK(throws_invalid_argument(run(bad, d.weights(false)), "'shortcut_w'"));  // ... but needed here
  ref::ConvFirstWeights no_conv = d.weights(false);
  no_conv.conv_w = nullptr;
  CHECK(throws_invalid_argument(run(s, no_conv), "'conv_w'"));
  bad = s, bad.hidden_channels = 0;
  CHECK(throws_invalid_argument(run(bad, d.weights(false)), "hidden_channels"));
}

// ---- MBConv ----------------------------------------------------------------------

namespace {

struct MBConvData {
  std::vector<double> x, expand_w, expand_b, dw_w, dw_b, se1_w, se1_b, se2_w, se2_b, project_w, project_b;
  ref::MBConvWeights weights(bool with_expand, bool with_se = true) const {
    ref::MBConvWeights w;
    if (with_expand) {
      w.expand_w = expand_w.data();
      w.expand_b = expand_b.data();
    }
    w.depthwise_w = dw_w.data(), w.depthwise_b = dw_b.data();
    if (with_se) {
      w.se_reduce_w = se1_w.data(), w.se_reduce_b = se1_b.data();
      w.se_expand_w = se2_w.data(), w.se_expand_b = se2_b.data();
    }
    w.project_w = project_w.data(), w.project_b = project_b.data();
    return w;
  }
};

MBConvData random_mbconv(const ref::MBConvShape& s, uint64_t seed) {
  MBConvData d;
  const int C = s.in_channels, Hd = s.hidden_channels, Cr = s.se_channels, Co = s.out_channels;
  d.x = random_vector(size_t(s.N) * s.H * s.W * C, seed + 1);
  d.expand_w = random_vector(size_t(C) * Hd, seed + 2, -0.5, 0.5);
  d.expand_b = random_vector(Hd, seed + 3);
  d.dw_w = random_vector(size_t(Hd) * s.kernel_size * s.kernel_size, seed + 4, -0.5, 0.5);
  d.dw_b = random_vector(Hd, seed + 5);
  d.se1_w = random_vector(size_t(Hd) * Cr, seed + 6);
  d.se1_b = random_vector(Cr, seed + 7);
  d.se2_w = random_vector(size_t(Cr) * Hd, seed + 8);
  d.se2_b = random_vector(Hd, seed + 9);
  d.project_w = random_vector(size_t(Hd) * Co, seed + 10, -0.5, 0.5);
  d.project_b = random_vector(Co, seed + 11);
  return d;
}

std::vector<double> mbconv_by_layers(const ref::MBConvShape& s, const MBConvData& d, bool with_expand) {
  const int C = s.in_channels, Hd = s.hidden_channels, in_pixels = s.N * s.H * s.W;
  std::vector<double> e = d.x;
  if (with_expand) {
    e = gemm_bias(in_pixels, C, Hd, d.x, d.expand_w, d.expand_b.data());
    ref::activate(s.activation, int64_t(e.size()), e.data(), e.data());
  }
  auto dw = conv_bias(conv3x3(s.N, s.H, s.W, Hd, s.stride, Hd, s.kernel_size), e, d.dw_w, d.dw_b.data());
  ref::activate(s.activation, int64_t(dw.size()), dw.data(), dw.data());
  ref::SqueezeExcitationShape se;
  se.N = s.N, se.H = s.P(), se.W = s.Q(), se.channels = Hd, se.reduced_channels = s.se_channels;
  se.activation = s.se_activation;
  const auto gated = s.has_se() ? se_by_layers(se, dw, d.se1_w, d.se1_b.data(), d.se2_w, d.se2_b.data()) : dw;
  auto y = gemm_bias(s.N * s.P() * s.Q(), Hd, s.out_channels, gated, d.project_w, d.project_b.data());
  if (s.has_residual())
    for (size_t i = 0; i < y.size(); ++i) y[i] += d.x[i];
  return y;
}

}  // namespace

TEST_CASE("reference: mbconv_block equals its layers one at a time", "[reference]") {
  struct Case { int N, H, W, C, hidden, out, stride, se; bool expand; Activation se_act; int k = 3; };
  const Case cases[] = {
      {2, 6, 5, 8, 32, 8, 1, 2, true, Activation::silu},    // residual
      {1, 7, 7, 8, 48, 16, 2, 2, true, Activation::silu},   // stride 2, odd size, widening
      {1, 5, 5, 8, 32, 12, 1, 4, true, Activation::relu},   // stride 1 without residual (Cout != C)
      {2, 4, 6, 16, 16, 16, 1, 4, false, Activation::silu}, // expand ratio 1: no expand layer, residual
      {1, 2, 3, 4, 8, 4, 2, 1, true, Activation::silu},     // tiny, stride 2
      {2, 7, 6, 8, 24, 8, 1, 2, true, Activation::silu, 5}, // 5x5 depthwise, residual
      {1, 9, 7, 6, 18, 10, 2, 1, true, Activation::silu, 5},// 5x5, stride 2, odd sizes
      {1, 3, 2, 4, 12, 4, 1, 1, true, Activation::silu, 5}, // 5x5 window wider than the image
      {2, 5, 7, 8, 32, 8, 1, 0, true, Activation::silu},    // no SE (MobileNetV2's inverted residual)
      {1, 7, 5, 8, 8, 16, 2, 0, false, Activation::silu, 5},// no SE, no expand, 5x5, stride 2
  };
  uint64_t seed = 1300;
  for (const Case& c : cases) {
    CAPTURE(c.N, c.H, c.W, c.C, c.hidden, c.out, c.stride, c.se, c.expand, c.k);
    ref::MBConvShape s;
    s.N = c.N, s.H = c.H, s.W = c.W, s.in_channels = c.C, s.hidden_channels = c.hidden, s.out_channels = c.out;
    s.stride = c.stride, s.se_channels = c.se, s.se_activation = c.se_act, s.kernel_size = c.k;
    const MBConvData d = random_mbconv(s, seed += 20);
    std::vector<double> y(size_t(s.N) * s.P() * s.Q() * s.out_channels, -999.0);
    ref::mbconv_block(s, d.weights(c.expand, c.se > 0), d.x.data(), y.data());
    check_all_close(y, mbconv_by_layers(s, d, c.expand), 1e-13);
  }
}

TEST_CASE("reference: mbconv_block rejects invalid arguments", "[reference]") {
  ref::MBConvShape s;
  s.H = s.W = 4, s.in_channels = 8, s.hidden_channels = 32, s.out_channels = 8, s.se_channels = 2;
  const MBConvData d = random_mbconv(s, 1400);
  std::vector<double> y(4096);
  auto run = [&](const ref::MBConvShape& shape, const ref::MBConvWeights& w) {
    return [&, shape, w] { ref::mbconv_block(shape, w, d.x.data(), y.data()); };
  };
  CHECK(!throws_invalid_argument(run(s, d.weights(true))));
  CHECK(throws_invalid_argument(run(s, d.weights(false)), "hidden_channels (32) must equal in_channels (8)"));
  ref::MBConvShape bad = s;
  bad.stride = 0;
  CHECK(throws_invalid_argument(run(bad, d.weights(true)), "stride must be 1 or 2"));
  bad = s, bad.se_channels = -1;
  CHECK(throws_invalid_argument(run(bad, d.weights(true)), "se_channels"));
  bad = s, bad.se_channels = 0;  // no SE, but SE weights given
  CHECK(throws_invalid_argument(run(bad, d.weights(true)), "se_channels is 0"));
  CHECK(!throws_invalid_argument(run(bad, d.weights(true, false))));
  bad = s, bad.kernel_size = 4;
  CHECK(throws_invalid_argument(run(bad, d.weights(true)), "kernel_size must be 3 or 5"));
  ref::MBConvWeights no_dw = d.weights(true);
  no_dw.depthwise_w = nullptr;
  CHECK(throws_invalid_argument(run(s, no_dw), "'depthwise_w'"));
}

TEST_CASE("reference: mbconv_block pools the SE per image", "[reference]") {
  // Two images that differ: the block on the batch must equal the block on
  // each image alone (a pooled mean over the whole batch would mix them).
  ref::MBConvShape s;
  s.N = 2, s.H = 5, s.W = 3, s.in_channels = 4, s.hidden_channels = 12, s.out_channels = 4, s.se_channels = 1;
  MBConvData d = random_mbconv(s, 1500);
  for (size_t i = d.x.size() / 2; i < d.x.size(); ++i) d.x[i] = 3.0 * d.x[i] + 1.0;  // image 1 unlike image 0
  std::vector<double> batch(size_t(2) * 5 * 3 * 4);
  ref::mbconv_block(s, d.weights(true), d.x.data(), batch.data());
  ref::MBConvShape one = s;
  one.N = 1;
  const size_t half = batch.size() / 2;
  for (int n = 0; n < 2; ++n) {
    std::vector<double> y(half, -999.0);
    ref::mbconv_block(one, d.weights(true), d.x.data() + n * half, y.data());
    check_all_close(std::vector<double>(batch.begin() + n * half, batch.begin() + (n + 1) * half), y, 1e-14);
  }
}
