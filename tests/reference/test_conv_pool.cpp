// tests/reference/test_conv_pool.cpp — lesson 07's oracle and its bytes model.
//
// ref::conv_bias_relu_pool is written as its own loops; here it is held
// against the composition of the references it fuses (conv2d, then the
// per-channel affine map, ReLU, 2x2 max-pool). Then ConvPoolProblem's byte
// counts are checked against a hand count, and the registered variants are
// checked to report the model they claim (layer-by-layer: unfused_bytes).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/harness.hpp"
#include "ops/conv_pool.hpp"
#include "reference/conv2d.hpp"
#include "reference/conv_pool.hpp"
#include "reference/elementwise.hpp"
#include "reference/pooling.hpp"
#include "tests/catch_compat.hpp"
#include "tests/reference/ref_test_util.hpp"

namespace ref = convlab::ref;
using convlab::ConvPoolProblem;
using convlab::ref_test::check_all_close;
using convlab::ref_test::random_vector;
using convlab::ref_test::throws_invalid_argument;

namespace {

std::vector<double> composed(const ConvPoolProblem& p, const std::vector<double>& x, const std::vector<double>& w,
                             const std::vector<double>& scale, const std::vector<double>& bias) {
  const convlab::ConvProblem c = p.conv();
  std::vector<double> full(std::size_t(c.output_elems()));
  ref::conv2d(c, x.data(), w.data(), full.data());
  const int64_t pixels = int64_t(p.N) * c.P() * c.Q();
  ref::channel_scale_bias(pixels, p.K, full.data(), scale.data(), bias.data(), full.data());
  ref::relu(int64_t(full.size()), full.data(), full.data());
  std::vector<double> pooled(std::size_t(p.pooled_elems()));
  ref::maxpool2x2(p.N, c.P(), c.Q(), p.K, full.data(), pooled.data());
  return pooled;
}

}  // namespace

TEST_CASE("reference: conv_bias_relu_pool equals conv2d → scale/bias → relu → maxpool2x2", "[reference]") {
  const ConvPoolProblem shapes[] = {
      {1, 2, 2, 1, 1, 1, 1, 1, 0, 1},      // one window
      {2, 5, 7, 3, 5, 3, 3, 1, 1, 1},      // odd P and Q: last row / column dropped
      {3, 13, 9, 8, 12, 3, 3, 2, 1, 1},    // stride 2
      {1, 11, 10, 24, 40, 3, 3, 1, 1, 2},  // grouped
      {2, 6, 6, 4, 6, 1, 1, 1, 0, 1},      // pointwise
  };
  uint64_t seed = 7;
  for (const ConvPoolProblem& p : shapes) {
    const convlab::ConvProblem c = p.conv();
    const auto x = random_vector(std::size_t(c.input_elems()), ++seed);
    const auto w = random_vector(std::size_t(c.weight_elems()), ++seed);
    const auto scale = random_vector(std::size_t(p.K), ++seed);  // negative scales too: order of max and affine matters
    const auto bias = random_vector(std::size_t(p.K), ++seed);
    std::vector<double> y(std::size_t(p.pooled_elems()), -999.0);
    ref::conv_bias_relu_pool(p.conv(), x.data(), w.data(), scale.data(), bias.data(), y.data());
    check_all_close(y, composed(p, x, w, scale, bias), 1e-12);
  }
}

TEST_CASE("reference: conv_bias_relu_pool hand case, negative scale takes the window minimum", "[reference]") {
  // x 1x2x2x1 = [1 2; 3 4], w = 1x1 identity, scale −1, bias 5: the affine map gives
  // [4 3; 2 1], ReLU keeps all, max = 4 (= 5 − min x). Applying the max before the
  // scale would give 5 − 4 = 1.
  const ConvPoolProblem p{1, 2, 2, 1, 1, 1, 1, 1, 0, 1};
  const double x[] = {1, 2, 3, 4}, w[] = {1}, scale[] = {-1}, bias[] = {5};
  double y = 0;
  ref::conv_bias_relu_pool(p.conv(), x, w, scale, bias, &y);
  CHECK(y == 4.0);
  // And a bias that pushes everything negative: ReLU clamps the window to 0.
  const double bias_low[] = {-10};
  ref::conv_bias_relu_pool(p.conv(), x, w, scale, bias_low, &y);
  CHECK(y == 0.0);
}

