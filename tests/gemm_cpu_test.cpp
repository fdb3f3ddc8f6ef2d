// tests/gemm_cpu_test.cpp — lesson 03's CPU GEMM ladder, beyond the shared
// test table.
//
// The registry already runs every gemm variant on the test table (tests/main.cpp).
// Two things it cannot reach are checked here, through the same harness
// (random inputs, NaN-poisoned outputs, the double reference):
//   - the blocking boundaries of cpu/lib/gemm_kernels.hpp, written here from
//     the tunables themselves (the op's test table holds the same boundaries as
//     fixed numbers, so every variant meets them; this keeps them honest if a
//     tunable changes);
//   - the portable micro-kernel that 05/06 fall back to on CPUs without
//     AVX2/FMA: forced here with CONVLAB_NO_AVX2=1, whatever this CPU has.
// And the micro-kernel contract itself, tile by tile, for both kernels.
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/gemm.hpp"
#include "cpu/lib/gemm_kernels.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;

// Shapes that cross every block boundary of both blockings, with ragged edges.
std::vector<GemmProblem> boundary_shapes() {
  using enum DType;
  return {
      {kMR, kNR, kKC, f32},                              // exactly one tile, one depth slice
      {kMC + kMR + 1, 3 * kNR + 5, 2 * kKC + 3, f32},   // 2 row blocks, 3 depth slices (the last 3 deep)
      {2 * kMC - 1, kNR - 1, kKC + 1, f32},             // narrower than one tile; a 1-deep last slice
      {13, kNC + kNR + 3, kKC + 7, f32},                // 2 column panels (N > NC)
      {kBlockM + 3, kBlockN + 9, kBlockK + 2, f32},     // rungs 03c–03d: every block dimension ragged
      {1, 2 * kBlockN + 1, 3 * kBlockK + 1, f32},       // one row, long K
  };
}

std::string spec_of(const GemmProblem& p) { return OpTraits<GemmProblem>::spec(p); }

// Sets an environment variable for one scope and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_CASE("gemm/cpu ladder: every rung across the blocking boundaries", "[gemm][cpu][ladder]") {
  OpHandle* op = find_op("gemm");
  REQUIRE(op != nullptr);
  const std::vector<VariantInfo> variants = op->variants();
  int rungs = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const VariantInfo& v = variants[i];
    if (v.device != Device::cpu || v.lesson != 3 || v.baseline) continue;  // the hand-written rungs
    ++rungs;
    for (const GemmProblem& p : boundary_shapes()) {
      const std::string spec = spec_of(p);
      if (!op->unsupported_reason(i, spec).empty()) continue;
      auto c = op->make_case(i, spec, testing::seed_for(spec));
      testing::check_twice(*c, v.id() + " on " + spec);
    }
  }
  CHECK(rungs >= 6);  // 03a_naive … 03f_openmp
}

TEST_CASE("gemm/cpu micro-kernel choice: run-time check and CONVLAB_NO_AVX2", "[gemm][cpu][microkernel]") {
  CHECK(choose_micro_kernel(true, false).kernel == micro_kernel_avx2);
  CHECK(choose_micro_kernel(false, false).kernel == micro_kernel_portable);  // no AVX2/FMA on this CPU
  CHECK(choose_micro_kernel(true, true).kernel == micro_kernel_portable);    // told not to use them
  {
    ScopedEnv no_avx2("CONVLAB_NO_AVX2", "1");
    const MicroKernelChoice forced = detect_micro_kernel();
    CHECK_FALSE(forced.avx2);
    CHECK(forced.kernel == micro_kernel_portable);
  }
  {
    ScopedEnv zero("CONVLAB_NO_AVX2", "0");  // "0" means "do not disable"
    CHECK(detect_micro_kernel().avx2 == cpu_has_avx2_fma());
  }
}

// The portable path end to end: the very code 03e_microkernel runs (gemm_packed
// with the kernel the run-time selection picks), with the selection forced to
// the fallback, through the harness on the f32 test table and the boundary shapes.
void run_forced_portable(const GemmProblem& p, const Args<GemmProblem>& a) {
  const MicroKernelChoice choice = detect_micro_kernel();  // CONVLAB_NO_AVX2=1 is set by the test
  if (choice.avx2) throw std::runtime_error("CONVLAB_NO_AVX2=1 did not force the portable micro-kernel");
  gemm_packed(p, static_cast<const float*>(a.a), static_cast<const float*>(a.b), static_cast<float*>(a.c),
              a.workspace, choice.kernel);
}
std::size_t one_thread_workspace(const GemmProblem& p) { return packed_workspace_bytes(p, 1); }

