// tests/lesson09_attention_test.cpp — lesson 09's claims that the registry tests do not check.
//
// The registry tests (tests/main.cpp) run every softmax and attention variant
// on its whole test table with uniform(−1, 1) inputs. Four promises need other
// inputs or other questions:
//
//   1. Softmax never overflows: rows of logits around ±1e4 (exp(1e4) is far
//      beyond float's 3.4e38) give the right probabilities. Every softmax
//      variant, CPU and GPU, runs on such rows through the ordinary harness
//      path (poisoned output, double reference, the one tolerance).
//   2. The fused CPU attention keeps O(tile) memory: its workspace is the same
//      for N = 64 and N = 4096, while the naive form's grows as N².
//   3. The checker catches attention's typical mistakes on the test table:
//      bottom-right causal alignment (right whenever Nq == Nk), a dropped last
//      key, and a P·V accumulated in fp16 — while a correct variant that sums
//      the keys in reverse order passes.
//   4. gpu/attention/09c_flash_tensor_core reuses the S accumulators as the A
//      operand of P·V without moving data; that the two fragment layouts line
//      up is checked here on the host, against gpu/lib/mma.cuh's maps.
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "core/harness.hpp"
#include "ops/attention.hpp"
#include "gpu/lib/mma.cuh"
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

// Every softmax variant on `device` (whole test skipped without a GPU for gpu).
void check_large_logits(Device device) {
  if (device == Device::gpu && testing::skip_without_gpu()) return;
  OpHandle* op = find_op("softmax");
  REQUIRE(op != nullptr);
  const auto variants = op->variants();
  int tested = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const VariantInfo& v = variants[i];
    if (v.device != device) continue;
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
        ++tested;
      }
    }
  }
  CHECK(tested > 0);
}

TEST_CASE("lesson 09: every CPU softmax variant survives logits of magnitude 1e4", "[softmax][cpu][lesson09]") {
  check_large_logits(Device::cpu);
}

TEST_CASE("lesson 09: every GPU softmax variant survives logits of magnitude 1e4", "[softmax][gpu][lesson09]") {
  check_large_logits(Device::gpu);
}

TEST_CASE("lesson 09: the fused CPU attention's workspace does not grow with N", "[attention][cpu][lesson09]") {
  const auto workspace = [](const std::string& variant, const std::string& spec) {
    return testing::workspace_of("attention", Device::cpu, variant, spec);
  };
  const std::size_t small = workspace("09b_fused_online", "B=1,H=1,N=64,d=64");
  const std::size_t large = workspace("09b_fused_online", "B=1,H=1,N=4096,d=64");
  CHECK(small > 0);
  CHECK(large == small);
  // The naive form materialises S: 4096² floats = 64 MiB for one head.
  CHECK(workspace("09a_naive", "B=1,H=1,N=4096,d=64") == std::size_t(4096) * 4096 * 4);
}

// ---- the checker on deliberately wrong attention variants --------------------------

enum class AttentionDefect { none_reversed_keys, bottom_right_causal, skip_last_key, f16_accumulator };

template <AttentionDefect defect> void wrong_attention(const AttentionProblem& p, const Args<AttentionProblem>& a) {
  const float* q = static_cast<const float*>(a.q);
  const float* k = static_cast<const float*>(a.k);
  const float* v = static_cast<const float*>(a.v);
  float* o = static_cast<float*>(a.o);
  const int d = p.d;
  std::vector<float> w(p.Nk);
  for (int64_t bh = 0; bh < int64_t(p.B) * p.H; ++bh)
    for (int i = 0; i < p.Nq; ++i) {
      int visible = p.causal ? std::min(i + 1, p.Nk) : p.Nk;
      if (p.causal && defect == AttentionDefect::bottom_right_causal)
        visible = std::max(0, std::min(i + 1 + p.Nk - p.Nq, p.Nk));
      if (defect == AttentionDefect::skip_last_key && visible == p.Nk) --visible;
      float m = -INFINITY, l = 0.f;
      for (int j = 0; j < visible; ++j) {
        float dot = 0.f;
        for (int t = 0; t < d; ++t) dot += q[(bh * p.Nq + i) * d + t] * k[(bh * p.Nk + j) * d + t];
        w[j] = dot * float(p.scale());
        m = std::fmax(m, w[j]);
      }
      for (int j = 0; j < visible; ++j) l += (w[j] = std::exp(w[j] - m));
      for (int t = 0; t < d; ++t) {
        float acc = 0.f;
        for (int jj = 0; jj < visible; ++jj) {
          const int j = defect == AttentionDefect::none_reversed_keys ? visible - 1 - jj : jj;
          acc += w[j] * v[(bh * p.Nk + j) * d + t];
          if (defect == AttentionDefect::f16_accumulator) acc = float(round_to(DType::f16, acc));
        }
        o[(bh * p.Nq + i) * d + t] = acc / l;  // 0/0 = NaN for a row left with no key
      }
    }
}

