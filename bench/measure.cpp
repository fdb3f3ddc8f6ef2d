// bench/measure.cpp — one benchmark, start to finish (see measure.hpp).
//
// The order of events, per DESIGN.md "Correctness" and "Measurement":
//   1. build the case (fresh random inputs from a fixed seed) — first call only;
//   2. poison outputs, run once, verify against the double reference;
//   3. warm up with untimed runs (module load, cuBLAS handles, caches);
//   4. the timed loop: GPU, CUDA events around the kernel with the L2 flushed
//      before each repetition (UseManualTime); CPU, wall clock (UseRealTime);
//   5. poison outputs, run once more, verify again — the timed code path must
//      be the checked one;
//   6. counters computed from the time accumulated in step 4, and the spread
//      of step 4's iterations (cv, min_ms, median_ms, max_ms; noisy = 1 when
//      the cv is above kNoisyCv), so every row says how much to trust it.
//
// Besides the two ceilings (pct_peak: arithmetic, pct_bandwidth: memory) every
// benchmark gets the roofline's verdict on its own shape (Eq. 10): attainable
// = min(peak, intensity × bandwidth), and pct_roofline = achieved ÷ attainable.
// A memory-bound kernel (depthwise conv, intensity ~R·S/2) is judged against
// the bandwidth line, a compute-bound one against the peak, with no per-variant
// choice of which percentage to read.
#include "bench/measure.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "analysis/waterline.hpp"
#include "core/probe.hpp"
#include "core/timing.hpp"

namespace convlab::bench {

namespace {

// Warm-up stops after this many untimed runs or this much time, whichever
// comes first: one run of a slow variant already warms everything it touches.
constexpr int kMaxWarmupRuns = 2;
constexpr double kMaxWarmupSeconds = 0.5;

// The case of the benchmark now running. Keeping it across Google Benchmark's
// repeated calls means inputs are drawn, copied to the GPU and checked once per
// benchmark, not once per call; holding only one keeps memory at one case.
struct CaseSlot {
  std::string owner;              // benchmark name the case belongs to
  std::unique_ptr<ICase> the_case;
};

CaseSlot& current_slot() {
  static CaseSlot slot;
  return slot;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string describe(const CompareResult& r) {
  // No L2 error beside a NaN/Inf line: it would be computed over the finite elements only.
  return r.has_rel_l2() ? r.message + " (rel L2 " + std::to_string(r.rel_l2) + ")" : r.message;
}

// Steps 1–3: returns the ready case, or nullptr after SkipWithError.
ICase* prepare_case(benchmark::State& state, const BenchTarget& t, const std::string& name) {
  CaseSlot& slot = current_slot();
  if (slot.owner == name && slot.the_case) return slot.the_case.get();

  slot.the_case.reset();  // free the previous benchmark's tensors before allocating new ones
  slot.owner.clear();
  std::unique_ptr<ICase> c = t.op->make_case(t.variant, t.spec, t.seed);

  const auto first_run_start = std::chrono::steady_clock::now();
  const CompareResult before = checked_run(*c);  // its run doubles as the first warm-up run
  const double first_run_seconds = seconds_since(first_run_start);
  if (!before.ok) {
    state.SkipWithError(("wrong before timing: " + describe(before) + " [seed " + std::to_string(t.seed) + "]").c_str());
    return nullptr;
  }

  // The checking run above counts as the first warm-up run.
  double warmup_seconds = first_run_seconds;
  for (int run = 1; run < kMaxWarmupRuns && warmup_seconds < kMaxWarmupSeconds; ++run) {
    const auto start = std::chrono::steady_clock::now();
    c->run();
    warmup_seconds += seconds_since(start);
  }

  slot.owner = name;
  slot.the_case = std::move(c);
  return slot.the_case.get();
}

void set_counters(benchmark::State& state, const BenchTarget& t, const ICase& c, double total_seconds) {
  using benchmark::Counter;
  const double iterations = double(state.iterations());
  const double flops = c.flops();
  const double bytes = c.min_bytes();
  const double mean_seconds = iterations > 0 ? total_seconds / iterations : 0.0;

  const MachinePeaks& peaks = machine_peaks();
  const double peak_gflops = peaks.peak_gflops(t.info.device, t.dtype, t.info.threads);
  const double peak_gbs = peaks.peak_gbs(t.info.device, t.info.threads);
  const analysis::KernelRates rates = analysis::kernel_rates(flops, bytes, mean_seconds, peak_gflops, peak_gbs);
  const auto zero_if_nan = [](double v) { return std::isnan(v) ? 0.0 : v; };  // a counter is always a number

  // Rates: Google Benchmark divides by the benchmark's own time (manual on the
  // GPU, real on the CPU), so these agree with the reported time per iteration.
  state.counters["FLOP/s"] = Counter(flops * iterations, Counter::kIsRate);
  state.counters["bytes/s"] = Counter(bytes * iterations, Counter::kIsRate);
  // Plain numbers: computed here from the time this function accumulated.
  state.counters["intensity"] = Counter(zero_if_nan(rates.intensity));
  state.counters["pct_peak"] = Counter(zero_if_nan(rates.pct_peak));
  state.counters["pct_bandwidth"] = Counter(zero_if_nan(rates.pct_bandwidth));
  state.counters["peak_gflops"] = Counter(peak_gflops);  // the denominators, so plots need only the JSON
  state.counters["peak_gbs"] = Counter(peak_gbs);
  // Roofline (Eq. 10) for this shape on this machine, and the share of it reached.
  if (!std::isnan(rates.attainable_gflops)) {
    state.counters["attainable_gflops"] = Counter(rates.attainable_gflops);
    state.counters["pct_roofline"] = Counter(zero_if_nan(rates.pct_roofline));
  }
  state.counters["workspace_bytes"] = Counter(double(c.workspace_bytes()));
  // The variant's own traffic model (min_bytes unless the variant declares
  // more, e.g. layer-by-layer passes through an intermediate tensor).
  const double model_bytes = c.model_bytes();
  state.counters["model_bytes"] = Counter(model_bytes);
  state.counters["model_bytes/s"] = Counter(model_bytes * iterations, Counter::kIsRate);
  // 1 for a library variant (the registry's baseline flag), so that tools such as
  // scripts/lesson_tables.py tell rungs from baselines without a list of names.
  state.counters["baseline"] = Counter(t.info.baseline ? 1.0 : 0.0);
}

}  // namespace

uint64_t base_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("CONVLAB_SEED")) return uint64_t(std::strtoull(env, nullptr, 10));
    return uint64_t(20240601);  // fixed: benchmark runs are reproducible by default
  }();
  return seed;
}

