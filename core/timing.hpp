// core/timing.hpp — timing one case the way DESIGN.md says: warm-up, many
// repetitions, the median; on the GPU, CUDA events around the kernel alone with
// the L2 flushed before every repetition so inputs come from HBM.
//
// A median says how long a run takes only if more repetitions would not move
// it. So time_case() measures in rounds: after the first round (min_reps and
// min_total_ms) it doubles the sample, and stops when the median of all the
// samples agrees with the previous round's median within `settle_tolerance`,
// or at a cap (max_reps, max_total_ms). The result says whether it settled and
// how spread the samples were (min, max, coefficient of variation), so every
// printed time can say how much to trust it.
#pragma once

#include <vector>

#include "core/harness.hpp"

namespace convlab {

struct TimingOptions {
  int warmup = 2;                  // untimed runs first (module load, handles, caches)
  int min_reps = 5;
  int max_reps = 1000;
  double min_total_ms = 200;       // the first round lasts at least this long
  double max_total_ms = 3000;      // cap: stop adding rounds after this much measured time
  double settle_tolerance = 0.02;  // successive medians within 2%: settled; 0: one round only
  bool flush_l2 = true;            // GPU only
};

// A sample's summary. cv = standard deviation / mean.
struct SampleStats {
  double median = 0, min = 0, max = 0, mean = 0, cv = 0;
};
SampleStats summarize(const std::vector<double>& samples);

// A spread (cv) above this marks a time as noisy in every table and counter.
inline constexpr double kNoisyCv = 0.05;

struct Timing {
  std::vector<double> samples_ms;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double cv = 0;          // standard deviation / mean of the samples
  int rounds = 0;         // rounds measured (see the header comment)
  bool settled = false;   // the last two rounds' medians agreed within the tolerance
  bool noisy() const { return cv > kNoisyCv; }
};

// Times `c` (its outputs are overwritten; verify() afterwards to re-check).
Timing time_case(ICase& c, const TimingOptions& options = {});

// One timed repetition: GPU, event-timed with an L2 flush before; CPU, wall clock.
double time_once_ms(ICase& c, bool flush_l2 = true);

}  // namespace convlab
