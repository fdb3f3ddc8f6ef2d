// tests/lesson11_mbconv_test.cpp — lesson 11's claims that the registry tests do not check.
//
// The registry tests run every mbconv rung on the test table against
// ref::mbconv_block. Beside that:
//
//   1. The descriptor's counts, by hand on a tiny block (MACs, compulsory
//      bytes, each plan's bytes), and the plans agree with the descriptor.
//   2. The SE pools each image alone, in every CPU rung: a batch of two
//      images that differ gives, image by image, what each image gives alone.
//   3. The fused CPU rung's workspace does not grow with N.
//   4. `convlab run mbconv --in` takes 11, 9, 7 or 5 files and refuses
//      other counts and mismatches with one line; the spec round-trips.
//   5. `convlab plans mbconv` prints the plans; --json parses.
//   6. The CPU rungs' branch-free exp/SiLU (cpu/lib/mbconv_cpu.hpp) is fp32-accurate, tails included.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/npy.hpp"
#include "core/registry.hpp"
#include "cpu/lib/mbconv_cpu.hpp"
#include "ops/mbconv.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace {

using namespace convlab;

MBConvProblem block(int N, int H, int W, int C, int e, int k, int stride, double se, int C_out,
                    DType dtype = DType::f32) {
  MBConvProblem p;
  p.N = N, p.H = H, p.W = W, p.C = C, p.expand = e, p.kernel = k, p.stride = stride, p.se = se, p.C_out = C_out;
  p.dtype = dtype;
  return p;
}

using convlab::testing::contains;

std::filesystem::path work_dir() { return convlab::testing::scratch_dir("l11_test"); }

using convlab::testing::random_tensor;

}  // namespace

TEST_CASE("mbconv: the descriptor's counts by hand", "[mbconv][lesson11][cpu]") {
  // N=2, 3x4 image, C=8, e=2 (hidden 16), k=3, stride 1, se 0.25 (Cr = 2), C_out = 8: a residual block.
  const MBConvProblem p = block(2, 3, 4, 8, 2, 3, 1, 0.25, 8);
  REQUIRE(p.hidden() == 16);
  REQUIRE(p.se_channels() == 2);
  REQUIRE(p.has_residual());
  CHECK(p.expand_macs() == 24.0 * 8 * 16);
  CHECK(p.depthwise_macs() == 24.0 * 16 * 9);
  CHECK(p.se_macs() == 2.0 * 2 * 16 * 2);
  CHECK(p.project_macs() == 24.0 * 16 * 8);
  CHECK(p.macs() == 3072.0 + 3456 + 128 + 3072);
  const double weights = (8 * 16 + 16) + (16 * 9 + 16) + (16 * 2 + 2 + 2 * 16 + 16) + (16 * 8 + 8);
  CHECK(p.weight_elems() == weights);
  CHECK(p.min_bytes() == 4.0 * (192 + weights + 192));
  // e (24 x 16) twice, d five times (write, pool, gate read + write, project), m and g 4 x 32, x again.
  CHECK(p.layer_by_layer_bytes() == p.min_bytes() + 4.0 * (2 * 384 + 5 * 384 + 4 * 32 + 192));
  CHECK(p.two_pass_recompute_bytes() == p.min_bytes() + 4.0 * (192 + 8 * 16 + 16 + 16 * 9 + 16) + (8.0 + 8.0) * 32);
  CHECK(p.two_pass_store_bytes() == p.min_bytes() + 4.0 * 384 + 4.0 * 192 + (8.0 + 8.0) * 32);

  // EfficientNet's SE width: from the INPUT channels, at least 1.
  CHECK(block(1, 1, 1, 3, 6, 3, 1, 0.25, 3).se_channels() == 1);
  CHECK(block(1, 1, 1, 40, 6, 3, 1, 0.25, 40).se_channels() == 10);
  CHECK(block(1, 1, 1, 40, 6, 3, 1, 0.0, 40).se_channels() == 0);
  // e = 1: no expand layer, no e tensor; k = 5 at stride 2 on an odd image.
  const MBConvProblem s = block(1, 7, 5, 32, 1, 5, 2, 0.25, 16);
  CHECK(s.P() == 4);
  CHECK(s.Q() == 3);
  CHECK(s.expand_macs() == 0.0);
  CHECK(s.e_elems() == 0.0);
  CHECK(s.depthwise_macs() == 12.0 * 32 * 25);
  CHECK(!s.has_residual());
}