uint64_t seed_for(const std::string& spec) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a: stable across compilers, unlike std::hash
  for (unsigned char ch : spec) {
    hash ^= ch;
    hash *= 1099511628211ull;
  }
  return base_seed() ^ hash;
}

void measure_case(benchmark::State& state, const BenchTarget& t) {
  const std::string name = t.info.id() + "/" + t.op->label(t.spec);
  state.SetLabel(t.spec.c_str());
  try {
    ICase* c = prepare_case(state, t, name);
    if (c == nullptr) return;

    const bool on_gpu = t.info.device == Device::gpu;
    double total_ms = 0;
    std::vector<double> samples_ms;
    samples_ms.reserve(std::size_t(state.max_iterations < 100000 ? state.max_iterations : 100000));
    for (auto _ : state) {
      // GPU: event-timed kernel after an L2 flush. CPU: wall clock around run().
      const double ms = time_once_ms(*c, /*flush_l2=*/true);
      if (on_gpu) state.SetIterationTime(ms * 1e-3);
      total_ms += ms;
      samples_ms.push_back(ms);
    }

    const CompareResult after = checked_run(*c);
    if (!after.ok) {
      current_slot() = {};
      state.SkipWithError(("wrong after timing: " + describe(after) + " [seed " + std::to_string(t.seed) + "]").c_str());
      return;
    }
    set_counters(state, t, *c, total_ms * 1e-3);
    // How much to trust this time: the spread of this call's iterations
    // (coefficient of variation, extremes); noisy = 1 flags a row whose cv is
    // above kNoisyCv (core/timing.hpp).
    const SampleStats spread = summarize(samples_ms);
    state.counters["cv"] = benchmark::Counter(spread.cv);
    state.counters["min_ms"] = benchmark::Counter(spread.min);
    state.counters["median_ms"] = benchmark::Counter(spread.median);
    state.counters["max_ms"] = benchmark::Counter(spread.max);
    state.counters["noisy"] = benchmark::Counter(spread.cv > kNoisyCv ? 1.0 : 0.0);
    state.counters["rel_l2"] = benchmark::Counter(after.rel_l2);
  } catch (const std::exception& e) {
    current_slot() = {};  // a device fault may leave the case unusable
    state.SkipWithError((std::string("error: ") + e.what()).c_str());
  }
}

}  // namespace convlab::bench
