// tests/tour_shape_test.cpp — every lesson's ladder has a tour shape it runs on.
//
// An op's tour table lists shapes in order; the tour and `convlab run` without
// --shape give each variant the first one it supports (app/common.cpp,
// tour_shape_for). So lesson 06's depthwise, grouped and pointwise rungs run
// on their own shapes instead of showing "unsupported" on the dense 3x3.
// Registry-driven: a new rung that fits none of its op's tour shapes fails
// here (CPU) or is named in a warning (GPU).
#include <string>

#include "core/harness.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {

TEST_CASE("tour: every variant supports one of its op's tour shapes for its device", "[tour][cpu]") {
  std::string gpu_without;
  for (const OpHandle* op : all_ops()) {
    const std::vector<VariantInfo> variants = op->variants();
    for (std::size_t i = 0; i < variants.size(); ++i) {
      bool fits = false;
      for (const std::string& spec : op->shapes(ShapeTable::tour, variants[i].device))
        fits |= op->unsupported_reason(i, spec).empty();
      if (variants[i].device == Device::gpu) {
        if (!fits) gpu_without += " " + variants[i].id();
        continue;
      }
      INFO(variants[i].id() << " supports none of " << op->name() << "'s CPU tour shapes");
      CHECK(fits);
    }
  }
  // Named, not failed: this tree's GPU rungs were not built where this test was
  // written; a name here is a row the tour will show as unsupported.
  if (!gpu_without.empty()) WARN("GPU variants that fit no GPU tour shape:" << gpu_without);
}

TEST_CASE("tour: lesson 06's rungs run on their own shapes by default", "[tour][app][cpu]") {
  if (testing::skip_without_program("tour shape test")) return;
  const struct {
    const char* variant;
    const char* expect;
  } cases[] = {{"conv2d/cpu/06a_depthwise", "groups=64"},
               {"conv2d/cpu/06b_grouped", "groups=8"},
               {"conv2d/cpu/06c_pointwise", "R=1,S=1"}};
  for (const auto& c : cases) {
    const testing::ProgramResult r = testing::run_convlab(std::string("run ") + c.variant + " --reps 0");
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(r.out.find(c.expect) != std::string::npos);
    CHECK(r.out.find(" ok ") != std::string::npos);
  }
}

}  // namespace convlab
