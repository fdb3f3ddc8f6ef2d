// tests/lesson05_winograd_test.cpp — lesson 05's claims that the registry tests do not check.
//
//   1. The transforms (cpu/lib/winograd_transforms.hpp) are exact: on small
//      integer inputs, Winograd's F(2,3), F(4,3), F(2×2,3×3) and F(4×4,3×3)
//      reproduce direct correlation with no error at all. The arithmetic is
//      done in int64 with G's integer numerators, so every intermediate is an
//      integer and the result is G_den (1-D) or G_den² (2-D) times the direct
//      one: a rational identity checked exactly, no tolerance.
//   2. The multiply counts the lesson quotes: α per 1-D tile, α² per 2-D tile.
//   3. [winograd][error] — prints the lesson's error table: relative L2 and
//      max-abs error against the double reference (ref::conv2d) for every
//      Winograd variant and, beside them, the direct (implicit GEMM) rungs on
//      the same inputs. GPU rows appear only where a GPU is visible:
//        build/convlab_tests "[winograd][error]"
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/harness.hpp"
#include "cpu/lib/winograd_transforms.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {
namespace {

// y = Aᵀ [(G_num g) ⊙ (Bᵀ d)] in integers; equals G_den · (d ⋆ g). Adds the
// number of data-times-filter multiplies it did (the ⊙) to *multiplies if given.
template <int m>
std::vector<int64_t> winograd_1d(const std::vector<int64_t>& d, const std::vector<int64_t>& g,
                                 int* multiplies = nullptr) {
  using T = winograd::Transform<m>;
  constexpr int alpha = T::alpha;
  int64_t product[alpha];
  for (int e = 0; e < alpha; ++e) {
    int64_t u = 0, v = 0;
    for (int r = 0; r < 3; ++r) u += T::G_num[e][r] * g[r];
    for (int i = 0; i < alpha; ++i) v += T::BT[e][i] * d[i];
    product[e] = u * v;  // the one multiply per point
    if (multiplies) ++*multiplies;
  }
  std::vector<int64_t> y(m, 0);
  for (int i = 0; i < m; ++i)
    for (int e = 0; e < alpha; ++e) y[i] += T::AT[i][e] * product[e];
  return y;
}

// Y = Aᵀ [(G_num g G_numᵀ) ⊙ (Bᵀ d B)] A in integers; equals G_den² · (d ⋆ g).
// Counts its ⊙ multiplies into *multiplies as winograd_1d does.
template <int m>
std::vector<int64_t> winograd_2d(const std::vector<int64_t>& d, const std::vector<int64_t>& g,
                                 int* multiplies = nullptr) {
  using T = winograd::Transform<m>;
  constexpr int a = T::alpha;
  int64_t U[a][a] = {}, V[a][a] = {}, Mm[a][a];
  for (int i = 0; i < a; ++i)
    for (int j = 0; j < a; ++j) {
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) U[i][j] += T::G_num[i][r] * g[r * 3 + s] * T::G_num[j][s];
      for (int k = 0; k < a; ++k)
        for (int l = 0; l < a; ++l) V[i][j] += T::BT[i][k] * d[k * a + l] * T::BT[j][l];
      Mm[i][j] = U[i][j] * V[i][j];
      if (multiplies) ++*multiplies;
    }
  std::vector<int64_t> Y(m * m, 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j)
      for (int k = 0; k < a; ++k)
        for (int l = 0; l < a; ++l) Y[i * m + j] += T::AT[i][k] * Mm[k][l] * T::AT[j][l];
  return Y;
}

std::vector<int64_t> random_ints(std::mt19937_64& rng, int n) {
  std::uniform_int_distribution<int> dist(-9, 9);
  std::vector<int64_t> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

template <int m> void check_1d_exact() {
  using T = winograd::Transform<m>;
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 1000; ++trial) {
    const auto d = random_ints(rng, T::alpha), g = random_ints(rng, 3);
    const auto y = winograd_1d<m>(d, g);
    for (int i = 0; i < m; ++i) {
      int64_t direct = 0;
      for (int r = 0; r < 3; ++r) direct += d[i + r] * g[r];
      REQUIRE(y[i] == T::G_den * direct);
    }
  }
  // Each basis input alone: catches a transform that is right only on average.
  for (int i = 0; i < T::alpha; ++i)
    for (int r = 0; r < 3; ++r) {
      std::vector<int64_t> d(T::alpha, 0), g(3, 0);
      d[i] = 1;
      g[r] = 1;
      const auto y = winograd_1d<m>(d, g);
      for (int o = 0; o < m; ++o) REQUIRE(y[o] == T::G_den * (o + r == i ? 1 : 0));
    }
}

