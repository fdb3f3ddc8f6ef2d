#include "core/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

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

SampleStats summarize(const std::vector<double>& samples) {
  SampleStats s;
  if (samples.empty()) return s;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  s.min = sorted.front();
  s.max = sorted.back();
  double sum = 0;
  for (double v : sorted) sum += v;
  s.mean = sum / double(n);
  double sq = 0;
  for (double v : sorted) sq += (v - s.mean) * (v - s.mean);
  s.cv = n > 1 && s.mean > 0 ? std::sqrt(sq / double(n - 1)) / s.mean : 0;
  return s;
}

Timing time_case(ICase& c, const TimingOptions& o) {
  for (int i = 0; i < o.warmup; ++i) c.run();
  Timing t;
  double total = 0;
  auto take = [&](std::size_t until_count, double until_ms) {
    while (int(t.samples_ms.size()) < o.max_reps && total < o.max_total_ms &&
           (t.samples_ms.size() < until_count || total < until_ms)) {
      const double ms = time_once_ms(c, o.flush_l2);
      t.samples_ms.push_back(ms);
      total += ms;
    }
  };
  // Round 1: min_reps and min_total_ms. Then each round doubles the sample
  // (and the time) until the median stops moving, or a cap is hit.
  take(std::size_t(std::max(1, o.min_reps)), o.min_total_ms);
  t.rounds = 1;
  double previous = summarize(t.samples_ms).median;
  t.settled = o.settle_tolerance <= 0;  // one round asked for (--reps N): nothing to compare with
  while (!t.settled && int(t.samples_ms.size()) < o.max_reps && total < o.max_total_ms) {
    take(2 * t.samples_ms.size(), 2 * total);
    ++t.rounds;
    const double median = summarize(t.samples_ms).median;
    t.settled = previous > 0 && std::abs(median - previous) <= o.settle_tolerance * previous;
    previous = median;
  }
  const SampleStats s = summarize(t.samples_ms);
  t.median_ms = s.median;
  t.min_ms = s.min;
  t.max_ms = s.max;
  t.cv = s.cv;
  return t;
}

}  // namespace convlab
