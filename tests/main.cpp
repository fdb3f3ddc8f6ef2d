// tests/main.cpp — the registry-driven correctness tests.
//
// At start-up, before Catch runs, one test case is registered per variant:
// "conv2d/cpu/01b_openmp" with tags [conv2d][cpu]. Each case runs its variant on
// every shape of its operation's test table that the variant supports, with
// fresh random inputs and poisoned outputs, and compares against the double
// reference. Nothing here names a variant: a new file in cpu/, gpu/ or
// students/ is tested without any edit. GPU cases on a machine without a GPU
// print CONVLAB-SKIP, which CTest counts as skipped.
#include <chrono>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <string>

#include "core/harness.hpp"
#define CATCH_CONFIG_RUNNER  // Catch2 v2: this file holds the implementation
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace {

using namespace convlab;

struct VariantTest final : Catch::ITestInvoker {
  VariantTest(const OpHandle* op, std::size_t index) : op(op), index(index) {}
  void invoke() const override { convlab::testing::check_variant_on_table(*op, index); }
  const OpHandle* op;
  std::size_t index;
};

void register_variant_tests() {
  static std::deque<std::string> names;  // Catch keeps references to these
  for (const OpHandle* op : all_ops()) {
    const auto variants = op->variants();
    for (std::size_t i = 0; i < variants.size(); ++i) {
      const VariantInfo& v = variants[i];
      names.push_back(v.id());
      const std::string& name = names.back();
      names.push_back("[" + v.op + "][" + (v.device == Device::gpu ? "gpu" : "cpu") + "][variant]");
      const std::string& tags = names.back();
#if CONVLAB_CATCH_V3
      Catch::AutoReg(Catch::Detail::make_unique<VariantTest>(op, i), Catch::SourceLineInfo(__FILE__, __LINE__),
                     Catch::StringRef(), Catch::NameAndTags(name, tags));
#else
      Catch::AutoReg(new VariantTest(op, i), Catch::SourceLineInfo(__FILE__, __LINE__), Catch::StringRef(),
                     Catch::NameAndTags(name, tags));
#endif
    }
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  register_variant_tests();
  return Catch::Session().run(argc, argv);
}
