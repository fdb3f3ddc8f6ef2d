// gpu/lib/phase_stamps.cu — the host half of gpu/lib/phase_stamps.cuh: one buffer of stamps per
// launch, and the one-line report of the phases' times over the CTAs.
#include "gpu/lib/phase_stamps.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/device.hpp"

namespace convlab::gpu {

PhaseStamps::PhaseStamps(std::string kernel, int ctas, std::vector<std::string> names)
    : kernel_(std::move(kernel)), ctas_(ctas), names_(std::move(names)) {
  const char* on = std::getenv("CONVLAB_PHASE_STAMPS");
  if (on == nullptr || *on == '\0' || std::string(on) == "0" || ctas_ <= 0) return;
  const std::size_t bytes = std::size_t(ctas_) * kinds() * sizeof(unsigned long long);
  stamps_ = static_cast<unsigned long long*>(device_malloc(bytes));
  device_memset(stamps_, 0, bytes);
}

PhaseStamps::~PhaseStamps() { device_free(stamps_); }

void PhaseStamps::report() const {
  if (stamps_ == nullptr) return;
  device_synchronize("phase stamps");
  const int k = kinds();
  std::vector<unsigned long long> s(std::size_t(ctas_) * k);
  copy_bytes(s.data(), Device::cpu, stamps_, Device::gpu, s.size() * sizeof(s[0]));
  const auto at = [&](int cta, int i) { return s[std::size_t(cta) * k + i]; };
  // A phase's time in each CTA (µs); a CTA missing a stamp (a kernel path that skips it) is left out.
  std::string line = kernel_ + " phases over " + std::to_string(ctas_) + " CTAs, µs median/max:";
  char buf[160];
  for (int i = 0; i + 1 < k; ++i) {
    std::vector<double> d;
    for (int c = 0; c < ctas_; ++c)
      if (at(c, i) != 0 && at(c, i + 1) != 0) d.push_back(double(at(c, i + 1)) - double(at(c, i)));
    if (d.empty()) continue;
    std::sort(d.begin(), d.end());
    std::snprintf(buf, sizeof buf, " %s %.2f/%.2f;", names_[i].c_str(), d[d.size() / 2] / 1e3, d.back() / 1e3);
    line += buf;
  }
  unsigned long long first_in = ~0ull, last_in = 0, first_out = ~0ull, last_out = 0;
  for (int c = 0; c < ctas_; ++c) {
    first_in = std::min(first_in, at(c, 0)), last_in = std::max(last_in, at(c, 0));
    first_out = std::min(first_out, at(c, k - 1)), last_out = std::max(last_out, at(c, k - 1));
  }
  std::snprintf(buf, sizeof buf, " entries spread %.2f, exits spread %.2f, first entry to last exit %.2f",
                double(last_in - first_in) / 1e3, double(last_out - first_out) / 1e3,
                double(last_out - first_in) / 1e3);
  line += buf;
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace convlab::gpu
