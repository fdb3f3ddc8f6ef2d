// tests/reference/test_pooling.cpp — self-tests of 2x2 max pooling, global
// average pooling and BlurPool: hand cases (odd sizes included) and BlurPool
// as a depthwise conv2d.
#include <vector>

#include "reference/conv2d.hpp"
#include "reference/pooling.hpp"
#include "tests/catch_compat.hpp"
#include "tests/reference/ref_test_util.hpp"

namespace ref = convlab::ref;
using convlab::ref_test::check_all_close;
using convlab::ref_test::random_vector;
using convlab::ref_test::throws_invalid_argument;

TEST_CASE("reference: maxpool2x2 hand-computed, even size, two channels", "[reference]") {
  // Channel 0:             channel 1 = −(channel 0):
  //   [ 1  5  2  0 ]        window maxima of −x are −(window minima of x)
  //   [ 3 −1  7  4 ]
  //   [ 0  0 −2 −3 ]
  //   [ 9  8 −4 −1 ]
  const double plane[16] = {1, 5, 2, 0, 3, -1, 7, 4, 0, 0, -2, -3, 9, 8, -4, -1};
  std::vector<double> x(32);
  for (int i = 0; i < 16; ++i) {
    x[2 * i] = plane[i];
    x[2 * i + 1] = -plane[i];
  }
  std::vector<double> y(8, -999.0);
  ref::maxpool2x2(1, 4, 4, 2, x.data(), y.data());
  // ch0: max{1,5,3,−1} = 5, max{2,0,7,4} = 7, max{0,0,9,8} = 9, max{−2,−3,−4,−1} = −1
  // ch1: −min{1,5,3,−1} = 1, −min{2,0,7,4} = 0, −min{0,0,9,8} = 0, −min{−2,−3,−4,−1} = 4
  check_all_close(y, {5, 1, 7, 0, 9, 0, -1, 4}, 0.0);
}

TEST_CASE("reference: maxpool2x2 with odd H and W drops the last row and column", "[reference]") {
  // 5x3 input, one channel; the last row and column hold the largest values,
  // so reading them by mistake would change the answer.
  //   [   1    2  100 ]
  //   [   3    4  100 ]
  //   [   5   −6  100 ]
  //   [  −7   −8  100 ]
  //   [ 200  200  200 ]
  const std::vector<double> x = {1, 2, 100, 3, 4, 100, 5, -6, 100, -7, -8, 100, 200, 200, 200};
  std::vector<double> y(2, -999.0);  // floor(5/2) x floor(3/2) = 2 x 1
  ref::maxpool2x2(1, 5, 3, 1, x.data(), y.data());
  // y0 = max{1, 2, 3, 4} = 4       y1 = max{5, −6, −7, −8} = 5
  check_all_close(y, {4, 5}, 0.0);
}

TEST_CASE("reference: global_avgpool hand-computed", "[reference]") {
  SECTION("two images, 2x2, two channels") {
    // image 0: ch0 = {1, 2, 3, 4}, ch1 = {10, −10, 6, 2}; image 1: ch0 = all 7, ch1 = {0, 0, 0, 4}
    const std::vector<double> x = {1, 10, 2, -10, 3, 6, 4, 2,  //
                                   7, 0, 7, 0, 7, 0, 7, 4};
    std::vector<double> y(4, -999.0);
    ref::global_avgpool(2, 2, 2, 2, x.data(), y.data());
    // 10/4 = 2.5, 8/4 = 2, 28/4 = 7, 4/4 = 1
    check_all_close(y, {2.5, 2, 7, 1}, 0.0);
  }
  SECTION("odd 3x1 image") {
    const std::vector<double> x = {1, 2, 6};
    std::vector<double> y(1, -999.0);
    ref::global_avgpool(1, 3, 1, 1, x.data(), y.data());
    check_all_close(y, {3}, 0.0);  // (1 + 2 + 6)/3
  }
}

