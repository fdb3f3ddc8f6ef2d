// tests/lesson02_im2col_test.cpp — lesson 02's CPU im2col rungs, beyond the
// shared conv2d test table.
//
// The registry already runs 02a_im2col_naive_gemm and 02b_im2col_gemm on every
// conv2d test shape. Those shapes are small: every one fits in a single slab
// of 04's patch rows and a single depth slice of the GEMM. Checked here,
// through the same harness (random inputs, NaN-poisoned outputs, the double
// reference):
//   - shapes with several slabs (a ragged last one), several depth slices,
//     groups, stride 2 and the 1x1 view with groups;
//   - the reported workspace: 03's is the whole patch matrix (the R·S blow-up),
//     0 for a 1x1 stride-1 pad-0 layer; 04's stays near one slab.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ops/conv2d.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {
namespace {

ConvProblem conv(int N, int H, int W, int C, int K, int R, int S, int stride, int pad, int groups) {
  return {N, H, W, C, K, R, S, stride, pad, groups, DType::f32};
}

TEST_CASE("conv2d/cpu lesson 02: im2col rungs across slab and depth boundaries", "[conv2d][cpu][lesson02]") {
  OpHandle* op = find_op("conv2d");
  REQUIRE(op != nullptr);
  const std::vector<ConvProblem> shapes = {
      conv(2, 40, 40, 64, 16, 3, 3, 1, 1, 1),  // N·P·Q = 3200: two slabs of 04 (ragged), depth 576: 3 slices
      conv(2, 48, 48, 64, 32, 3, 3, 1, 1, 2),  // grouped, depth 288, two slabs per group
      conv(3, 61, 61, 24, 20, 5, 5, 2, 2, 1),  // stride 2, 5x5, 31x31 outputs, two slabs
      conv(2, 20, 20, 32, 24, 1, 1, 1, 0, 4),  // 1x1 view with groups: x columns g·T … as A
      conv(1, 9, 7, 12, 10, 1, 1, 2, 0, 1),    // 1x1 but stride 2: not a view, im2col needed
  };
  for (const char* name : {"02a_im2col_naive_gemm", "02b_im2col_gemm"}) {
    const std::size_t index = testing::variant_index(*op, Device::cpu, name);
    for (const ConvProblem& p : shapes) {
      const std::string spec = OpTraits<ConvProblem>::spec(p);
      REQUIRE(op->unsupported_reason(index, spec).empty());
      auto c = op->make_case(index, spec, testing::seed_for(spec));
      testing::check_twice(*c, std::string(name) + " on " + spec);
    }
  }
}

TEST_CASE("conv2d/cpu lesson 02: the workspace is the patch matrix (R·S blow-up), 0 for a 1x1 view",
          "[conv2d][cpu][lesson02]") {
  OpHandle* op = find_op("conv2d");
  REQUIRE(op != nullptr);
  const std::size_t naive = testing::variant_index(*op, Device::cpu, "02a_im2col_naive_gemm");
  const std::size_t fast = testing::variant_index(*op, Device::cpu, "02b_im2col_gemm");
  const auto workspace = [&](std::size_t index, const ConvProblem& p) {
    return op->make_case(index, OpTraits<ConvProblem>::spec(p), 1)->workspace_bytes();
  };

  const ConvProblem bench = conv(8, 56, 56, 64, 64, 3, 3, 1, 1, 1);
  const std::size_t patches = std::size_t(8) * 56 * 56 * 3 * 3 * 64 * sizeof(float);  // N·P·Q · R·S·T floats
  CHECK(workspace(naive, bench) == patches);                                           // 57.8 MB
  CHECK(double(workspace(naive, bench)) / (bench.input_elems() * sizeof(float)) == 9.0);  // R·S × the input
  CHECK(workspace(fast, bench) < std::size_t(5) << 20);                                // one slab + packing

  const ConvProblem grouped = conv(2, 9, 9, 16, 32, 3, 3, 1, 1, 2);  // one group's matrix at a time
  CHECK(workspace(naive, grouped) == std::size_t(2) * 9 * 9 * 3 * 3 * 8 * sizeof(float));

  const ConvProblem pointwise = conv(2, 8, 8, 16, 16, 1, 1, 1, 0, 1);
  CHECK(workspace(naive, pointwise) == 0);  // x is the [N·H·W, C] matrix
}

}  // namespace
}  // namespace convlab
