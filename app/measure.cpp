// app/measure.cpp — check, time and rate one variant (see app/measure.hpp).
#include "app/measure.hpp"

#include <cstdio>

#include "core/json.hpp"
#include "core/probe.hpp"

namespace convlab::app {

const char* status_name(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::fail: return "FAIL";
    case Status::error: return "ERROR";
    case Status::skipped: return "skipped";
    case Status::unsupported: return "unsupported";
  }
  return "?";
}

TimingOptions RepetitionPolicy::options() const {
  TimingOptions o;
  o.warmup = 1;
  if (exact_reps > 0) {
    o.min_reps = o.max_reps = exact_reps;
    o.min_total_ms = 0;
    o.max_total_ms = 1e300;
    o.settle_tolerance = 0;  // exactly N: one round
  } else {
    o.min_reps = min_reps;
    o.max_reps = 1000;
    o.min_total_ms = min_total_ms;
    o.max_total_ms = max_total_ms;
    o.settle_tolerance = settle_tolerance;
  }
  return o;
}

void check_and_time(ICase& c, const RepetitionPolicy& reps, Measurement& m) {
  m.variant = c.variant();
  m.spec = c.spec();
  m.label = c.label();
  const std::vector<TensorSpec> outputs = c.output_specs();
  if (!outputs.empty()) m.dtype = outputs[0].dtype;
  m.flops = c.flops();
  m.min_bytes = c.min_bytes();
  m.rates = analysis::kernel_rates(m.flops, m.min_bytes, 0, 0, 0);  // untimed: the intensity only
  m.workspace_bytes = c.workspace_bytes();

  const CompareResult first = checked_run(c);
  m.rel_l2 = first.has_rel_l2() ? first.rel_l2 : -1;  // no L2 error beside NaN: it would mean nothing
  m.max_abs_err = first.max_abs_err;
  if (!first.ok) {
    m.status = Status::fail;
    m.message = first.message;
    return;
  }
  m.status = Status::ok;
  if (!reps.timing_wanted()) return;

  const Timing t = time_case(c, reps.options());
  m.timed = true;
  m.reps = int(t.samples_ms.size());
  m.median_ms = t.median_ms;
  m.min_ms = t.min_ms;
  m.max_ms = t.max_ms;
  m.cv = t.cv;
  m.settled = t.settled;
  m.noisy = t.noisy();
  const MachinePeaks& peaks = machine_peaks();
  m.peak_gflops = peaks.peak_gflops(m.variant.device, m.dtype, m.variant.threads);
  m.peak_gbs = peaks.peak_gbs(m.variant.device, m.variant.threads);
  m.rates = analysis::kernel_rates(m.flops, m.min_bytes, t.median_ms * 1e-3, m.peak_gflops, m.peak_gbs);

  const CompareResult after = checked_run(c);
  if (!after.ok) {
    m.status = Status::fail;
    m.message = "after timing: " + after.message;
  }
}

Measurement measure_variant(const VariantRef& v, const std::string& spec, uint64_t seed, const RepetitionPolicy& reps,
                            bool strict) {
  Measurement m;
  m.variant = v.info;
  m.spec = spec;
  m.seed = seed;
  if (!strict) {
    m.label = v.op->label(spec);
    if (v.info.device == Device::gpu && cuda_device_count() == 0) {
      m.status = Status::skipped;
      m.message = no_gpu_reason();
      return m;
    }
    if (std::string why = v.op->unsupported_reason(v.index, spec); !why.empty()) {
      m.status = Status::unsupported;
      m.message = why;
      return m;
    }
  }
  try {
    std::unique_ptr<ICase> c = v.op->make_case(v.index, spec, seed);
    check_and_time(*c, reps, m);
  } catch (const std::exception& e) {
    if (strict) throw;
    m.status = Status::error;
    m.message = e.what();
  }
  return m;
}

std::string spread_cell(const Measurement& m) {
  if (!m.timed || m.cv < 0) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "±%.1f%%", 100 * m.cv);
  std::string cell = buf;
  if (m.noisy) cell += " noisy";
  if (!m.settled) cell += " (cap)";
  return cell;
}

std::string measurement_json(const Measurement& m) {
  std::string j = "{";
  auto add = [&](const char* key, const std::string& value) {
    if (j.size() > 1) j += ", ";
    j += json::quote(key) + ": " + value;
  };
  add("id", json::quote(m.variant.id()));
  add("op", json::quote(m.variant.op));
  add("device", json::quote(device_name(m.variant.device)));
  add("variant", json::quote(m.variant.name));
  add("lesson", std::to_string(m.variant.lesson));
  add("threads", json::quote(m.variant.threads == Threads::all ? "all" : "single"));
  add("baseline", m.variant.baseline ? "true" : "false");
  add("spec", json::quote(m.spec));
  add("label", json::quote(m.label));
  add("dtype", json::quote(dtype_name(m.dtype)));
  add("status", json::quote(status_name(m.status)));
  add("message", json::quote(m.message));
  add("seed", std::to_string(m.seed));
  auto number_or_null = [](double v) { return v >= 0 ? json::number(v) : std::string("null"); };
  add("rel_l2", number_or_null(m.rel_l2));
  add("max_abs_err", number_or_null(m.max_abs_err));
  add("reps", std::to_string(m.reps));
  add("median_ms", number_or_null(m.median_ms));
  add("min_ms", number_or_null(m.min_ms));
  add("max_ms", number_or_null(m.max_ms));
  add("cv", number_or_null(m.cv));
  add("settled", m.timed && m.settled ? "true" : "false");
  add("noisy", m.noisy ? "true" : "false");
  add("flops", json::number(m.flops));
  add("min_bytes", json::number(m.min_bytes));
  add("gflops", number_or_null(m.rates.gflops));
  add("gbs", number_or_null(m.rates.gbs));
  add("intensity", number_or_null(m.rates.intensity));
  add("peak_gflops", json::number(m.peak_gflops));
  add("pct_peak", number_or_null(m.rates.pct_peak));
  add("peak_gbs", json::number(m.peak_gbs));
  add("pct_bandwidth", number_or_null(m.rates.pct_bandwidth));
  add("attainable_gflops", number_or_null(m.rates.attainable_gflops));
  add("pct_roofline", number_or_null(m.rates.pct_roofline));
  add("workspace_bytes", std::to_string(m.workspace_bytes));
  add("speedup_over_first_rung", number_or_null(m.speedup));
  return j + "}";
}

}  // namespace convlab::app