TEST_CASE("mbconv: every plan adds up to the descriptor", "[mbconv][lesson11][cpu]") {
  for (const MBConvProblem& p : {block(2, 7, 9, 16, 6, 3, 1, 0.25, 16, DType::f16), block(1, 13, 7, 24, 1, 5, 2, 0.25, 40),
                                 block(3, 7, 7, 8, 4, 3, 2, 0.0, 8), block(1, 9, 9, 16, 6, 5, 1, 0.0, 16)}) {
    INFO(OpTraits<MBConvProblem>::spec(p));
    const std::vector<MBConvPlan> plans = mbconv_plans(p);
    const auto close = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(b), 1.0); };
    const double d_image = p.d_elems() / p.N * dtype_size(p.dtype);
    const bool per_image = p.has_se() && d_image <= kImageOnChipBytes;
    const bool per_cluster = p.has_se() && p.P() >= kImageCluster && d_image <= kImageCluster * kImageOnChipBytes;
    REQUIRE(plans.size() == (p.has_se() ? 3u + per_image + per_cluster : 2u));
    CHECK(plans[0].name == "layer_by_layer");
    CHECK(close(plans[0].dram_bytes(), p.layer_by_layer_bytes()));
    CHECK(close(plans[0].macs(), p.macs()));
    if (p.has_se()) {
      CHECK(plans[1].name == "two_pass_recompute");
      CHECK(close(plans[1].dram_bytes(), p.two_pass_recompute_bytes()));
      CHECK(close(plans[1].macs(), p.macs() + p.expand_macs() + p.depthwise_macs()));  // the recompute
      CHECK(plans[2].name == "two_pass_store");
      CHECK(close(plans[2].dram_bytes(), p.two_pass_store_bytes()));
      CHECK(close(plans[2].macs(), p.macs()));
      CHECK(p.two_pass_recompute_bytes() < p.layer_by_layer_bytes());
      if (per_image) {
        CHECK(plans[3].name == "one_kernel_per_image");
        CHECK(close(plans[3].dram_bytes(), p.min_bytes()));
        CHECK(close(plans[3].macs(), p.macs()));
        CHECK(close(plans[3].global_bytes, dtype_size(p.dtype) * (p.x_elems() + p.N * p.weight_elems() + p.y_elems())));
      }
      if (per_cluster) {
        const MBConvPlan& c = plans.back();
        CHECK(c.name == "one_kernel_per_image_cluster");
        CHECK(close(c.dram_bytes(), p.min_bytes()));
        CHECK(c.macs() >= p.macs());  // the halo rows' expand, made by two bands
        CHECK(c.macs() <= p.macs() + p.expand_macs() * (kImageCluster - 1) * (p.kernel - 1.0) / p.H + 1e-6);
      }
    } else {
      CHECK(plans[1].name == "single_pass");
      CHECK(close(plans[1].dram_bytes(), p.min_bytes()));
      CHECK(close(plans[1].macs(), p.macs()));
    }
    CHECK(p.suite_layer_by_layer_bytes() > p.layer_by_layer_bytes());
  }
}

TEST_CASE("mbconv: the one-kernel-per-image plan exists where one image's d fits a CTA", "[mbconv][lesson11][cpu]") {
  const auto has = [](const MBConvProblem& p) {
    for (const MBConvPlan& plan : mbconv_plans(p))
      if (plan.name == "one_kernel_per_image") return true;
    return false;
  };
  CHECK(has(block(128, 7, 7, 192, 6, 3, 1, 0.25, 192, DType::f16)));    // d of one image: 113 KB
  CHECK(has(block(128, 14, 14, 112, 6, 5, 2, 0.25, 192, DType::f16)));  // stride 2: d is 7 × 7
  CHECK_FALSE(has(block(128, 14, 14, 112, 6, 3, 1, 0.25, 112, DType::f16)));  // 263 KB
  CHECK_FALSE(has(block(128, 56, 56, 24, 6, 3, 1, 0.25, 24, DType::f16)));    // 903 KB
  CHECK_FALSE(has(block(128, 7, 7, 192, 6, 3, 1, 0.0, 192, DType::f16)));     // no SE: the single pass
}

