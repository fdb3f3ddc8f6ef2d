#include "tests/support.hpp"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>

#include "tests/catch_compat.hpp"

namespace convlab::testing {

uint64_t base_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("CONVLAB_SEED")) return static_cast<uint64_t>(std::strtoull(env, nullptr, 10));
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007);
  }();
  return seed;
}

uint64_t seed_for(const std::string& spec) { return base_seed() ^ std::hash<std::string>{}(spec); }

bool skip_without_gpu() {
  if (cuda_device_count() > 0) return false;
  std::cout << "CONVLAB-SKIP: no CUDA device visible"
            << (cuda_compiled() ? "" : " (built without CUDA)") << "; GPU test not run\n";
  return true;
}

void check_twice(ICase& c, const std::string& what) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const CompareResult r = checked_run(c);
    INFO(what << ", run " << attempt + 1 << ": " << (r.ok ? "ok" : r.message) << " (rel L2 " << r.rel_l2
              << ", CONVLAB_SEED=" << base_seed() << ")");
    CHECK(r.ok);
  }
}

void check_variant_on_table(const OpHandle& op, std::size_t index) {
  const VariantInfo v = op.variants().at(index);
  if (v.device == Device::cuda && skip_without_gpu()) return;
  int tested = 0;
  for (const std::string& spec : op.shapes(ShapeTable::test, v.device)) {
    if (!op.unsupported_reason(index, spec).empty()) continue;
    ++tested;
    const uint64_t seed = seed_for(spec);
    INFO(v.id() << " on " << spec << " (replay: CONVLAB_SEED=" << base_seed() << ")");
    auto c = op.make_case(index, spec, seed);
    check_twice(*c, v.id() + " on " + spec);
  }
  INFO(v.id() << " supports none of the " << op.name() << " test shapes");
  CHECK(tested > 0);
}

}  // namespace convlab::testing
