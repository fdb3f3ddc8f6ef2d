// grading/worker.cpp — the runner's main: the program `convlab grade` builds
// for each submission (this file + the submission's variant files + the
// core), and once for the suite itself (convlab_grade_suite: this file + every
// registered variant, for the starting and best rungs). The grader runs it in
// a sandbox (grading/sandbox.hpp), one phase per process, and reads the JSON
// lines it writes to --result; a process that dies leaves the lines written
// before it, so the grader knows which shape it died on.
//
//   runner list                                       the variants it holds
//   runner check ID --table FILE --seed N             every shape of FILE ("required SPEC" or
//                                                     "optional SPEC" lines), inputs seeded from
//                                                     N and the shape's text
//   runner check ID --shape SPEC --input-seed S       one shape, exactly these inputs (a replay)
//   runner time ID --shape SPEC --input-seed S [--budget-ms B] [--min-total-ms M]
//
// Before any variant code runs, the file-write guard (grading/file_guard.hpp)
// is installed unless --no-guard is given (for a replay under a debugger).
// A replay prints the same lines on stdout when --result is not given.
#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "core/harness.hpp"
#include "core/json.hpp"
#include "grading/file_guard.hpp"
#include "grading/seed.hpp"
#include "grading/stable_timing.hpp"

namespace {

using namespace convlab;
namespace json = convlab::json;

int g_out = 1;  // where the JSON lines go

void emit(const std::string& line) {
  const std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(g_out, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += std::size_t(n);
  }
}

struct Line {
  std::string text = "{";
  Line& add(const char* key, const std::string& raw_value) {
    text += (text.size() > 1 ? ", " : "") + json::quote(key) + ": " + raw_value;
    return *this;
  }
  Line& str(const char* key, const std::string& s) { return add(key, json::quote(s)); }
  Line& num(const char* key, double v) { return add(key, json::number(v, 9)); }
  void send() { emit(text + "}"); }
};

struct Found {
  OpHandle* op = nullptr;
  std::size_t index = 0;
  VariantInfo info;
};

Found find_variant(const std::string& id) {
  for (OpHandle* op : all_ops()) {
    const std::vector<VariantInfo> vs = op->variants();
    for (std::size_t i = 0; i < vs.size(); ++i)
      if (vs[i].id() == id) return {op, i, vs[i]};
  }
  throw std::invalid_argument("no variant '" + id + "' in this runner (`list` shows what it holds)");
}

// "c[3,17]" or "y[n=0,h=3,w=5,c=7]": where the worst (or first unwritten) element is.
std::string where(const ICase& c, const CompareResult& r) {
  if (r.worst_index < 0) return "";
  const std::vector<TensorSpec> outs = c.output_specs();
  std::size_t k = 0;
  for (std::size_t i = 0; i < outs.size(); ++i)
    if (r.message.rfind("output '" + outs[i].name + "'", 0) == 0) k = i;
  if (outs.empty()) return "";
  const TensorSpec& s = outs[k];
  std::vector<int64_t> coord(s.shape.size());
  int64_t rest = r.worst_index;
  for (std::size_t d = s.shape.size(); d-- > 0;) {
    coord[d] = s.shape[d] > 0 ? rest % s.shape[d] : 0;
    rest = s.shape[d] > 0 ? rest / s.shape[d] : 0;
  }
  const bool named = s.layout.size() == s.shape.size();  // "NHWC" names each dimension
  std::string text = s.name + "[";
  for (std::size_t d = 0; d < coord.size(); ++d) {
    if (d) text += ",";
    if (named) text += std::string(1, char(std::tolower(static_cast<unsigned char>(s.layout[d])))) + "=";
    text += std::to_string(coord[d]);
  }
  return text + "] (" + s.layout + ")";
}

void prepare_device(const VariantInfo& v) {
  if (v.device != Device::gpu) return;
  // The CUDA context opens device files read-write: create it before the guard goes on.
  require_cuda_device();
  device_free(device_malloc(1 << 20));
  flush_gpu_l2();
  device_synchronize("runner start-up");
}

void guard(bool wanted) {
  if (!wanted) {
    Line().str("event", "guard").str("status", "off (--no-guard)").send();
    return;
  }
  const std::string why = grading::block_file_writes(g_out);
  Line().str("event", "guard").str("status", why.empty() ? "on" : "off: " + why).send();
}

// One shape: poison, run, compare; twice, so a run cannot lean on the previous one's output.
void check_shape(const Found& f, const std::string& spec, uint64_t seed, bool required) {
  Line().str("event", "start").str("spec", spec).add("seed", std::to_string(seed)).send();
  Line line;
  line.str("event", "shape").str("spec", spec).add("seed", std::to_string(seed)).add("required", required ? "true" : "false");
  if (std::string why = f.op->unsupported_reason(f.index, spec); !why.empty()) {
    line.str("status", "unsupported").str("message", why).send();
    return;
  }
  try {
    std::unique_ptr<ICase> c = f.op->make_case(f.index, spec, seed);
    for (int run = 1; run <= 2; ++run) {
      const CompareResult r = checked_run(*c);
      if (!r.ok) {
        line.str("status", "FAIL").str("message", (run == 2 ? "second run: " : "") + r.message)
            .str("where", where(*c, r)).num("rel_l2", r.rel_l2).num("max_abs_err", r.max_abs_err).send();
        return;
      }
      if (run == 2) line.num("rel_l2", r.rel_l2).num("max_abs_err", r.max_abs_err);
    }
    line.str("status", "ok").send();
  } catch (const std::bad_alloc&) {
    line.str("status", "error").str("message", "out of memory (std::bad_alloc): over the memory limit").send();
  } catch (const std::exception& e) {
    line.str("status", "error").str("message", e.what()).send();
  }
}

std::string arg(const std::vector<std::string>& a, const std::string& name, const std::string& fallback = "") {
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i] == name) return a[i + 1];
  return fallback;
}
bool flag(const std::vector<std::string>& a, const std::string& name) {
  for (const std::string& s : a)
    if (s == name) return true;
  return false;
}