TEST_CASE("mbconv: the plan over a cluster counts the halo's expand twice and exists where d fits two CTAs",
          "[mbconv][lesson11][cpu]") {
  const auto cluster_plan = [](const MBConvProblem& p) -> std::optional<MBConvPlan> {
    for (const MBConvPlan& plan : mbconv_plans(p))
      if (plan.name == "one_kernel_per_image_cluster") return plan;
    return std::nullopt;
  };
  // C = 80 @ 14², K = 3: bands of 7 output rows expand 8 input rows each, 16 of 14.
  const MBConvProblem p80 = block(128, 14, 14, 80, 6, 3, 1, 0.25, 80, DType::f16);
  const std::optional<MBConvPlan> c = cluster_plan(p80);
  REQUIRE(c.has_value());
  CHECK(std::abs(c->macs() - (p80.macs() + p80.expand_macs() * 2.0 / 14)) <= 1e-6 * p80.macs());
  CHECK(cluster_plan(block(128, 14, 14, 112, 6, 3, 1, 0.25, 112, DType::f16)).has_value());  // 263 KB: two CTAs
  CHECK(cluster_plan(block(128, 28, 28, 40, 6, 3, 1, 0.25, 40, DType::f16)).has_value());    // 376 KB: two CTAs
  CHECK_FALSE(cluster_plan(block(128, 56, 56, 24, 6, 3, 1, 0.25, 24, DType::f16)).has_value());  // 903 KB
  CHECK_FALSE(cluster_plan(block(1, 1, 1, 16, 6, 3, 1, 0.25, 16, DType::f16)).has_value());      // one output row
}

TEST_CASE("mbconv: every CPU rung pools the SE per image", "[mbconv][lesson11][cpu]") {
  // Image 1 is image 0 scaled and shifted: its pooled means, hence its gates,
  // differ. Each image of the batch's y must equal that image run alone.
  const MBConvProblem batch = block(2, 9, 7, 8, 4, 3, 1, 0.25, 8);
  MBConvProblem one = batch;
  one.N = 1;
  std::vector<Tensor> in;
  for (const TensorSpec& s : OpTraits<MBConvProblem>::inputs(batch)) in.push_back(random_tensor(s.shape, in.size() + 77, s.scale));
  float* x = static_cast<float*>(in[0].data());
  const std::size_t image = std::size_t(9) * 7 * 8;
  for (std::size_t i = 0; i < image; ++i) x[image + i] = 2.5f * x[i] + 0.75f;
  int rungs = 0;
  for (const Variant<MBConvProblem>& v : Registry<MBConvProblem>::variants()) {
    if (v.device != Device::cpu || !v.supports(batch)) continue;
    ++rungs;
    INFO(v.name);
    std::vector<Tensor> out_batch, out_one;
    out_batch.emplace_back(Shape{2, 9, 7, 8}, DType::f32);
    out_one.emplace_back(Shape{1, 9, 7, 8}, DType::f32);
    // The workspace as the harness gives it: a host Tensor, 64-byte aligned (the CPU GEMM
    // library's packed panels rely on it; docs/adding-a-rung.md).
    Tensor ws({int64_t(std::max(v.workspace_bytes(batch), v.workspace_bytes(one)) / 4 + 16)}, DType::f32);
    out_batch[0].poison();
    v.run(batch, OpTraits<MBConvProblem>::bind(in, out_batch, ws.data()));
    const auto* yb = static_cast<const float*>(out_batch[0].data());
    for (int n = 0; n < 2; ++n) {
      std::vector<Tensor> alone;
      for (std::size_t t = 0; t < in.size(); ++t) {
        if (t == 0) {
          alone.emplace_back(Shape{1, 9, 7, 8}, DType::f32);
          std::memcpy(alone[0].data(), x + n * image, image * sizeof(float));
        } else {
          alone.push_back(in[t].to(Device::cpu));
        }
      }
      out_one[0].poison();
      v.run(one, OpTraits<MBConvProblem>::bind(alone, out_one, ws.data()));
      const auto* y1 = static_cast<const float*>(out_one[0].data());
      double worst = 0;
      for (std::size_t i = 0; i < image; ++i) worst = std::max(worst, double(std::abs(y1[i] - yb[n * image + i])));
      CHECK(worst < 1e-4);
    }
    // And the two images' outputs do differ (the test would not see mixing otherwise).
    double diff = 0;
    for (std::size_t i = 0; i < image; ++i) diff = std::max(diff, double(std::abs(yb[i] - yb[image + i])));
    CHECK(diff > 0.1);
  }
  CHECK(rungs >= 2);
}