TEST_CASE("reference: blurpool hand-computed 3x3 input", "[reference]") {
  // x = [1 2 3; 4 5 6; 7 8 9], output 2x2 centred on inputs (0,0), (0,2), (2,0), (2,2).
  // Filter weights ×16 are [1 2 1] ⊗ [1 2 1]; the centre tap is 4.
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> y(4, -999.0);
  ref::blurpool(1, 3, 3, 1, x.data(), y.data());
  // (0,0): rows 0,1 × cols 0,1 with weights 4,2 / 2,1:  4·1 + 2·2 + 2·4 + 1·5     = 21
  // (0,1): rows 0,1 × cols 1,2 with weights 2,4 / 1,2:  2·2 + 4·3 + 1·5 + 2·6     = 33
  // (1,0): rows 1,2 × cols 0,1 with weights 2,1 / 4,2:  2·4 + 1·5 + 4·7 + 2·8     = 57
  // (1,1): rows 1,2 × cols 1,2 with weights 1,2 / 2,4:  1·5 + 2·6 + 2·8 + 4·9     = 69
  check_all_close(y, {21.0 / 16, 33.0 / 16, 57.0 / 16, 69.0 / 16}, 1e-15);
}

TEST_CASE("reference: blurpool of a constant image shows the zero padding", "[reference]") {
  SECTION("even 4x4 -> 2x2: only the top row and left column lose taps") {
    const std::vector<double> x(16, 16.0);
    std::vector<double> y(4, -999.0);
    ref::blurpool(1, 4, 4, 1, x.data(), y.data());
    // corner: (2+1)·(2+1) = 9 of 16 weight inside; edges: (2+1)·4 = 12; (1,1): all 16
    check_all_close(y, {9, 12, 12, 16}, 1e-14);
  }
  SECTION("odd 5x5 -> 3x3: the bottom row and right column lose taps too") {
    const std::vector<double> x(25, 16.0);
    std::vector<double> y(9, -999.0);
    ref::blurpool(1, 5, 5, 1, x.data(), y.data());
    check_all_close(y, {9, 12, 9, 12, 16, 12, 9, 12, 9}, 1e-14);
  }
  SECTION("output sizes are ceil(extent / 2)") {
    CHECK(ref::blurpool_output_size(1) == 1);
    CHECK(ref::blurpool_output_size(2) == 1);
    CHECK(ref::blurpool_output_size(3) == 2);
    CHECK(ref::blurpool_output_size(4) == 2);
    CHECK(ref::blurpool_output_size(7) == 4);
  }
}

TEST_CASE("reference: blurpool equals a depthwise stride-2 conv2d with the binomial filter", "[reference]") {
  const int sizes[][2] = {{7, 6}, {8, 5}, {1, 1}, {2, 9}};
  uint64_t seed = 500;
  for (const auto& hw : sizes) {
    const int N = 2, H = hw[0], W = hw[1], C = 3;
    CAPTURE(H, W);
    convlab::ref::ConvShape p;
    p.N = N, p.H = H, p.W = W, p.C = C, p.K = C, p.R = 3, p.S = 3, p.stride = 2, p.pad = 1, p.groups = C;
    const auto x = random_vector(size_t(p.input_elems()), ++seed);
    const double taps[3] = {1, 2, 1};
    std::vector<double> w;  // [C, 3, 3, 1]
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) w.push_back(taps[r] * taps[s] / 16.0);
    std::vector<double> expected(size_t(p.output_elems())), y(size_t(p.output_elems()), -999.0);
    ref::conv2d(p, x.data(), w.data(), expected.data());
    REQUIRE(ref::blurpool_output_size(H) == p.P());
    REQUIRE(ref::blurpool_output_size(W) == p.Q());
    ref::blurpool(N, H, W, C, x.data(), y.data());
    check_all_close(y, expected, 1e-15);
  }
}

TEST_CASE("reference: pooling functions reject invalid arguments", "[reference]") {
  std::vector<double> b(64, 0.0);
  double* p = b.data();
  CHECK(throws_invalid_argument([p] { ref::maxpool2x2(1, 1, 4, 1, p, p); }, "at least 2"));
  CHECK(throws_invalid_argument([p] { ref::maxpool2x2(1, 4, 4, 0, p, p); }, "C must be positive"));
  CHECK(throws_invalid_argument([p] { ref::global_avgpool(1, 2, 2, 1, nullptr, p); }, "'x'"));
  CHECK(throws_invalid_argument([p] { ref::blurpool(1, 0, 4, 1, p, p); }, "H must be positive"));
  CHECK(throws_invalid_argument([] { ref::blurpool_output_size(0); }, "extent"));
}
