// The harness's shared-memory poison (gpu/lib/shared_poison.cu) rests on the hardware keeping an
// SM's shared memory from one kernel to the next; the CUDA model does not promise it. This checks
// it on the GPU at hand: zeros written by one kernel are what the next one reads without writing,
// and after poison_shared_memory() every unit is 0xFF — so a rung that reads shared memory it
// never wrote meets NaN in its checked run.
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/device.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"
#if CONVLAB_HAVE_CUDA
#include "gpu/lib/shared_poison.hpp"
#endif

namespace convlab {
namespace {

TEST_CASE("harness: a checked GPU run starts with NaN in every SM's shared memory", "[harness][gpu]") {
  if (testing::skip_without_gpu()) return;
#if CONVLAB_HAVE_CUDA
  const auto total = [](const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0L); };
  // A kernel's leftovers reach the next kernel: without this, poisoning would do nothing.
  gpu::fill_every_sm_shared(0x00);
  const std::vector<int> after_zeros = gpu::count_shared_units_other_than(0x00);
  REQUIRE(!after_zeros.empty());
  CHECK(total(after_zeros) == 0);
  CHECK(total(gpu::count_shared_units_other_than(0xFF)) > 0);  // the reader can tell them apart
  // The harness's call, unless switched off for this process.
  if (const char* v = std::getenv("CONVLAB_POISON_SHARED"); v && std::strcmp(v, "0") == 0) {
    WARN("CONVLAB_POISON_SHARED=0: the poison itself is not checked");
    return;
  }
  poison_shared_memory();
  const std::vector<int> after_poison = gpu::count_shared_units_other_than(0xFF);
  for (std::size_t sm = 0; sm < after_poison.size(); ++sm) {
    INFO("CTA " << sm << " (one per SM)");
    CHECK(after_poison[sm] == 0);
  }
#else
  FAIL("unreachable: skip_without_gpu() is true in a build without CUDA");
#endif
}

}  // namespace
}  // namespace convlab