TEST_CASE("reference: conv_bias_relu_pool_magnitude is the window's largest |conv·scale| + |bias|", "[reference]") {
  // Same x and w as above: conv = x. scale −1, bias 2.5: terms |−x| + 2.5 = 3.5 .. 6.5,
  // while y = max relu(2.5 − x) = 1.5. The magnitude is the window's largest: 6.5.
  const ConvPoolProblem p{1, 2, 2, 1, 1, 1, 1, 1, 0, 1};
  const double x[] = {1, 2, 3, 4}, w[] = {1}, scale[] = {-1}, bias[] = {2.5};
  double y = 0, m = 0;
  ref::conv_bias_relu_pool(p.conv(), x, w, scale, bias, &y);
  ref::conv_bias_relu_pool_magnitude(p.conv(), x, w, scale, bias, &m);
  CHECK(y == 1.5);
  CHECK(m == 6.5);
}

TEST_CASE("reference: conv_bias_relu_pool rejects a conv output smaller than 2x2", "[reference]") {
  const ConvPoolProblem p{1, 3, 1, 1, 1, 1, 1, 1, 0, 1};  // Q = 1
  std::vector<double> buf(16, 0.0);
  CHECK_FALSE(p.valid());
  CHECK(throws_invalid_argument(
      [&] { ref::conv_bias_relu_pool(p.conv(), buf.data(), buf.data(), buf.data(), buf.data(), buf.data()); }, "2x2"));
}

TEST_CASE("ConvPoolProblem: the bytes models count what they say", "[conv_bias_relu_pool][cpu]") {
  // n2 h6 w5 c3 → k4, 3x3 pad 1: P = 6, Q = 5 → pooled 3 × 2.
  const ConvPoolProblem p{2, 6, 5, 3, 4, 3, 3, 1, 1, 1, convlab::DType::f16};
  const double x = 2 * 6 * 5 * 3, w = 4 * 3 * 3 * 3, full = 2 * 6 * 5 * 4, pooled = 2 * 3 * 2 * 4, sb = 2 * 4;
  CHECK(p.P2() == 3);
  CHECK(p.Q2() == 2);
  CHECK(p.full_elems() == full);
  CHECK(p.pooled_elems() == pooled);
  // fused: every input once, only the pooled output once (2 bytes each in f16)
  CHECK(p.min_bytes() == 2 * (x + w + sb + pooled));
  // layer by layer: conv (x, w → full) + affine/ReLU (full, sb → full) + pool (full → pooled)
  CHECK(p.unfused_bytes() == 2 * ((x + w + full) + (full + sb + full) + (full + pooled)));
  // flops: conv 2·27 per full output, 3 per full element, 3 per pooled output
  CHECK(p.flops() == 2.0 * full * 27 + 3 * full + 3 * pooled);
}

TEST_CASE("conv_bias_relu_pool variants report their bytes model", "[conv_bias_relu_pool][cpu]") {
  // Read from the registry directly, so the GPU variants' models are checked
  // too: no case is made, no device is needed. The CPU side also goes through
  // the harness (ICase::model_bytes), which is what the benchmarks report.
  convlab::OpHandle* op = convlab::find_op("conv_bias_relu_pool");
  REQUIRE(op != nullptr);
  const std::string spec = "N=1,H=8,W=7,C=4,K=8,R=3,pad=1";
  const ConvPoolProblem p{1, 8, 7, 4, 8, 3, 3, 1, 1, 1};
  const auto infos = op->variants();
  const auto& variants = convlab::Registry<ConvPoolProblem>::variants();
  REQUIRE(infos.size() == variants.size());
  int checked = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const auto& v = variants[i];
    INFO(infos[i].id());
    const double model = v.model_bytes ? v.model_bytes(p) : p.min_bytes();
    if (v.name == "07a_layer_by_layer") {
      CHECK(model == p.unfused_bytes());
      ++checked;
    }
    if (v.name == "07b_fused") {
      CHECK(model == p.min_bytes());
      ++checked;
    }
    if (v.device == convlab::Device::cpu) {
      const auto c = op->make_case(i, spec, 1);
      CHECK(c->min_bytes() == p.min_bytes());
      CHECK(c->model_bytes() == model);
    }
  }
  CHECK(checked == (convlab::cuda_compiled() ? 4 : 2));  // 01 and 02 on each device built
}
