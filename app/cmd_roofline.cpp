// app/cmd_roofline.cpp — `convlab roofline FILE.json ...`: the roofline of
// single variants, read back from benchmark JSON (lesson 13, issue 6).
//
// Every benchmark convlab_bench writes carries what a roofline needs: the
// achieved FLOP/s, the operational intensity I = FLOPs / compulsory bytes
// (the problem descriptor's flops() and min_bytes()), and the peaks the same
// run measured (counters peak_gflops and peak_gbs, from the probe the program
// ran at start, for the benchmark's device and dtype). This command puts them
// side by side (Eq. 10–11):
//
//   attainable = min(R, I·B)      bound = memory when I < R/B (the ridge), else compute
//   share      = achieved / attainable
//
// with R and B from that same run (the default, --machine run) or from a
// preset of analysis/machine.hpp (a5000, h100, h200, or measured with --probe),
// to ask "what would this kernel's intensity allow on the paper's GPU?".
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/machine.hpp"
#include "analysis/waterline.hpp"
#include "app/commands.hpp"
#include "app/common.hpp"
#include "core/dtype.hpp"
#include "core/json.hpp"
#include "core/probe.hpp"

namespace convlab::app {
namespace {

void print_help(std::ostream& out) {
  out << "usage: convlab roofline FILE.json [FILE.json ...] [--filter REGEX] [--machine NAME]\n"
         "                        [--probe FILE] [--json]\n"
         "\n"
         "The roofline (Eq. 10-11) of each benchmark in Google Benchmark JSON written by\n"
         "convlab_bench (e.g. bench/results/*/bench-*.json): achieved GFLOP/s, operational\n"
         "intensity I = FLOPs / compulsory bytes, the machine's ridge R/B, whether the\n"
         "kernel is memory- or compute-bound, the attainable rate min(R, I*B) and the\n"
         "share of it achieved.\n"
         "\n"
         "--filter REGEX  only benchmarks whose name (op/device/variant/shape) matches\n"
         "--machine NAME  run (default): R and B measured in the same run as the benchmark\n"
         "                (its peak_gflops and peak_gbs counters); or a preset: "
      << [] {
           std::string names;
           for (const std::string& n : analysis::machine_names()) names += (names.empty() ? "" : ", ") + n;
           return names;
         }()
      << "\n"
         "--probe FILE    probe JSON for --machine measured (default: $CONVLAB_PROBE_FILE,\n"
         "                else probe.json beside the convlab program)\n"
         "--json          JSON instead of the table\n";
}

struct Row {
  std::string name;  // op/device/variant/shape
  DType dtype = DType::f32;
  double ms = 0, gflops = 0, intensity = 0;
  double peak_gflops = 0, peak_gbs = 0;  // the roof used for this row (GFLOP/s, GB/s)
};

const char* kind_name(const json::Value& v) {
  switch (v.kind) {
    case json::Value::Kind::null: return "null";
    case json::Value::Kind::boolean: return "a boolean";
    case json::Value::Kind::number: return "a number";
    case json::Value::Kind::string: return "a string";
    case json::Value::Kind::array: return "an array";
    case json::Value::Kind::object: return "an object";
  }
  return "?";
}

// A numeric field of one benchmark entry, checked: absent or null gives NaN
// (or an error when `required`); anything else must be a finite number, >= 0,
// and > 0 when `positive`. `where` is "FILE: benchmark 'NAME'".
double number_field(const json::Value& b, const char* key, const std::string& where, bool required, bool positive) {
  const json::Value* v = b.find(key);
  if (!v || v->kind == json::Value::Kind::null) {
    if (required)
      throw std::runtime_error(where + " has no \"" + key + "\" (convlab roofline reads convlab_bench JSON, "
                               "whose benchmarks carry real_time, time_unit, FLOP/s and intensity)");
    return NAN;
  }
  if (!v->is_number())
    throw std::runtime_error(where + ": \"" + key + "\" must be a number, got " + kind_name(*v) +
                             (v->is_string() ? " (" + json::quote(v->text.substr(0, 40)) + ")" : std::string()));
  if (!std::isfinite(v->number) || v->number < 0 || (positive && v->number == 0))
    throw std::runtime_error(where + ": \"" + key + "\" must be a " + (positive ? "positive" : "non-negative") +
                             " number, got " + json::number(v->number));
  return v->number;
}

double to_ms(double time, const std::string& unit, const std::string& where) {
  if (unit == "ns") return time * 1e-6;
  if (unit == "us") return time * 1e-3;
  if (unit == "ms") return time;
  if (unit == "s") return time * 1e3;
  throw std::runtime_error(where + ": unknown time_unit " + json::quote(unit.substr(0, 40)) +
                           " (Google Benchmark writes ns, us, ms or s)");
}

// "conv2d/gpu/04a_implicit_gemm/n32..._f32/manual_time" → the first four parts.
std::string benchmark_id(const std::string& name) {
  const std::vector<std::string> parts = split(name, '/');
  if (parts.size() < 4) return name;
  return parts[0] + "/" + parts[1] + "/" + parts[2] + "/" + parts[3];
}

// The dtype a convlab label ends with: "..._f16", "..._causal_bf16", "4096x4096x4096_f32".
DType label_dtype(const std::string& id) {
  const std::size_t cut = id.rfind('_');
  if (cut == std::string::npos) return DType::f32;
  try {
    return parse_dtype(id.substr(cut + 1));
  } catch (const std::exception&) {
    return DType::f32;
  }
}

// One row per benchmark of one file: its median when the run was repeated,
// else its single entry; benchmarks that failed are counted, not shown.
std::vector<Row> read_rows(const std::string& path, const std::regex* filter, int& failed, int& uncounted) {
  const json::Value doc = json::parse_file(path);
  const json::Value* list = doc.find("benchmarks");
  if (!list || list->kind != json::Value::Kind::array)
    throw std::runtime_error(path + ": not Google Benchmark JSON (no \"benchmarks\" list)");
  std::map<std::string, const json::Value*> chosen;  // id → entry
  std::vector<std::string> order;
  for (const json::Value& b : list->items) {
    if (b.kind != json::Value::Kind::object)
      throw std::runtime_error(path + ": each entry of \"benchmarks\" must be an object, got " + kind_name(b));
    const json::Value* name = b.find("run_name");
    if (!name) name = b.find("name");
    if (!name || !name->is_string()) continue;
    const std::string id = benchmark_id(name->text);
    if (filter && !std::regex_search(id, *filter)) continue;
    if (const json::Value* e = b.find("error_occurred"); e && e->boolean) {
      ++failed;
      continue;
    }
    const json::Value* type = b.find("run_type");
    const json::Value* aggregate = b.find("aggregate_name");
    const bool is_median = type && type->text == "aggregate" && aggregate && aggregate->text == "median";
    const bool is_iteration = !type || type->text == "iteration";
    if (!is_median && !is_iteration) continue;
    if (!chosen.count(id)) order.push_back(id);
    if (is_median || !chosen.count(id)) chosen[id] = &b;  // a median replaces the repetitions
  }
  std::vector<Row> rows;
  for (const std::string& id : order) {
    const json::Value& b = *chosen[id];
    const std::string where = path + ": benchmark " + json::quote(id.substr(0, 120));
    // A benchmark that is not one of convlab's kernels (no FLOP/s counter, e.g.
    // a whole network's latency) has no place on a roofline: counted, not shown.
    if (const json::Value* f = b.find("FLOP/s"); !f || f->kind == json::Value::Kind::null) {
      ++uncounted;
      continue;
    }
    Row r;
    r.name = id;
    r.dtype = label_dtype(id);
    const double time = number_field(b, "real_time", where, true, true);
    const json::Value* unit = b.find("time_unit");
    if (unit && !unit->is_string())
      throw std::runtime_error(where + ": \"time_unit\" must be a string (ns, us, ms or s), got " + kind_name(*unit));
    r.ms = to_ms(time, unit ? unit->text : "ns", where);
    r.gflops = number_field(b, "FLOP/s", where, true, false) * 1e-9;
    r.intensity = number_field(b, "intensity", where, false, false);
    if (!std::isfinite(r.intensity)) {
      const double bytes_per_s = number_field(b, "bytes/s", where, false, false);
      if (bytes_per_s > 0) r.intensity = r.gflops * 1e9 / bytes_per_s;
    }
    r.peak_gflops = number_field(b, "peak_gflops", where, false, false);
    r.peak_gbs = number_field(b, "peak_gbs", where, false, false);
    rows.push_back(r);
  }
  return rows;
}

// The row on its roof (analysis::roofline_point, in GFLOP/s and GB/s: the
// intensity I stands for I flops on one byte); NaN and "-" without a roof.
struct RowRoof {
  double ridge = NAN, attainable = NAN, share = NAN;
  std::string bound = "-";
};

RowRoof roof_of(const Row& r) {
  RowRoof out;
  if (!(r.peak_gflops > 0) || !(r.peak_gbs > 0) || !std::isfinite(r.intensity)) return out;
  const analysis::RooflinePoint p = analysis::roofline_point(r.gflops, r.intensity, 1.0, {r.peak_gflops, r.peak_gbs});
  out.ridge = p.ridge;
  out.attainable = p.attainable;
  out.share = p.pct_of_attainable;
  out.bound = p.memory_bound ? "memory" : "compute";
  return out;
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed =
      parse_args(args, {{"--filter", true}, {"--machine", true}, {"--probe", true}, {"--json", false}}, "roofline");
  if (parsed.positional.empty()) throw UsageError("roofline needs at least one benchmark JSON file");
  std::regex filter;
  const bool filtered = parsed.has("--filter");
  if (filtered) {
    try {
      filter = std::regex(parsed.get("--filter"));
    } catch (const std::regex_error& e) {
      throw UsageError("--filter: '" + parsed.get("--filter") + "' is not a regular expression: " + e.what());
    }
  }
  const std::string machine_name = parsed.get("--machine", "run");
  const bool own_run = machine_name == "run";
  analysis::Machine machine;
  if (!own_run) {
    try {
      machine = analysis::machine_by_name(machine_name, parsed.get("--probe", probe_file_path()));
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string(e.what()) + ", or run (the benchmark's own measured peaks)");
    }
  }

