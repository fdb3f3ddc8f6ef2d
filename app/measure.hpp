// app/measure.hpp — one variant on one problem: check it against the
// reference, time it, and turn the time into the numbers a student compares
// (GFLOP/s, GB/s, % of the machine's measured peak, operational intensity).
// `convlab run` and `convlab tour` print these rows; the tour also writes them as JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/waterline.hpp"
#include "app/common.hpp"
#include "core/timing.hpp"

namespace convlab::app {

enum class Status { ok, fail, error, skipped, unsupported };
const char* status_name(Status s);  // "ok", "FAIL", "ERROR", "skipped", "unsupported"

struct Measurement {
  VariantInfo variant;
  std::string spec, label;  // the problem, parseable and short
  DType dtype = DType::f32;
  Status status = Status::skipped;
  std::string message;      // why it failed or was skipped
  uint64_t seed = 0;
  double rel_l2 = -1, max_abs_err = -1;
  bool timed = false;
  int reps = 0;
  double median_ms = -1, min_ms = -1, max_ms = -1;
  double cv = -1;           // spread of the repetitions: standard deviation / mean
  bool settled = false;     // successive medians agreed within the tolerance (core/timing.hpp)
  bool noisy = false;       // cv above kNoisyCv: flagged in every table
  double flops = 0, min_bytes = 0;
  double peak_gflops = 0, peak_gbs = 0;  // the peaks of this device, dtype and thread count; 0 until timed
  // GFLOP/s, GB/s, intensity, % of each peak, the roofline's attainable rate
  // (Eq. 10) and the % of it reached; NaN where not measured.
  analysis::KernelRates rates;
  std::size_t workspace_bytes = 0;
  double speedup = -1;      // set by the tour: over the lesson's first rung
};

// How many repetitions: by default a first round of at least `min_reps` and
// `min_total_ms`, then doubled until the median moves less than
// `settle_tolerance` or `max_total_ms` is spent; --reps N makes it exactly N
// (0: check only, no timing).
struct RepetitionPolicy {
  int exact_reps = -1;  // -1: use the defaults below
  int min_reps = 3;
  double min_total_ms = 100;
  double max_total_ms = 1000;
  double settle_tolerance = 0.02;
  TimingOptions options() const;
  bool timing_wanted() const { return exact_reps != 0; }
};

// Runs `c` once on poisoned outputs and verifies it; if correct, times it,
// then poisons, runs and verifies once more (a benchmark must not pass on a
// different code path from the one checked). Exceptions propagate.
void check_and_time(ICase& c, const RepetitionPolicy& reps, Measurement& m);

// The whole job for one registered variant on `spec` with random inputs. With
// `strict` (a single variant named on the command line), a missing GPU, an
// unsupported shape or a runtime error is thrown; otherwise it becomes a row
// with status skipped, unsupported or error.
Measurement measure_variant(const VariantRef& v, const std::string& spec, uint64_t seed, const RepetitionPolicy& reps,
                            bool strict);

// The spread cell of a table: "±1.2%", "±9.0% noisy", "(cap)" appended when
// the medians had not settled; "-" when untimed.
std::string spread_cell(const Measurement& m);

// The row as a JSON object (one line).
std::string measurement_json(const Measurement& m);

}  // namespace convlab::app
