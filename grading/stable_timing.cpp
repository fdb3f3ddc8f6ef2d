// grading/stable_timing.cpp — see stable_timing.hpp.
#include "grading/stable_timing.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/timing.hpp"

namespace convlab::grading {
namespace {

double percentile(std::vector<double> sorted_copy, double q) {
  std::sort(sorted_copy.begin(), sorted_copy.end());
  const double pos = q * double(sorted_copy.size() - 1);
  const std::size_t lo = std::size_t(std::floor(pos)), hi = std::min(lo + 1, sorted_copy.size() - 1);
  return sorted_copy[lo] + (pos - double(lo)) * (sorted_copy[hi] - sorted_copy[lo]);
}

double process_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * fraction);
  return buf;
}

}  // namespace

MachineLoad machine_load() {
  MachineLoad m;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  m.cores = cores > 0 ? int(cores) : 1;
  std::ifstream in("/proc/loadavg");
  double l5 = 0, l15 = 0;
  char slash = 0;
  int total = 0;
  if (in >> m.loadavg_1min >> l5 >> l15 >> m.runnable >> slash >> total) return m;
  return MachineLoad{0, 0, m.cores};
}

StableTiming time_stably(ICase& c, const StableTimingOptions& o, int threads_used) {
  // The repetitions and the settling rule are core's (core/timing.hpp: rounds
  // that double the sample until the median moves by at most the tolerance, or
  // the time cap); this file adds what a ranking needs on top: percentiles, the
  // process's CPU share while timing, and the runnable tasks before and after.
  using Clock = std::chrono::steady_clock;
  TimingOptions to;
  to.warmup = o.warmup;
  to.min_reps = o.min_reps;
  to.max_reps = 200000;  // bounds the wall time where each repetition costs more than it measures (GPU flush)
  to.min_total_ms = o.min_total_ms;
  to.max_total_ms = o.budget_ms;
  to.settle_tolerance = o.tolerance;
  StableTiming t;
  t.threads_used = threads_used;
  auto note_load = [&] {
    const MachineLoad load = machine_load();
    t.cores = load.cores;
    t.max_other_runnable = std::max(t.max_other_runnable, load.runnable - std::max(threads_used, 1));
  };
  note_load();
  const double cpu0 = process_cpu_s();
  const auto wall0 = Clock::now();
  const Timing core_timing = time_case(c, to);
  auto spent_ms = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - wall0).count(); };
  note_load();
  t.samples_ms = core_timing.samples_ms;
  t.converged = core_timing.settled;
  const double wall_s = spent_ms() * 1e-3;
  t.cpu_per_wall = wall_s > 0 ? (process_cpu_s() - cpu0) / wall_s : 0;
  t.median_ms = percentile(t.samples_ms, 0.5);
  t.p10_ms = percentile(t.samples_ms, 0.1);
  t.p90_ms = percentile(t.samples_ms, 0.9);
  t.min_ms = *std::min_element(t.samples_ms.begin(), t.samples_ms.end());
  t.max_ms = *std::max_element(t.samples_ms.begin(), t.samples_ms.end());
  t.spread = t.median_ms > 0 ? (t.p90_ms - t.p10_ms) / t.median_ms : 0;

  std::string w;
  auto add = [&](const std::string& s) { w += (w.empty() ? "" : "; ") + s; };
  if (!t.converged) add("the median did not settle within " + std::to_string(int(o.budget_ms)) + " ms");
  if (t.spread > o.busy_spread) add("spread " + percent(t.spread) + " of the median");
  if (t.max_other_runnable > std::max(0, t.cores - std::max(threads_used, 1)))
    add("busy machine: " + std::to_string(t.max_other_runnable) + " other tasks runnable on " +
        std::to_string(t.cores) + " cores");
  if (threads_used > 0 && t.cpu_per_wall < 0.8 * threads_used)
    add("busy machine: the run got " + percent(t.cpu_per_wall / threads_used) + " of its " +
        std::to_string(threads_used) + " core(s)");
  t.warning = w;
  return t;
}

}  // namespace convlab::grading
