// tests/lesson08_ffn_test.cpp — lesson 08's claims that the registry tests do not check.
//
// The registry tests (tests/main.cpp) run every ffn variant on the test table
// against the double reference, within the rounding bound. Three promises of
// the lesson are sharper than that:
//
//   1. Loop fusion (Eq. 32) is an identity, not an approximation: on
//      integer-valued inputs with ReLU every partial sum is an integer below
//      2^24, so fp32 arithmetic is exact and the CPU loop-fused rung must
//      equal the reference bit for bit, whatever its chunking and tiling.
//   2. The fused CPU rung's workspace does not grow with P (the layer-by-layer
//      rung's holds the whole P × hidden tensor).
//   3. gpu/ffn/03_fused_tensor_core hands the fp32 accumulators of GEMM 1 to
//      GEMM 2 as its A operand without any shuffle: the D fragments of two
//      adjacent m16n8 tiles hold, lane for lane, the A fragment of one m16k16
//      tile. Checked on the host against the PTX model in gpu/common/mma.cuh.
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "core/ops/ffn.hpp"
#include "gpu/common/mma.cuh"
#include "reference/ffn.hpp"
#include "tests/catch_compat.hpp"

namespace convlab {
namespace {

const Variant<FfnProblem>* cpu_variant(const std::string& name) {
  for (const Variant<FfnProblem>& v : Registry<FfnProblem>::variants())
    if (v.name == name && v.device == Device::cpu) return &v;
  return nullptr;
}

std::vector<float> integers(std::size_t n, int lo, int hi, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<float> out(n);
  for (float& f : out) f = float(d(rng));
  return out;
}

TEST_CASE("lesson 08: the loop-fused CPU FFN equals the layer-by-layer reference exactly on integers",
          "[ffn][cpu][lesson08]") {
  for (const std::string name : {"02_loop_fused", "01_layer_by_layer"}) {
    const Variant<FfnProblem>* v = cpu_variant(name);
    REQUIRE(v != nullptr);
    // P leaves a partial row tile, hidden a partial chunk, C and C_out odd.
    const FfnProblem p{250, 40, 300, 24, FfnActivation::relu, DType::f32};
    std::mt19937_64 rng(8);
    // |x·u + a| <= 40·2·2 + 3 = 163, |Σ h·v + b| <= 300·163·2 + 3 < 2^24: exact in fp32.
    const auto x = integers(std::size_t(p.P) * p.C, -2, 2, rng), u = integers(std::size_t(p.C) * p.hidden, -2, 2, rng),
               a = integers(p.hidden, -3, 3, rng), vv = integers(std::size_t(p.hidden) * p.C_out, -2, 2, rng),
               b = integers(p.C_out, -3, 3, rng);
    std::vector<float> z(std::size_t(p.P) * p.C_out, -12345.0f);
    Tensor workspace({int64_t((v->workspace_bytes(p) + 3) / 4)}, DType::f32);  // 64-byte aligned, as the harness's
    v->run(p, {x.data(), u.data(), a.data(), vv.data(), b.data(), z.data(), workspace.data()});

    const auto as_double = [](const std::vector<float>& f) { return std::vector<double>(f.begin(), f.end()); };
    std::vector<double> ref(z.size());
    ref::ffn({p.P, p.C, p.hidden, p.C_out, p.activation}, as_double(x).data(), as_double(u).data(), as_double(a).data(),
             as_double(vv).data(), as_double(b).data(), ref.data());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < z.size(); ++i) mismatches += double(z[i]) != ref[i];
    INFO(name);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("lesson 08: the loop-fused CPU FFN's workspace does not grow with P", "[ffn][cpu][lesson08]") {
  const Variant<FfnProblem>* fused = cpu_variant("02_loop_fused");
  const Variant<FfnProblem>* layered = cpu_variant("01_layer_by_layer");
  REQUIRE(fused != nullptr);
  REQUIRE(layered != nullptr);
  const FfnProblem small{1000, 64, 256, 64, FfnActivation::relu, DType::f32};
  FfnProblem large = small;
  large.P = 128 * 56 * 56;
  CHECK(fused->workspace_bytes(small) == fused->workspace_bytes(large));
  // and it is far below the hidden tensor the layer-by-layer rung keeps, even for small P.
  CHECK(fused->workspace_bytes(large) < std::size_t(small.P) * small.hidden * sizeof(float));
  CHECK(layered->workspace_bytes(large) >= std::size_t(large.P) * large.hidden * sizeof(float));
}

TEST_CASE("lesson 08: two m16n8 accumulator tiles are one m16k16 A fragment, lane for lane", "[mma][cpu][lesson08]") {
  // The fused kernel builds A register r of the second mma from accumulator
  // tile n = r >> 1 (hidden columns 0-7 or 8-15 of the k16 slice), elements
  // 2·(r & 1) and 2·(r & 1) + 1 (rows g or g + 8).
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const int n_tile = reg >> 1, c_index = 2 * (reg & 1) + half;
        const gpu::MatrixCoord in_d = gpu::mma_c_coord(lane, c_index);  // {row, column within the n8 tile}
        const gpu::MatrixCoord in_a = gpu::mma_a_coord(lane, reg, half);  // {row, k}
        INFO("lane " << lane << " reg " << reg << " half " << half);
        CHECK(in_a == gpu::MatrixCoord{in_d.row, in_d.col + 8 * n_tile});
      }
}

TEST_CASE("lesson 08: FfnProblem counts the layer-by-layer bytes on top of the fused form's", "[ffn][cpu][lesson08]") {
  const FfnProblem p{128 * 56 * 56, 64, 256, 64, FfnActivation::relu, DType::f16};
  // x and z: 2 · 401408 · 64 · 2 bytes; weights and biases: (2 · 64 · 256 + 256 + 64) · 2.
  CHECK(p.min_bytes() == 2.0 * 401408 * 64 * 2 + (2.0 * 64 * 256 + 256 + 64) * 2);
  CHECK(p.layer_by_layer_bytes() == p.min_bytes() + 2.0 * (4.0 * 401408 * 256 + 2.0 * 401408 * 64));
  CHECK(p.flops() == 2.0 * 401408 * (64.0 * 256 + 256.0 * 64));
}

}  // namespace
}  // namespace convlab