int run(const std::vector<std::string>& a) {
  if (a.empty()) throw std::invalid_argument("usage: runner list | check ID ... | time ID ... (see grading/worker.cpp)");
  if (const std::string result = arg(a, "--result"); !result.empty()) {
    g_out = ::open(result.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (g_out < 0) throw std::runtime_error("cannot write " + result);
  }
  const std::string& what = a[0];
  if (what == "list") {
    for (OpHandle* op : all_ops())
      for (const VariantInfo& v : op->variants())
        Line().str("event", "variant").str("id", v.id()).str("op", v.op).str("device", device_name(v.device))
            .str("name", v.name).str("threads", v.threads == Threads::all ? "all" : "single")
            .num("lesson", v.lesson).str("idea", v.idea).send();
    Line().str("event", "done").send();
    return 0;
  }
  if (a.size() < 2) throw std::invalid_argument(what + " needs a variant id");
  const Found f = find_variant(a[1]);
  const bool guarded = !flag(a, "--no-guard");

  if (what == "check") {
    struct Item { std::string spec; bool required; };
    std::vector<Item> items;
    const std::string table = arg(a, "--table");
    if (!table.empty()) {
      std::ifstream in(table);
      if (!in) throw std::runtime_error("cannot read " + table);
      for (std::string l; std::getline(in, l);) {
        const std::size_t sp = l.find(' ');
        if (sp == std::string::npos) continue;
        items.push_back({f.op->canonical(l.substr(sp + 1)), l.substr(0, sp) == "required"});
      }
    } else {
      items.push_back({f.op->canonical(arg(a, "--shape")), true});
    }
    const uint64_t base = std::strtoull(arg(a, "--seed", "1").c_str(), nullptr, 10);
    const std::string exact = arg(a, "--input-seed");
    prepare_device(f.info);
    guard(guarded);
    for (const Item& it : items)
      check_shape(f, it.spec, exact.empty() ? grading::shape_seed(base, it.spec) : std::strtoull(exact.c_str(), nullptr, 10),
                  it.required);
    Line().str("event", "done").num("blocked_writes", grading::blocked_write_count()).send();
    return 0;
  }

  if (what == "time") {
    const std::string spec = f.op->canonical(arg(a, "--shape"));
    const uint64_t seed = std::strtoull(arg(a, "--input-seed", "1").c_str(), nullptr, 10);
    grading::StableTimingOptions o;
    o.budget_ms = std::atof(arg(a, "--budget-ms", "3000").c_str());
    o.min_total_ms = std::atof(arg(a, "--min-total-ms", "100").c_str());
    prepare_device(f.info);
    guard(guarded);
    Line().str("event", "start").str("spec", spec).add("seed", std::to_string(seed)).send();
    Line line;
    line.str("event", "timing").str("spec", spec).add("seed", std::to_string(seed));
    if (std::string why = f.op->unsupported_reason(f.index, spec); !why.empty()) {
      line.str("status", "unsupported").str("message", why).send();
      Line().str("event", "done").send();
      return 0;
    }
    try {
      std::unique_ptr<ICase> c = f.op->make_case(f.index, spec, seed);
      const CompareResult before = checked_run(*c);
      if (!before.ok) {
        line.str("status", "FAIL").str("message", before.message).str("where", where(*c, before)).send();
      } else {
        const int threads = f.info.device == Device::gpu ? 0
                            : f.info.threads == Threads::all ? omp_get_max_threads() : 1;
        const grading::StableTiming t = grading::time_stably(*c, o, threads);
        const CompareResult after = checked_run(*c);  // timed and checked on the same code path
        const std::vector<TensorSpec> outs = c->output_specs();
        line.str("status", after.ok ? "ok" : "FAIL").str("message", after.ok ? "" : "after timing: " + after.message)
            .num("median_ms", t.median_ms).num("p10_ms", t.p10_ms).num("p90_ms", t.p90_ms)
            .num("min_ms", t.min_ms).num("max_ms", t.max_ms).num("spread", t.spread)
            .add("converged", t.converged ? "true" : "false").num("reps", double(t.samples_ms.size()))
            .num("cpu_per_wall", t.cpu_per_wall).num("threads_used", t.threads_used)
            .num("max_other_runnable", t.max_other_runnable).num("cores", t.cores).str("warning", t.warning)
            .num("flops", c->flops()).num("min_bytes", c->min_bytes())
            .str("dtype", outs.empty() ? "f32" : dtype_name(outs[0].dtype))
            .str("threads", f.info.threads == Threads::all ? "all" : "single")
            .str("device", device_name(f.info.device)).send();
      }
    } catch (const std::bad_alloc&) {
      line.str("status", "error").str("message", "out of memory (std::bad_alloc): over the memory limit").send();
    } catch (const std::exception& e) {
      line.str("status", "error").str("message", e.what()).send();
    }
    Line().str("event", "done").num("blocked_writes", grading::blocked_write_count()).send();
    return 0;
  }
  throw std::invalid_argument("unknown runner command '" + what + "' (list, check, time)");
}

}  // namespace

int main(int argc, char* argv[]) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    Line().str("event", "error").str("message", e.what()).send();
    std::cerr << "runner: error: " << e.what() << "\n";
    return 1;
  }
}