template <int m> void check_2d_exact() {
  using T = winograd::Transform<m>;
  constexpr int a = T::alpha;
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    const auto d = random_ints(rng, a * a), g = random_ints(rng, 9);
    const auto Y = winograd_2d<m>(d, g);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j) {
        int64_t direct = 0;
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) direct += d[(i + r) * a + j + s] * g[r * 3 + s];
        REQUIRE(Y[i * m + j] == T::G_den * T::G_den * direct);
      }
  }
}

TEST_CASE("lesson 05: F(2,3) and F(4,3) are exact in integer arithmetic", "[winograd][cpu][lesson05]") {
  check_1d_exact<2>();
  check_1d_exact<4>();
}

TEST_CASE("lesson 05: F(2x2,3x3) and F(4x4,3x3) are exact in integer arithmetic", "[winograd][cpu][lesson05]") {
  check_2d_exact<2>();
  check_2d_exact<4>();
}

TEST_CASE("lesson 05: multiplies per tile", "[winograd][cpu][lesson05]") {
  // Count the data-times-filter multiplies the integer algorithms above do for
  // one tile (the transforms multiply by constants only), against direct
  // correlation's 3 per output in 1-D and 9 per output in 2-D.
  std::mt19937_64 rng(5);
  const auto count_1d = [&](auto tag) {
    constexpr int m = decltype(tag)::value;
    int n = 0;
    winograd_1d<m>(random_ints(rng, m + 2), random_ints(rng, 3), &n);
    return n;
  };
  const auto count_2d = [&](auto tag) {
    constexpr int m = decltype(tag)::value;
    int n = 0;
    winograd_2d<m>(random_ints(rng, (m + 2) * (m + 2)), random_ints(rng, 9), &n);
    return n;
  };
  CHECK(count_1d(std::integral_constant<int, 2>{}) == 4);    // F(2,3): 4 instead of 6
  CHECK(count_1d(std::integral_constant<int, 4>{}) == 6);    // F(4,3): 6 instead of 12
  CHECK(count_2d(std::integral_constant<int, 2>{}) == 16);   // F(2x2,3x3): 16 instead of 36, 2.25x
  CHECK(count_2d(std::integral_constant<int, 4>{}) == 36);   // F(4x4,3x3): 36 instead of 144, 4x
}

// ---- the error table ----------------------------------------------------------
bool in_error_table(const VariantInfo& v) {
  if (v.name.find("winograd") != std::string::npos) return true;
  // the direct rungs beside them, for scale
  return v.name == "04a_implicit_gemm" || v.name == "04a_implicit_gemm" || v.name == "04b_implicit_gemm_tensor_core";
}

TEST_CASE("lesson 05: error of Winograd vs direct convolution against the double reference",
          "[winograd][error][lesson05]") {
  OpHandle* op = find_op("conv2d");
  REQUIRE(op != nullptr);
  const auto variants = op->variants();
  const bool gpu = cuda_device_count() > 0;
  const std::vector<std::string> specs = {"N=2,H=28,W=28,C=64,K=64,R=3,pad=1,dtype=f32",
                                          "N=2,H=28,W=28,C=256,K=64,R=3,pad=1,dtype=f32",
                                          "N=2,H=28,W=28,C=64,K=64,R=3,pad=1,dtype=f16"};
  std::printf("\n%-44s %-6s %5s %10s %12s %10s %10s  %s\n", "variant", "dtype", "C", "rel L2", "max|err|/max|ref|",
              "bound L2", "bound abs", "check");
  int rows = 0;
  for (const std::string& spec : specs) {
    for (std::size_t i = 0; i < variants.size(); ++i) {
      const VariantInfo& v = variants[i];
      if (!in_error_table(v) || (v.device == Device::gpu && !gpu)) continue;
      if (!op->unsupported_reason(i, spec).empty()) continue;
      auto c = op->make_case(i, spec, 20261130);
      const CompareResult r = checked_run(*c);
      const auto dtype = spec.substr(spec.find("dtype=") + 6);
      const auto C = spec.substr(spec.find("C=") + 2, spec.find(",K=") - spec.find("C=") - 2);
      std::printf("%-44s %-6s %5s %10.2e %12.2e %10.2e %10.2e  %s\n", v.id().c_str(), dtype.c_str(), C.c_str(),
                  r.rel_l2, r.max_abs_err / r.max_abs_ref, r.bound.rel_l2, r.bound.abs_rel, r.ok ? "ok" : "FAIL");
      CHECK(r.ok);
      ++rows;
    }
  }
  std::printf("(inputs uniform(-1,1), seed 20261130; %s)\n", gpu ? "GPU rows included" : "no GPU here: CPU rows only");
  CHECK(rows > 0);
}

}  // namespace
}  // namespace convlab