  std::vector<Row> rows;
  int failed = 0, uncounted = 0;
  for (const std::string& path : parsed.positional) {
    std::vector<Row> more = read_rows(path, filtered ? &filter : nullptr, failed, uncounted);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  if (!own_run) {
    for (Row& r : rows) {
      try {
        r.peak_gflops = machine.peak_ops(r.dtype) * 1e-9;
      } catch (const std::invalid_argument&) {
        r.peak_gflops = NAN;  // this preset has no rate for the dtype: no roof for the row
      }
      r.peak_gbs = machine.bandwidth_bytes_per_s * 1e-9;
    }
  }
  if (rows.empty())  // main prints it as one error line, exit status 1
    throw std::runtime_error("no benchmark" + (filtered ? " matches '" + parsed.get("--filter") + "'" : std::string()) +
                             " in the file(s)" + (failed ? " (" + std::to_string(failed) + " failed)" : "") +
                             (uncounted ? " (" + std::to_string(uncounted) +
                                              " without a FLOP/s counter: not convlab_bench kernels)"
                                        : ""));

  if (parsed.has("--json")) {
    std::cout << "{\"machine\": " << json::quote(own_run ? "run" : machine.name) << ", \"rows\": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      const RowRoof f = roof_of(r);
      std::cout << (i ? "," : "") << "\n  {\"name\": " << json::quote(r.name) << ", \"dtype\": "
                << json::quote(dtype_name(r.dtype)) << ", \"ms\": " << json::number(r.ms)
                << ", \"gflops\": " << json::number(r.gflops) << ", \"intensity\": " << json::number(r.intensity)
                << ", \"peak_gflops\": " << json::number(r.peak_gflops) << ", \"peak_gbs\": "
                << json::number(r.peak_gbs) << ", \"ridge\": " << json::number(f.ridge)
                << ", \"bound\": " << json::quote(f.bound) << ", \"attainable_gflops\": "
                << json::number(f.attainable) << ", \"pct_of_attainable\": " << json::number(f.share) << "}";
    }
    std::cout << "\n], \"failed\": " << failed << ", \"without_flops\": " << uncounted << "}\n";
    return 0;
  }

