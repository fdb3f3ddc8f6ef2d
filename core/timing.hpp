// core/timing.hpp — timing one case the way DESIGN.md says: warm-up, many
// repetitions, the median; on the GPU, CUDA events around the kernel alone with
// the L2 flushed before every repetition so inputs come from HBM.
#pragma once

#include <vector>

#include "core/harness.hpp"

namespace convlab {

struct TimingOptions {
  int warmup = 2;              // untimed runs first (module load, handles, caches)
  int min_reps = 5;
  int max_reps = 1000;
  double min_total_ms = 200;   // keep repeating until this much time was measured
  bool flush_l2 = true;        // GPU only
};

struct Timing {
  std::vector<double> samples_ms;
  double median_ms = 0, min_ms = 0, max_ms = 0;
};

// Times `c` (its outputs are overwritten; verify() afterwards to re-check).
Timing time_case(ICase& c, const TimingOptions& options = {});

// One timed repetition: GPU, event-timed with an L2 flush before; CPU, wall clock.
double time_once_ms(ICase& c, bool flush_l2 = true);

}  // namespace convlab