TEST_CASE("mbconv: the fused CPU rung's workspace does not grow with the batch", "[mbconv][lesson11][cpu]") {
  const std::size_t small = testing::workspace_of("mbconv", Device::cpu, "11b_fused_two_pass", "N=1,H=56,C=24,se=0");
  const std::size_t big = testing::workspace_of("mbconv", Device::cpu, "11b_fused_two_pass", "N=64,H=56,C=24,se=0");
  CHECK(small == big);
  const std::size_t layers = testing::workspace_of("mbconv", Device::cpu, "11a_layer_by_layer", "N=8,H=56,C=24");
  CHECK(layers > 8u * 56 * 56 * 144 * 4);  // at least e in memory
}

TEST_CASE("mbconv: the spec round-trips and bad specs are refused", "[mbconv][lesson11][cpu]") {
  for (const MBConvProblem& p : OpTraits<MBConvProblem>::shapes(ShapeTable::test, Device::cpu)) {
    const MBConvProblem q = OpTraits<MBConvProblem>::parse(OpTraits<MBConvProblem>::spec(p));
    CHECK(OpTraits<MBConvProblem>::spec(q) == OpTraits<MBConvProblem>::spec(p));
    CHECK(q.se_channels() == p.se_channels());
  }
  for (const char* bad : {"k=4", "stride=3", "se=-1", "se=abc", "e=0", "act=gelu", "C=0", "se=nan", "se=0.25x"}) {
    INFO(bad);
    bool refused = false;
    try {
      OpTraits<MBConvProblem>::parse(bad);
    } catch (const SpecError&) {
      refused = true;
    }
    CHECK(refused);
  }
}

