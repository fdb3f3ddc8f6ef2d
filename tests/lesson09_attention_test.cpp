// tests/lesson09_attention_test.cpp — lesson 09's claims that the registry tests do not check.
//
// The registry tests (tests/main.cpp) run every softmax and attention variant
// on its whole test table with uniform(−1, 1) inputs. Two promises need other
// inputs or other questions:
//
//   1. Softmax never overflows: rows of logits around ±1e4 (exp(1e4) is far
//      beyond float's 3.4e38) give the right probabilities. Every softmax
//      variant, CPU and GPU, runs on such rows through the ordinary harness
//      path (poisoned output, double reference, the one tolerance).
//   2. The fused CPU attention keeps O(tile) memory: its workspace is the same
//      for N = 64 and N = 4096, while the naive form's grows as N².
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "core/harness.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {
namespace {

// Rows whose entries are large: a row spread over [−1e4, 1e4], a row near +1e4
// (the max and its neighbours nearly tie), a row near −1e4 (a naive exp
// underflows every entry to 0 and divides 0 by 0), and one with a single
// huge outlier that takes all the probability.
Tensor large_logits(int rows, int cols, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  Tensor t({rows, cols}, dtype);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      double x = unit(rng);
      switch (r % 4) {
        case 0: x *= 1e4; break;                      // spread ±1e4
        case 1: x = 1e4 + 20.0 * x; break;            // all near +1e4
        case 2: x = -1e4 + 20.0 * x; break;           // all near −1e4
        case 3: x = (c == cols / 2) ? 9e3 : x; break; // one outlier
      }
      t.set(int64_t(r) * cols + c, x);
    }
  return t;
}

TEST_CASE("lesson 09: every softmax variant survives logits of magnitude 1e4", "[softmax][lesson09]") {
  OpHandle* op = find_op("softmax");
  REQUIRE(op != nullptr);
  const auto variants = op->variants();
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const VariantInfo& v = variants[i];
    if (v.device == Device::cuda && testing::skip_without_gpu()) continue;
    for (DType dtype : {DType::f32, DType::f16}) {
      for (int cols : {1, 33, 1000, 4099}) {
        const int rows = 8;
        const std::string spec = "rows=" + std::to_string(rows) + ",cols=" + std::to_string(cols) +
                                 ",dtype=" + dtype_name(dtype);
        if (!op->unsupported_reason(i, spec).empty()) continue;
        // f16 cannot hold 1e4 ± 20 finely, but any rounded value is a valid input:
        // the reference reads the same rounded numbers.
        std::vector<Tensor> in;
        in.push_back(large_logits(rows, cols, dtype, testing::base_seed() + uint64_t(cols)));
        auto c = op->make_case_from(i, std::move(in), "");
        INFO(v.id() << " on " << spec << " with |x| ~ 1e4 (CONVLAB_SEED=" << testing::base_seed() << ")");
        testing::check_twice(*c, v.id() + " on large logits " + spec);
      }
    }
  }
}

std::size_t attention_workspace(const std::string& variant, const std::string& spec) {
  OpHandle* op = find_op("attention");
  REQUIRE(op != nullptr);
  const auto variants = op->variants();
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (variants[i].name == variant && variants[i].device == Device::cpu)
      return op->make_case(i, spec, 1)->workspace_bytes();
  FAIL("no CPU attention variant named " << variant);
  return 0;
}

TEST_CASE("lesson 09: the fused CPU attention's workspace does not grow with N", "[attention][cpu][lesson09]") {
  const std::size_t small = attention_workspace("02_fused_online", "B=1,H=1,N=64,d=64");
  const std::size_t large = attention_workspace("02_fused_online", "B=1,H=1,N=4096,d=64");
  CHECK(small > 0);
  CHECK(large == small);
  // The naive form materialises S: 4096² floats = 64 MiB for one head.
  CHECK(attention_workspace("01_naive", "B=1,H=1,N=4096,d=64") == std::size_t(4096) * 4096 * 4);
}

}  // namespace
}  // namespace convlab