  int width = 9;
  for (const Row& r : rows) width = std::max(width, int(r.name.size()));
  StreamingTable table(std::cout, {{"benchmark", width},
                                   {"ms", 9, true},
                                   {"GFLOP/s", 10, true},
                                   {"flop/B", 8, true},
                                   {"ridge", 7, true},
                                   {"bound", 7},
                                   {"roof GF/s", 10, true},
                                   {"% roof", 7, true}});
  std::cout << "roofline: R, B " << (own_run ? "measured in each benchmark's own run" : "of " + machine.name)
            << "; attainable = min(R, I*B)\n";
  table.print_header();
  for (const Row& r : rows) {
    const RowRoof f = roof_of(r);
    table.print_row({r.name, format_ms(r.ms), format_rate(r.gflops), format_fixed(r.intensity, 1),
                     format_fixed(f.ridge, 1), f.bound, format_rate(f.attainable), format_percent(f.share)});
  }
  if (failed) table.print_note(std::to_string(failed) + " benchmark(s) failed in the file(s) and are not shown");
  if (uncounted)
    table.print_note(std::to_string(uncounted) + " benchmark(s) without a FLOP/s counter are not shown");
  return 0;
}

}  // namespace

const Command roofline_command{"roofline", "roofline of benchmarked variants, from benchmark JSON (lesson 13)",
                               print_help, run};

}  // namespace convlab::app
