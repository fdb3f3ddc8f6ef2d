// tests/block_sweep_test.cpp — the two block operations of lessons 10 and 11 on shapes that no
// table lists: seeded random problems, every registered variant that takes one run on it twice
// (fresh random inputs, poisoned outputs) and compared with the double reference.
//
// The op's test table holds each variant's known blocking boundaries; this sweep asks what a
// user asks — "any valid shape?" — by drawing shapes from the whole contract: odd sizes, channel
// counts that are and are not multiples of 8, 16 and 64, e = 1, k = 5, stride 2, SE off, one and
// several images, and (on the GPU) batches of hundreds of tiny images and the channel widths the
// Hopper rungs take (128, 256, 512 for 10e; 192 and 320 output channels for 11g). Each draw is
// capped in FLOPs so that the double reference stays quick. The shapes change from run to run
// (the base seed); a failure names its spec and the seed that replays it (CONVLAB_SEED).
//
// A variant that takes none of a run's draws is named on stderr, not failed: its table test
// (tests/main.cpp) already requires shapes of its own. A run in which no variant takes any draw
// fails, except in a partial GPU build (CONVLAB_GPU_ONLY) that left the op's GPU rungs out.
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/harness.hpp"
#include "ops/convfirst.hpp"
#include "ops/mbconv.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {
namespace {

using Rng = std::mt19937_64;

int pick(Rng& rng, int lo, int hi) { return lo + int(rng() % uint64_t(hi - lo + 1)); }
template <class T> T one_of(Rng& rng, std::initializer_list<T> xs) { return *(xs.begin() + rng() % xs.size()); }
bool chance(Rng& rng, int percent) { return int(rng() % 100) < percent; }

DType draw_dtype(Rng& rng, Device device) {
  if (device == Device::cpu) return DType::f32;
  const int r = pick(rng, 0, 99);
  return r < 50 ? DType::f16 : r < 85 ? DType::bf16 : DType::f32;
}

// A channel count: anything small, or a multiple of 8, 16 or 64 (the widths vector paths and
// wgmma tiles take), on the GPU also the wide widths of the cluster rungs.
int draw_channels(Rng& rng, Device device, int small_max) {
  switch (pick(rng, 0, device == Device::gpu ? 4 : 2)) {
    case 0: return pick(rng, 1, small_max);
    case 1: return 8 * pick(rng, 1, small_max / 8 + 1);
    case 2: return 16 * pick(rng, 1, 6);
    case 3: return 64 * pick(rng, 1, 3);
    default: return one_of(rng, {80, 112, 128, 192, 200});
  }
}

MBConvProblem draw_mbconv(Rng& rng, Device device, double flop_cap) {
  for (;;) {
    MBConvProblem p;
    const bool many_images = device == Device::gpu && chance(rng, 20);  // tiles of several images
    p.N = many_images ? pick(rng, 100, 500) : pick(rng, 1, 3);
    p.H = many_images ? pick(rng, 1, 7) : pick(rng, 1, chance(rng, 20) ? 40 : 20);
    p.W = chance(rng, 50) ? p.H : many_images ? pick(rng, 1, 7) : pick(rng, 1, 24);
    p.C = draw_channels(rng, device, 40);
    p.expand = one_of(rng, {1, 2, 3, 4, 6, 6});
    p.kernel = one_of(rng, {3, 5});
    p.stride = one_of(rng, {1, 1, 2});
    p.se = one_of(rng, {0.0, 0.25, 0.25, 0.5});
    p.C_out = chance(rng, 50) ? p.C : chance(rng, 15) ? one_of(rng, {192, 320}) : draw_channels(rng, device, 48);
    p.activation = chance(rng, 50) ? MBConvActivation::silu : MBConvActivation::relu;
    p.dtype = draw_dtype(rng, device);
    if (p.valid() && p.flops() <= flop_cap) return p;
  }
}

ConvFirstProblem draw_convfirst(Rng& rng, Device device, double flop_cap) {
  for (;;) {
    ConvFirstProblem p;
    p.N = pick(rng, 1, 3);
    p.H = pick(rng, 1, chance(rng, 20) ? 60 : 20);
    p.W = chance(rng, 50) ? p.H : pick(rng, 1, 30);
    // C: any multiple of the group width, or (on the GPU, half the time) the powers of two the
    // fused rungs are built for; at stride 2 C_out = C, 2C (the fused BlurPool rungs) or other.
    p.C = device == Device::gpu && chance(rng, 50) ? one_of(rng, {16, 32, 64, 128, 256, 512}) : 8 * pick(rng, 1, 12);
    p.hidden = chance(rng, 50) ? 4 * p.C : 8 * pick(rng, 1, p.C / 2 + 8);  // α = 4, or any multiple of 8
    if (chance(rng, 10)) p.hidden = pick(rng, 1, 4 * p.C);                 // not a multiple of 8
    p.stride = chance(rng, 65) ? 1 : 2;
    const int r = pick(rng, 0, 9);
    p.C_out = p.stride == 1 || r < 4 ? p.C : r < 8 ? 2 * p.C : 8 * pick(rng, 1, 24);
    p.activation = chance(rng, 50) ? ConvFirstActivation::relu : ConvFirstActivation::silu;
    p.dtype = draw_dtype(rng, device);
    if (p.valid() && p.flops() <= flop_cap) return p;
  }
}

// Every variant of op on `device` over `specs`, shapes outermost (one double reference per
// shape, shared by the variants through the harness's cache).
void sweep(const std::string& op_name, Device device, const std::vector<std::string>& specs) {
  const OpHandle* op = find_op(op_name);
  REQUIRE(op != nullptr);
  const std::vector<VariantInfo> variants = op->variants();
  std::vector<int> taken(variants.size(), 0);
  int runs = 0;
  for (const std::string& spec : specs)
    for (std::size_t i = 0; i < variants.size(); ++i) {
      if (variants[i].device != device || !op->unsupported_reason(i, spec).empty()) continue;
      const std::unique_ptr<ICase> c = op->make_case(i, spec, testing::seed_for(spec));
      testing::check_twice(*c, variants[i].id() + " on the random shape " + spec);
      ++taken[i], ++runs;
    }
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (variants[i].device == device && taken[i] == 0)
      std::cerr << variants[i].id() << ": none of this run's " << specs.size() << " random shapes is in its contract\n";
#ifdef CONVLAB_GPU_ONLY_BUILD
  // CONVLAB_GPU_ONLY left this op's GPU files out (or the rungs its rungs run on): skipped with the
  // reason, as check_variant_on_table skips such a rung, not failed. A full build still fails here.
  if (device == Device::gpu && runs == 0) {
    std::cout << "CONVLAB-SKIP: no GPU variant of " << op_name << " took any of this run's " << specs.size()
              << " random shapes in this partial GPU build (CONVLAB_GPU_ONLY='" << CONVLAB_GPU_ONLY_BUILD << "')\n";
    return;
  }
#endif
  INFO("no variant of " << op_name << " took any random shape");
  CHECK(runs > 0);
}

template <class P, class Draw> std::vector<std::string> draws(uint64_t salt, int count, Draw draw) {
  Rng rng(testing::base_seed() ^ salt);
  std::vector<std::string> specs;
  for (int i = 0; i < count; ++i) specs.push_back(OpTraits<P>::spec(draw(rng)));
  return specs;
}

constexpr double kCpuFlopCap = 1e8, kGpuFlopCap = 1.5e8;

TEST_CASE("mbconv: every CPU rung agrees with the reference on random shapes", "[mbconv][lesson11][cpu][sweep]") {
  sweep("mbconv", Device::cpu, draws<MBConvProblem>(0x11c, 48, [](Rng& r) { return draw_mbconv(r, Device::cpu, kCpuFlopCap); }));
}

TEST_CASE("convfirst: every CPU rung agrees with the reference on random shapes", "[convfirst][lesson10][cpu][sweep]") {
  sweep("convfirst", Device::cpu,
        draws<ConvFirstProblem>(0x10c, 48, [](Rng& r) { return draw_convfirst(r, Device::cpu, kCpuFlopCap); }));
}

TEST_CASE("mbconv: every GPU rung agrees with the reference on random shapes", "[mbconv][lesson11][gpu][sweep]") {
  if (testing::skip_without_gpu()) return;
  sweep("mbconv", Device::gpu, draws<MBConvProblem>(0x11d, 40, [](Rng& r) { return draw_mbconv(r, Device::gpu, kGpuFlopCap); }));
}

TEST_CASE("convfirst: every GPU rung agrees with the reference on random shapes", "[convfirst][lesson10][gpu][sweep]") {
  if (testing::skip_without_gpu()) return;
  sweep("convfirst", Device::gpu,
        draws<ConvFirstProblem>(0x10d, 60, [](Rng& r) { return draw_convfirst(r, Device::gpu, kGpuFlopCap); }));
}

}  // namespace
}  // namespace convlab