TEST_CASE("gemm/cpu/03e_microkernel: portable fallback through the harness", "[gemm][cpu][microkernel]") {
  ScopedEnv no_avx2("CONVLAB_NO_AVX2", "1");
  Variant<GemmProblem> v;
  v.name = "03e_microkernel[CONVLAB_NO_AVX2=1]";
  v.supports = f32_only<GemmProblem>;
  v.run = run_forced_portable;
  v.workspace_bytes = one_thread_workspace;
  const VariantInfo info{"gemm", v.name, Device::cpu, 3, Threads::single, "", false};

  std::vector<GemmProblem> shapes = boundary_shapes();
  for (const GemmProblem& p : OpTraits<GemmProblem>::shapes(ShapeTable::test, Device::cpu))
    if (p.dtype == DType::f32) shapes.push_back(p);
  for (const GemmProblem& p : shapes) {
    const uint64_t seed = testing::seed_for(spec_of(p));
    Case<GemmProblem> c(v, info, p, random_inputs(p, seed), "");
    testing::check_twice(c, info.id() + " on " + spec_of(p));
  }
}

// One tile, straight against the contract: c = ap·bp or c += ap·bp on an
// MR × NR tile inside a wider C (ldc > NR), nothing outside the tile touched.
struct alignas(64) PackedPanels {
  float a[kKC * kMR];  // one A micro-panel, k-major
  float b[kKC * kNR];  // one B micro-panel, k-major
};
static_assert(sizeof(float) * kKC * kMR % 64 == 0, "b must start on a cache line too");

void check_kernel_contract(MicroKernel kernel, const char* name) {
  std::mt19937_64 rng(testing::base_seed());
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  for (int kc : {1, 2, 7, kKC}) {
    for (bool accumulate : {false, true}) {
      const auto panels = std::make_unique<PackedPanels>();  // 64-byte aligned, as the contract promises
      float* ap = panels->a;
      float* bp = panels->b;
      for (int x = 0; x < kc * kMR; ++x) ap[x] = uniform(rng);
      for (int x = 0; x < kc * kNR; ++x) bp[x] = uniform(rng);
      const int ldc = kNR + 5;
      std::vector<float> c(std::size_t(kMR + 1) * ldc), before;
      for (float& x : c) x = accumulate ? uniform(rng) : std::nanf("");  // a non-accumulating kernel must not read C
      before = c;
      kernel(kc, ap, bp, c.data(), ldc, accumulate);
      for (int i = 0; i < kMR + 1; ++i)
        for (int j = 0; j < ldc; ++j) {
          const float got = c[std::size_t(i) * ldc + j], was = before[std::size_t(i) * ldc + j];
          if (i >= kMR || j >= kNR) {  // outside the tile: untouched (NaN stays NaN)
            INFO(name << ": wrote outside the tile at (" << i << ", " << j << ")");
            CHECK((std::isnan(was) ? std::isnan(got) : got == was));
            continue;
          }
          double want = accumulate ? was : 0.0, scale = accumulate ? std::fabs(was) : 0.0;
          for (int k = 0; k < kc; ++k) {
            want += double(ap[k * kMR + i]) * bp[k * kNR + j];
            scale += std::fabs(double(ap[k * kMR + i]) * bp[k * kNR + j]);
          }
          INFO(name << ", kc=" << kc << (accumulate ? ", accumulate" : ", overwrite") << ", element (" << i << ", "
                    << j << "): got " << got << ", want " << want);
          CHECK(std::fabs(got - want) <= 1e-6 * (kc + 1) * scale + 1e-30);
        }
    }
  }
}

TEST_CASE("gemm/cpu micro-kernels keep their contract", "[gemm][cpu][microkernel]") {
  check_kernel_contract(micro_kernel_portable, "micro_kernel_portable");
  if (cpu_has_avx2_fma())
    check_kernel_contract(micro_kernel_avx2, "micro_kernel_avx2");
  else
    WARN("this CPU lacks AVX2/FMA: micro_kernel_avx2 not run (its fallback was)");
}

}  // namespace
}  // namespace convlab
