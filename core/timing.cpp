#include "core/timing.hpp"

#include <algorithm>
#include <chrono>

namespace convlab {

double time_once_ms(ICase& c, bool flush_l2) {
  if (c.variant().device == Device::gpu) {
    static GpuTimer timer;  // events are reused: creating them is not free
    if (flush_l2) flush_gpu_l2();
    timer.start();
    c.launch();
    timer.stop();
    const double ms = timer.elapsed_ms();
    device_synchronize(c.variant().id().c_str());  // raise a kernel fault here, not later
    return ms;
  }
  const auto t0 = std::chrono::steady_clock::now();
  c.run();
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

Timing time_case(ICase& c, const TimingOptions& o) {
  for (int i = 0; i < o.warmup; ++i) c.run();
  Timing t;
  double total = 0;
  while (int(t.samples_ms.size()) < o.max_reps &&
         (int(t.samples_ms.size()) < o.min_reps || total < o.min_total_ms)) {
    const double ms = time_once_ms(c, o.flush_l2);
    t.samples_ms.push_back(ms);
    total += ms;
  }
  std::vector<double> sorted = t.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  t.median_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  t.min_ms = sorted.front();
  t.max_ms = sorted.back();
  return t;
}

}  // namespace convlab
