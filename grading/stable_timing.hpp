// grading/stable_timing.hpp — a time a class can be ranked by: the median of
// repetitions, taken until it stops moving, with its spread and a warning when
// the machine was busy while it was measured.
//
//   warm-up; then repeat, and at checkpoints (first after min_reps runs and
//   min_total_ms, then each time the sample count has doubled) compare the
//   median with the previous checkpoint's. Converged: it moved by at most
//   `tolerance`. Otherwise stop when `budget_ms` is spent, and say so.
//
// The rounds are core/timing.hpp's time_case (with budget_ms as its cap on
// measured time). Busy machine: before and after timing, /proc/loadavg's count
// of runnable tasks is read (the tasks of this run subtracted), and the
// process's CPU time is compared with the wall time (a single-threaded CPU variant that got less
// than 80% of a core was being descheduled). Either one, a spread (p90 − p10)
// over 10% of the median, or a median that never settled gives a warning.
#pragma once

#include <string>
#include <vector>

#include "core/harness.hpp"

namespace convlab::grading {

struct StableTimingOptions {
  int warmup = 2;
  int min_reps = 5;
  double min_total_ms = 100;  // measured time before the first checkpoint
  double budget_ms = 3000;    // measured time after which it stops, settled or not
  double tolerance = 0.02;    // settled: the median moved by at most 2% between checkpoints
  double busy_spread = 0.10;  // a spread above this is a warning
};

struct MachineLoad {
  double loadavg_1min = 0;
  int runnable = 0;  // tasks runnable right now (the 4th field of /proc/loadavg), this process's included
  int cores = 1;
};
MachineLoad machine_load();

struct StableTiming {
  std::vector<double> samples_ms;
  double median_ms = 0, p10_ms = 0, p90_ms = 0, min_ms = 0, max_ms = 0;
  double spread = 0;            // (p90 − p10) / median
  bool converged = false;
  double cpu_per_wall = 0;      // process CPU seconds per wall second while timing
  int threads_used = 1;         // CPU threads the variant runs (0: a GPU variant)
  int max_other_runnable = 0;   // the most other runnable tasks seen at a checkpoint
  int cores = 1;
  std::string warning;          // "" when quiet and settled
};

// Times `c` (its outputs are overwritten: verify afterwards). `threads_used`:
// 1 for a single-threaded CPU variant, the OpenMP thread count for a threaded
// one, 0 for a GPU variant (no CPU-share check then).
StableTiming time_stably(ICase& c, const StableTimingOptions& options, int threads_used);

}  // namespace convlab::grading