TEST_CASE("mbconv: convlab run --in takes 11, 9, 7 or 5 files", "[mbconv][lesson11][app][cpu]") {
  if (testing::skip_without_program("lesson 11 app test")) return;
  const auto dir = work_dir();
  const auto file = [&](const std::string& name, const Shape& shape, uint64_t seed, double scale) {
    const std::string path = (dir / (name + ".npy")).string();
    write_npy(path, random_tensor(shape, seed, scale));
    return path;
  };
  // C = 8, hidden 24 (e = 3), k = 5, Cr = 2, C_out = 8; 7x5 image.
  const std::string x = file("x", {1, 7, 5, 8}, 1, 1.0), ew = file("ew", {8, 24}, 2, 0.5), eb = file("eb", {24}, 3, 0.5),
                    dw = file("dw", {24, 5, 5, 1}, 4, 0.3), db = file("db", {24}, 5, 0.5),
                    s1w = file("s1w", {24, 2}, 6, 0.5), s1b = file("s1b", {2}, 7, 0.5), s2w = file("s2w", {2, 24}, 8, 0.5),
                    s2b = file("s2b", {24}, 9, 0.5), pw = file("pw", {24, 8}, 10, 0.4), pb = file("pb", {8}, 11, 0.5);
  // Without expand: the depthwise runs on x's 8 channels.
  const std::string dw8 = file("dw8", {8, 5, 5, 1}, 12, 0.3), db8 = file("db8", {8}, 13, 0.5),
                    s1w8 = file("s1w8", {8, 2}, 14, 0.5), s2w8 = file("s2w8", {2, 8}, 15, 0.5),
                    s2b8 = file("s2b8", {8}, 16, 0.5), pw8 = file("pw8", {8, 8}, 17, 0.4);
  const auto join = [](const std::vector<std::string>& files) {
    std::string s;
    for (const std::string& f : files) s += (s.empty() ? "" : ",") + f;
    return s;
  };
  const std::string out = (dir / "y.npy").string();
  struct Ok {
    std::vector<std::string> files;
    std::string options;
    Shape y;
  };
  for (const Ok& ok : {Ok{{x, ew, eb, dw, db, s1w, s1b, s2w, s2b, pw, pb}, "", {1, 7, 5, 8}},
                       Ok{{x, ew, eb, dw, db, s1w, s1b, s2w, s2b, pw, pb}, "--shape stride=2,act=relu", {1, 4, 3, 8}},
                       Ok{{x, dw8, db8, s1w8, s1b, s2w8, s2b8, pw8, pb}, "", {1, 7, 5, 8}},
                       Ok{{x, ew, eb, dw, db, pw, pb}, "", {1, 7, 5, 8}},
                       Ok{{x, dw8, db8, pw8, pb}, "--shape stride=2", {1, 4, 3, 8}}}) {
    const testing::ProgramResult r = testing::run_convlab("run mbconv --in " + join(ok.files) + " " + ok.options + " --out " + out);
    INFO(ok.files.size() << " files: " << r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(contains(r.out, " ok "));
    CHECK(read_npy(out).shape() == ok.y);
  }
  struct Refusal {
    std::string args, says;
  };
  for (const Refusal& r : {Refusal{"run mbconv --in " + join({x, ew, eb, dw, db, s1w}), "takes 11 input files"},
                           Refusal{"run mbconv --in " + join({x, ew, eb, dw8, db, pw, pb}), "dw_w"},
                           Refusal{"run mbconv --in " + join({x, ew, eb, dw, db, pw, pb}) + " --shape k=3", "k"},
                           Refusal{"run mbconv --in " + join({x, dw8, db8, pw8, pb}) + " --shape stride=3", "stride"}}) {
    testing::check_refused(r.args, 2, {r.says});
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("mbconv: convlab plans prints the tensor machines", "[mbconv][lesson11][app][cpu]") {
  if (testing::skip_without_program("lesson 11 app test")) return;
  const testing::ProgramResult text = testing::run_convlab("plans mbconv --shape N=8,H=14,C=24,dtype=f16 --machine h200");
  INFO(text.err);
  REQUIRE(text.status == 0);
  for (const char* part : {"plan layer_by_layer", "plan two_pass_recompute", "plan two_pass_store", "DRAM",
                           "local (smem/regs)", "attainable", "depthwise"})
    CHECK(contains(text.out, part));
  const testing::ProgramResult js = testing::run_convlab("plans mbconv --json --shape N=8,H=14,C=24,se=0,dtype=f16 --machine h200");
  REQUIRE(js.status == 0);
  const json::Value v = json::parse(js.out);
  const json::Value* plans = v.find("plans");
  REQUIRE(plans != nullptr);
  CHECK(plans->items.size() == 2);
  CHECK(contains(js.out, "single_pass"));
  CHECK(testing::run_convlab("plans mbconv --shape k=4").status == 2);
}

TEST_CASE("mbconv: the CPU rungs' branch-free exp and SiLU keep fp32 accuracy, tails included", "[mbconv][lesson11][cpu]") {
  double worst_exp = 0, worst_silu = 0;
  for (double x = -87.0; x <= 87.0; x += 0.37e-3) {
    const float xf = float(x);
    const double exact = std::exp(double(xf));
    worst_exp = std::max(worst_exp, std::abs(double(cpu_mbconv::exp_fast(xf)) - exact) / exact);
  }
  for (double x = -300.0; x <= 300.0; x += 1.3e-3) {
    const float xf = float(x);
    const double exact = double(xf) / (1.0 + std::exp(-double(xf)));
    const double got = cpu_mbconv::activate(MBConvActivation::silu, xf);
    worst_silu = std::max(worst_silu, std::abs(got - exact) / std::max(std::abs(exact), 1e-30));
  }
  CHECK(worst_exp < 3e-7);
  CHECK(worst_silu < 1e-6);
  // The tails: SiLU(-300) is -0 to fp32, SiLU(300) is 300; nothing is NaN.
  CHECK(cpu_mbconv::activate(MBConvActivation::silu, -300.0f) == 0.0f);
  CHECK(cpu_mbconv::activate(MBConvActivation::silu, 300.0f) == 300.0f);
  CHECK(cpu_mbconv::activate(MBConvActivation::relu, -2.0f) == 0.0f);
}