// Passed and tried shapes of the f32 attention test table.
template <AttentionDefect defect> testing::TableRun run_attention_on_f32_table() {
  Variant<AttentionProblem> v;
  v.name = "wrong_attention";
  v.run = wrong_attention<defect>;
  return testing::run_on_f32_table(v);
}

TEST_CASE("lesson 09: the checker accepts attention summed in another key order", "[checker][attention][lesson09]") {
  const auto [passed, tried, report] = run_attention_on_f32_table<AttentionDefect::none_reversed_keys>();
  INFO(report);
  REQUIRE(tried > 10);
  CHECK(passed == tried);
}

TEST_CASE("lesson 09: the checker rejects wrong attention variants", "[checker][attention][lesson09]") {
  SECTION("bottom-right causal alignment: wrong exactly where Nq != Nk and causal") {
    const auto [passed, tried, report] = run_attention_on_f32_table<AttentionDefect::bottom_right_causal>();
    INFO(report);
    int mismatched = 0;  // shapes where the two alignments differ
    for (const AttentionProblem& p : OpTraits<AttentionProblem>::shapes(ShapeTable::test, Device::cpu))
      mismatched += p.dtype == DType::f32 && p.causal && p.Nq != p.Nk;
    REQUIRE(mismatched >= 2);
    CHECK(passed == tried - mismatched);
  }
  SECTION("the last key dropped: wrong wherever some query sees that key") {
    const auto [passed, tried, report] = run_attention_on_f32_table<AttentionDefect::skip_last_key>();
    INFO(report);
    int unseen = 0;  // top-left causal with Nq < Nk: no query reaches key Nk − 1, dropping it is harmless
    for (const AttentionProblem& p : OpTraits<AttentionProblem>::shapes(ShapeTable::test, Device::cpu))
      unseen += p.dtype == DType::f32 && p.causal && p.Nq < p.Nk;
    CHECK(passed == unseen);
    CHECK(tried > 10);
  }
  SECTION("P·V accumulated in fp16") {
    const auto [passed, tried, report] = run_attention_on_f32_table<AttentionDefect::f16_accumulator>();
    INFO(report);
    CHECK(passed == 0);
    CHECK(tried > 10);
  }
}

TEST_CASE("lesson 09: two m16n8 C fragments of S are one m16k16 A fragment of P", "[mma][cpu][lesson09]") {
  // The kernel packs p_frag[r] = (s_acc[2kk + (r >> 1)][2·(r & 1)], [2·(r & 1) + 1]):
  // register r, half h of the A fragment comes from n8 key tile r >> 1, C element 2·(r & 1) + h.
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const gpu::MatrixCoord want = gpu::mma_a_coord(lane, reg, half);  // {query row, key within 16}
        const int key_tile = reg >> 1;
        const gpu::MatrixCoord got = gpu::mma_c_coord(lane, 2 * (reg & 1) + half);  // {row, key within 8}
        INFO("lane " << lane << " reg " << reg << " half " << half);
        CHECK(got.row == want.row);
        CHECK(8 * key_tile + got.col == want.col);
      }
}

}  // namespace
}  // namespace convlab
