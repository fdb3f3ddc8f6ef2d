// app/cmd_tour.cpp — `convlab tour`: the whole ladder on this machine.
//
// Every registered variant runs on its operation's tour shape for its device,
// is checked against the reference and timed, and is shown beside the first
// rung of its lesson (same op, device and shape), so the table reads as the
// story of the course: each idea, what it bought, and how far from the
// machine's measured peak it still is.
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <tuple>

#include "app/commands.hpp"
#include "app/common.hpp"
#include "app/measure.hpp"
#include "core/json.hpp"
#include "core/load.hpp"
#include "core/probe.hpp"

namespace convlab::app {
namespace {

constexpr uint64_t kTourSeed = 1;  // one seed: variants on the same shape share inputs and one reference

// ---- the last committed H200 figures ---------------------------------------------------
//
// Without a GPU the GPU rows cannot run; so that the ladder still shows, each
// such row gets the figure the committed H200 snapshot (bench/results/h200/)
// holds for the same variant and shape, marked with that run's revision and date.

struct CommittedFigure {
  double ms = 0, gflops = 0;
  std::string origin;  // "H200 rev 5f2fcb5 2026-11-30"
};

std::string results_dir() {
  if (const char* dir = std::getenv("CONVLAB_GPU_RESULTS")) return dir;
#ifdef CONVLAB_SOURCE_DIR
  return std::string(CONVLAB_SOURCE_DIR) + "/bench/results/h200";
#else
  return "bench/results/h200";
#endif
}

std::string short_rev(std::string rev) {
  if (rev.empty()) return "?";
  return rev.size() > 7 && rev.find(' ') == std::string::npos ? rev.substr(0, 7) : rev;
}

// "op/gpu/name/label" -> the newest committed figure; empty when there is no snapshot.
std::map<std::string, CommittedFigure> committed_gpu_figures() {
  std::map<std::string, CommittedFigure> figures;
  std::error_code ec;
  const std::filesystem::path dir = results_dir();
  if (!std::filesystem::is_directory(dir, ec)) return figures;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    json::Value doc;
    try {
      doc = json::parse_file(entry.path().string());
    } catch (const std::exception&) {
      continue;  // not ours to judge here; scripts/lesson_tables.py reports broken files
    }
    const json::Value* list = doc.find("benchmarks");
    const json::Value* context = doc.find("context");
    if (!list || list->kind != json::Value::Kind::array) continue;
    const auto text_of = [](const json::Value* v, const char* key) {
      const json::Value* x = v ? v->find(key) : nullptr;
      return x && x->is_string() ? x->text : std::string();
    };
    const json::Value* sources = context ? context->find("source_runs") : nullptr;
    for (const json::Value& b : list->items) {
      const json::Value* type = b.find("run_type");
      if ((type && type->is_string() && type->text != "iteration") || b.find("error_occurred")) continue;
      std::string name = text_of(&b, "run_name");
      if (name.empty()) name = text_of(&b, "name");
      // op/gpu/variant/label[/manual_time]: keep the first four parts
      std::size_t cut = 0;
      for (int parts = 0; parts < 4 && cut != std::string::npos; ++parts) cut = name.find('/', cut ? cut + 1 : 0);
      const std::string key = cut == std::string::npos ? name : name.substr(0, cut);
      const json::Value* time = b.find("real_time");
      const json::Value* rate = b.find("FLOP/s");
      if (!time || !time->is_number()) continue;
      const std::string unit = text_of(&b, "time_unit");
      const double scale = unit == "ns" ? 1e-6 : unit == "us" ? 1e-3 : unit == "s" ? 1e3 : 1.0;
      CommittedFigure f;
      f.ms = time->number * scale;
      f.gflops = rate && rate->is_number() ? rate->number / 1e9 : 0;
      const std::string source = text_of(&b, "source_run");
      const json::Value* run = sources && !source.empty() ? sources->find(source) : context;
      f.origin = "H200 rev " + short_rev(text_of(run, "git_rev")) + " " + text_of(run, "date").substr(0, 10);
      figures[key] = f;
    }
  }
  return figures;
}

void print_help(std::ostream& out) {
  out << "usage: convlab tour [--device cpu|gpu|all] [--reps N] [--json FILE]\n"
         "\n"
         "Runs every registered variant on its lesson's tour shape for its device (the\n"
         "first of its operation's tour shapes that it supports), checks it against the\n"
         "reference and times it. The table is grouped by lesson: variant, shape, ok/FAIL,\n"
         "median time and its spread, GFLOP/s, % of this machine's measured peak\n"
         "(the FMA peak of the threads the variant uses; on the GPU, cuBLAS GEMM of its\n"
         "dtype), and the speed-up over the lesson's first rung on the same device and\n"
         "shape. Library baselines are marked. GPU variants without a GPU, and variants\n"
         "that do not support the tour shape, get a row that says so.\n"
         "\n"
         "--device D   cpu, gpu or all (default all)\n"
         "--reps N     timed repetitions per variant; default: at least 3 and 100 ms\n"
         "--json FILE  also write every row, the machine's peaks and the date as JSON\n"
         "\n"
         "Exit status: 0 every variant that ran was correct, 1 one failed, 2 a usage error.\n";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string machine_line(const MachinePeaks& p) {
  std::string line = "machine: " + p.cpu_model + ", " + std::to_string(p.cpu_threads) + " threads; FMA peak " +
                     format_rate(p.cpu_gflops_1t) + " GFLOP/s on 1 thread, " + format_rate(p.cpu_gflops_all) +
                     " on all; triad " + format_rate(p.cpu_gbs_1t) + " / " + format_rate(p.cpu_gbs_all) + " GB/s";
  if (!p.gpu.name.empty())
    line += "\n         GPU " + p.gpu.name + ": sgemm " + format_rate(p.gpu.sgemm_gflops) + ", hgemm " +
            format_rate(p.gpu.hgemm_gflops) + " GFLOP/s, copy " + format_rate(p.gpu.copy_gbs) + " GB/s";
  else
    line += "; GPU: " + no_gpu_reason();
  return line;
}

// Variants in the tour's order: lesson; then operations by the lowest lesson
// of their variants (the lesson that introduces them), then name; then device
// (cpu first); then name (numbered rungs before named baselines).
std::vector<VariantRef> tour_order(std::vector<VariantRef> variants) {
  std::map<std::string, int> first_lesson;
  for (const VariantRef& v : variants) {
    auto [it, inserted] = first_lesson.emplace(v.info.op, v.info.lesson);
    if (!inserted) it->second = std::min(it->second, v.info.lesson);
  }
  auto key = [&](const VariantRef& v) {
    return std::make_tuple(v.info.lesson, first_lesson[v.info.op], v.info.op, v.info.device != Device::cpu, v.info.name);
  };
  std::sort(variants.begin(), variants.end(), [&](const VariantRef& a, const VariantRef& b) { return key(a) < key(b); });
  return variants;
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_args(args, {{"--json", true}, {"--device", true}, {"--reps", true}}, "tour");
  if (!parsed.positional.empty()) throw UsageError("`convlab tour` takes no arguments, got '" + parsed.positional[0] + "'");
  const std::string device_filter = parsed.get("--device", "all");
  if (device_filter != "all" && device_filter != "cpu" && device_filter != "gpu")
    throw UsageError("--device wants cpu, gpu or all, got '" + device_filter + "'");
  RepetitionPolicy reps;
  reps.exact_reps = int(parsed.get_int("--reps", -1, 0, 1000000));

  // Fail now, not after the whole tour, if the JSON file cannot be written.
  const std::string json_path = parsed.get("--json");
  if (!json_path.empty() && !std::ofstream(json_path, std::ios::app))
    throw std::runtime_error("cannot write " + json_path);

  std::vector<VariantRef> variants;
  for (const VariantRef& v : all_variants())
    if (device_filter == "all" || v.info.device == parse_device(device_filter)) variants.push_back(v);
  variants = tour_order(variants);

  // Measured afresh, not read from the cache: a cache written while other work
  // shared the cores (a parallel test run, a build) understates the peaks.
  const LoadSample load_before = sample_load();  // before the probe loads every core itself
  const MachinePeaks peaks = measure_and_cache_peaks(false);
  std::cout << "convlab tour: every variant on its lesson's tour shape, checked against the reference and timed\n"
            << machine_line(peaks) << "\n";
  if (const std::string note = busy_note(load_before); !note.empty()) std::cout << note << "\n";
  for (const std::string& note : probe_notes(peaks)) std::cout << note << "\n";
  std::cout << "spread: coefficient of variation of the repetitions ('noisy' above " << format_percent(100 * kNoisyCv)
            << ", '(cap)': the median had not settled within 2% when the time cap came)\n"
            << "% peak: against the FMA peak of the threads a variant uses (GPU: cuBLAS GEMM of its dtype); "
               "speed-up: over the lesson's first rung, same device and shape\n";

  // The shape of each row, and the column widths, before anything runs.
  std::vector<std::string> specs;
  std::size_t id_width = 7, label_width = 5;
  for (const VariantRef& v : variants) {
    specs.push_back(tour_shape_for(v));  // each lesson's rungs on that lesson's own shape
    id_width = std::max(id_width, v.info.id().size());
    if (!specs.back().empty()) label_width = std::max(label_width, v.op->label(specs.back()).size());
  }
  StreamingTable table(std::cout, {{"lesson", 6, true},
                                   {"variant", int(id_width)},
                                   {"shape", int(label_width)},
                                   {"check", 5},
                                   {"median ms", 9, true},
                                   {"spread", 6, true},
                                   {"GFLOP/s", 7, true},
                                   {"% peak", 6, true},
                                   {"speed-up", 8, true},
                                   {"", 8}});

  std::vector<Measurement> rows;
  const std::map<std::string, CommittedFigure> h200 = committed_gpu_figures();
  int shown_committed = 0;
  // (lesson, op, device, shape) → median ms of the first rung, or -1
  std::map<std::tuple<int, std::string, Device, std::string>, double> first_rung_ms;
  int current_lesson = -1, failures = 0, ok = 0, skipped = 0, noisy = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const VariantRef& v = variants[i];
    if (v.info.lesson != current_lesson) {
      table.print_break();
      table.print_header();
    }
    char lesson[8];
    std::snprintf(lesson, sizeof lesson, "%02d", v.info.lesson);
    const std::string lesson_cell = v.info.lesson != current_lesson ? lesson : "";
    current_lesson = v.info.lesson;

    Measurement m;
    if (specs[i].empty()) {
      m.variant = v.info;
      m.status = Status::skipped;
      m.message = v.info.op + " has no tour shape for " + device_name(v.info.device);
    } else {
      m = measure_variant(v, specs[i], kTourSeed, reps, false);
    }

    // The first rung: the lowest-named non-baseline variant of this lesson, op, device and shape.
    const auto group = std::make_tuple(v.info.lesson, v.info.op, v.info.device, specs[i]);
    if (!v.info.baseline && !first_rung_ms.count(group))
      first_rung_ms[group] = m.status == Status::ok && m.timed ? m.median_ms : -1;
    if (auto it = first_rung_ms.find(group); it != first_rung_ms.end() && it->second > 0 && m.status == Status::ok &&
                                             m.timed && m.median_ms > 0)
      m.speedup = it->second / m.median_ms;

    const std::string note = v.info.baseline ? "baseline" : "";
    const std::vector<std::string> lead = {lesson_cell, v.info.id(), m.label, status_name(m.status)};
    if (m.status == Status::ok || m.status == Status::fail) {
      table.print_row({lesson_cell, v.info.id(), m.label, status_name(m.status), format_ms(m.median_ms),
                       spread_cell(m), format_rate(m.rates.gflops), format_percent(m.rates.pct_peak),
                       m.speedup > 0 ? format_fixed(m.speedup, m.speedup >= 10 ? 1 : 2) + "x" : "-", note});
      if (m.status == Status::fail) table.print_note(m.message + " (inputs: seed " + std::to_string(kTourSeed) + ")");
    } else if (auto it = h200.find(v.info.id() + "/" + (specs[i].empty() ? "" : v.op->label(specs[i])));
               v.info.device == Device::gpu && m.status == Status::skipped && it != h200.end()) {
      // Not run here: the last committed H200 figure, marked as such.
      table.print_row({lesson_cell, v.info.id(), v.op->label(specs[i]), status_name(m.status),
                       format_ms(it->second.ms), "-", format_rate(it->second.gflops), "-", "-",
                       "[" + it->second.origin + "]" + (note.empty() ? "" : " " + note)});
      ++shown_committed;
    } else {
      table.print_row(lead, (note.empty() ? "" : "[" + note + "] ") + m.message);
    }
    noisy += m.noisy;
    if (m.status == Status::ok) ++ok;
    else if (m.status == Status::fail || m.status == Status::error) ++failures;
    else ++skipped;
    rows.push_back(m);
  }
  // A build without CUDA registers no GPU rung: show the GPU ladder from the snapshot instead.
  const bool any_gpu = std::any_of(variants.begin(), variants.end(), [](const VariantRef& v) { return v.info.device == Device::gpu; });
  if (!any_gpu && device_filter != "cpu" && !h200.empty()) {
    std::cout << "\nThe GPU ladder, from the last committed H200 snapshot (this build has no GPU variants; "
                 "not measured here):\n";
    for (const OpHandle* op : all_ops())
      for (const std::string& spec : op->shapes(ShapeTable::tour, Device::gpu)) {
        const std::string prefix = op->name() + "/gpu/";
        const std::string label = op->label(spec);
        for (const auto& [key, figure] : h200)
          if (key.rfind(prefix, 0) == 0 && key.size() > label.size() + 1 &&
              key.compare(key.size() - label.size() - 1, std::string::npos, "/" + label) == 0) {
            std::cout << "  " << key << "  " << format_ms(figure.ms) << " ms  " << format_rate(figure.gflops)
                      << " GFLOP/s  [" << figure.origin << "]\n";
            ++shown_committed;
          }
      }
  }
  if (variants.empty()) std::cout << "\n(no variants registered for --device " << device_filter << ")\n";
  std::cout << "\n" << ok << " ok, " << failures << " failed, " << skipped << " skipped or unsupported\n";
  if (noisy > 0)
    std::cout << noisy << " row(s) marked noisy: their repetitions spread by more than "
              << format_percent(100 * kNoisyCv) << " (coefficient of variation); rerun them on a quiet machine\n";
  if (shown_committed)
    std::cout << shown_committed << " GPU rows show the last committed H200 figure, marked [H200 rev DATE]: "
              << "not measured here (" << results_dir() << ")\n";
  if (const std::string note = busy_note(sample_load()); !note.empty()) std::cout << "after the tour, " << note << "\n";

  if (!json_path.empty()) {
    std::ofstream out(json_path, std::ios::trunc);
    out << "{\n  \"date\": " << json::quote(utc_now()) << ",\n  \"device_filter\": " << json::quote(device_filter)
        << ",\n  \"machine\": " << peaks.to_json() << ",\n  \"rows\": [\n";
    for (std::size_t i = 0; i < rows.size(); ++i) out << "    " << measurement_json(rows[i]) << (i + 1 < rows.size() ? ",\n" : "\n");
    out << "  ]\n}\n";
    out.close();
    if (!out) throw std::runtime_error("writing " + json_path + " failed");
    std::cout << "wrote " << json_path << "\n";
  }
  return failures ? 1 : 0;
}

}  // namespace

const Command tour_command{"tour", "every variant on its tour shape: correct?, time, % of peak, speed-up by lesson",
                           print_help, run};

}  // namespace convlab::app
