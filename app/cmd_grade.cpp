// app/cmd_grade.cpp — `convlab grade`: a class's submissions built, checked on
// the public and the instructor's hidden shapes, timed against the rung the
// assignment starts from and the best rung, and published as a ranked report.
//
// The steps, each submission in processes of its own (grading/sandbox.hpp):
//   1. build   its .cpp (and, in a CUDA build, .cu) files + grading/worker.cpp
//              + the core into a "runner", with the compile flags this build
//              uses for its own variants (build/grading/toolchain.txt);
//   2. list    the variants the runner registers; those of the assignment's op
//              and device are graded, one row per submission (its best one);
//   3. check   the op's public test table and the hidden table, separately;
//   4. time    on the stated shape, one at a time, between two timings of the
//              baselines (the starting and best rungs, from the suite's runner).
// A failure at any step is a verdict in the row, never the grader's end.
// docs/grading.md is the guide for instructors.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "app/commands.hpp"
#include "app/common.hpp"
#include "core/json.hpp"
#include "core/probe.hpp"
#include "grading/report.hpp"
#include "grading/sandbox.hpp"
#include "grading/seed.hpp"
#include "grading/stable_timing.hpp"

namespace convlab::app {
namespace {

namespace fs = std::filesystem;
using namespace convlab::grading;

void print_help(std::ostream& out) {
  out << "usage: convlab grade SUBMISSIONS_DIR [--assignment FILE] [--start ID] [--best ID] [--shape SPEC]\n"
         "                     [--hidden TABLE] [--seed N] [--out DIR] [--only NAMES] [--jobs N]\n"
         "                     [--time-limit S] [--build-time-limit S] [--memory-limit MIB]\n"
         "                     [--output-limit KIB] [--time-budget MS] [--title TEXT]\n"
         "\n"
         "Grades a class: SUBMISSIONS_DIR holds one folder per student, laid out like\n"
         "students/ (e.g. alice/gemm/my_gemm.cpp). Each is built into its own runner\n"
         "against this build, checked on the operation's public test table and on the\n"
         "hidden table (reported separately), and timed on --shape against the starting\n"
         "and the best rung, measured in the same run. Every step runs in its own process\n"
         "with a wall-clock, memory, CPU-time and output limit, and may not write files:\n"
         "a crash, a hang, a huge allocation, a flood of output or a write is a verdict\n"
         "in that row. The report: DIR/report.json, report.csv, report.html (a ranked\n"
         "table and a bar chart), with a replay command in each failing row.\n"
         "\n"
         "--assignment FILE  key = value lines: start, best, shape, hidden (relative to the\n"
         "                   file), seed, title, time_limit, memory_limit, time_budget.\n"
         "                   Options on the command line win over the file.\n"
         "--start ID         the rung the assignment starts from, e.g. gemm/cpu/03b_loop_reorder:\n"
         "                   it fixes the op and device, and every test shape it supports is\n"
         "                   required of a submission\n"
         "--best ID          the rung to beat (timed beside it), e.g. gemm/cpu/03e_microkernel\n"
         "--shape SPEC       the timed problem (default: the op's tour shape for the device)\n"
         "--hidden TABLE     the instructor's shapes, one --shape spec per line ('#' comments)\n"
         "--seed N           the instructor's seed: every shape's inputs follow from it (default 1)\n"
         "--out DIR          where everything goes (default grade-report)\n"
         "--only NAMES       grade only these submissions (comma-separated folder names)\n"
         "--jobs N           builds and checks at once (default: the number of cores); timing\n"
         "                   always runs one at a time\n"
         "--time-limit S     wall-clock limit of each check and each timing (default 60)\n"
         "--build-time-limit S  of each build (default 300)\n"
         "--memory-limit MIB    of each process (default 4096)\n"
         "--output-limit KIB    the most a process may print or write (default 1024)\n"
         "--time-budget MS   timing stops when the median settles or after this long (default 3000)\n"
         "\n"
         "Example:\n"
         "  convlab grade class/ --start gemm/cpu/03b_loop_reorder --best gemm/cpu/03e_microkernel \\\n"
         "                --shape M=512,N=512,K=512 --hidden hidden-gemm.txt --seed 20261201\n"
         "\n"
         "Exit status: 0 the report was written (whatever the submissions did), 1 the\n"
         "grading itself failed (a baseline broke, no toolchain), 2 a usage error.\n";
}

// ---- small helpers -----------------------------------------------------------------------

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=,:+") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string safe_name(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return o.empty() ? "_" : o;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

std::vector<json::Value> read_lines(const std::string& path) {
  std::vector<json::Value> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (trim(line).empty()) continue;
    try {
      out.push_back(json::parse(line));
    } catch (const std::exception&) {  // a line cut short by a crash or the output limit
    }
  }
  return out;
}

std::string text_of(const json::Value& v, const char* key) {
  const json::Value* f = v.find(key);
  return f && f->is_string() ? f->text : "";
}
double number_of(const json::Value& v, const char* key, double fallback = -1) {
  const json::Value* f = v.find(key);
  return f && f->is_number() ? f->number : fallback;
}

// ---- the assignment -------------------------------------------------------------------------

struct Assignment {
  std::string title, start, best, shape, hidden;
  uint64_t seed = 1;
  double time_limit = 60, build_time_limit = 300, time_budget_ms = 3000;
  std::size_t memory_mib = 4096, output_kib = 1024;
};

std::map<std::string, std::string> read_assignment(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read the assignment file " + path);
  std::map<std::string, std::string> kv;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos)
      throw UsageError(path + ":" + std::to_string(n) + ": expected 'key = value', got '" + line + "'");
    const std::string key = trim(line.substr(0, eq));
    static const std::set<std::string> known = {"title", "start", "best", "shape", "hidden", "seed", "time_limit",
                                                "build_time_limit", "memory_limit", "output_limit", "time_budget"};
    if (!known.count(key)) throw UsageError(path + ":" + std::to_string(n) + ": unknown key '" + key + "'");
    kv[key] = trim(line.substr(eq + 1));
  }
  return kv;
}

int64_t to_int(const std::string& what, const std::string& text, int64_t min, int64_t max) {
  ParsedArgs p;
  p.values_["--" + what] = text;
  return p.get_int("--" + what, 0, min, max);
}

// The hidden table: one spec per line, canonical, in file order, no repeats.
std::vector<std::string> read_table(const std::string& path, const OpHandle& op) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read the hidden table " + path);
  std::vector<std::string> specs;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::string spec;
    try {
      spec = op.canonical(line);
    } catch (const std::exception& e) {
      throw UsageError(path + ":" + std::to_string(n) + ": " + e.what());
    }
    if (std::find(specs.begin(), specs.end(), spec) == specs.end()) specs.push_back(spec);
  }
  if (specs.empty()) throw UsageError("the hidden table " + path + " has no shapes");
  return specs;
}

// ---- the toolchain (build/grading/toolchain.txt) ---------------------------------------------

struct Toolchain {
  std::multimap<std::string, std::string> items;
  std::vector<std::string> all(const std::string& key) const {
    std::vector<std::string> v;
    for (auto [it, end] = items.equal_range(key); it != end; ++it) v.push_back(it->second);
    return v;
  }
  std::string one(const std::string& key) const {
    auto it = items.find(key);
    return it == items.end() ? "" : it->second;
  }
};

fs::path program_dir() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).parent_path();
}

Toolchain read_toolchain() {
  const fs::path path = program_dir() / "grading" / "toolchain.txt";
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("no " + path.string() +
                             ": this convlab was not built with CMake's grading recipe (reconfigure the build)");
  Toolchain t;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t sp = line.find(' ');
    if (sp != std::string::npos) t.items.emplace(line.substr(0, sp), line.substr(sp + 1));
  }
  return t;
}

// ---- building one submission ------------------------------------------------------------------

struct Submission {
  SubmissionResult result;
  fs::path root, out, runner, scratch;
  std::vector<fs::path> sources;
};

// The build script (kept, so the instructor or the student can rerun it).
std::string build_script(const Submission& s, const Toolchain& t) {
  std::string script = "#!/bin/sh\n# Builds " + s.result.name + "'s runner (convlab grade).\nset -e\n";
  std::vector<std::string> objects;
  auto includes = [&] {
    std::string inc = " -I" + shell_quote(s.root.string());
    for (const std::string& d : t.all("include")) inc += " -I" + shell_quote(d);
    for (const std::string& d : t.all("define")) inc += " -D" + shell_quote(d);
    return inc;
  };
  int n = 0;
  for (const fs::path& src : s.sources) {
    const fs::path obj = s.out / "obj" / (std::to_string(n++) + "_" + safe_name(src.filename().string()) + ".o");
    std::string cmd;
    if (src.extension() == ".cu") {
      cmd = (t.one("launcher").empty() ? "" : shell_quote(t.one("launcher")) + " ") + shell_quote(t.one("cuda"));
      for (const std::string& f : t.all("cuda_flag")) cmd += " " + shell_quote(f);
      // As the suite's CMake: files named *wgmma* or *cluster* (Hopper's arch-specific instructions) get sm_90a.
      const std::string file = src.filename().string();
      const bool hopper = file.find("wgmma") != std::string::npos || file.find("cluster") != std::string::npos;
      for (const std::string& f : t.all(hopper ? "cuda_arch_wgmma" : "cuda_arch")) cmd += " " + shell_quote(f);
    } else {
      cmd = (t.one("launcher").empty() ? "" : shell_quote(t.one("launcher")) + " ") + shell_quote(t.one("cxx"));
      for (const std::string& f : t.all("cxx_flag")) cmd += " " + shell_quote(f);
    }
    cmd += includes() + " -c " + shell_quote(src.string()) + " -o " + shell_quote(obj.string());
    script += cmd + "\n";
    objects.push_back(obj.string());
  }
  std::string link = shell_quote(t.one("cxx"));
  for (const std::string& f : t.all("cxx_flag"))
    if (f.rfind("-W", 0) != 0) link += " " + shell_quote(f);
  for (const std::string& o : objects) link += " " + shell_quote(o);
  for (const std::string& l : t.all("link")) link += " " + shell_quote(l);
  for (const std::string& l : t.all("link_flag")) link += " " + shell_quote(l);
  link += " -o " + shell_quote(s.runner.string());
  return script + link + "\n";
}

Limits run_limits(const Assignment& a, double wall_s, bool gpu) {
  Limits l;
  l.wall_s = wall_s;
  l.memory_bytes = a.memory_mib << 20;
  l.limit_data_only = gpu;
  l.file_bytes = a.output_kib << 10;
  return l;
}

std::vector<std::string> run_env(const fs::path& scratch) {
  return {"HOME=" + scratch.string(), "TMPDIR=" + scratch.string(), "MALLOC_ARENA_MAX=2", "CUDA_CACHE_DISABLE=1"};
}

// ---- reading a check or a timing back ------------------------------------------------------------

std::string phase_status(const Outcome& o) {
  if (o.kind == Outcome::Kind::timed_out) return "timed out";
  if (o.kind == Outcome::Kind::signaled) return o.signal == SIGXFSZ ? "output flood" : "crashed";
  return "error";
}

std::string replay_check(const fs::path& runner, const std::string& id, const std::string& spec, uint64_t seed) {
  return shell_quote(runner.string()) + " check " + id + " --shape " + shell_quote(spec) + " --input-seed " +
         std::to_string(seed);
}

TableResult read_check(const std::string& jsonl, const Outcome& o, const Limits& limits, const fs::path& runner,
                       const std::string& id, std::vector<std::string>& blocked) {
  TableResult t;
  t.process = o.describe(limits);
  bool done = false;
  std::string open_spec;
  uint64_t open_seed = 0;
  std::string runner_error;
  bool out_of_memory = false, first_recorded = false;
  auto record = [&](const std::string& spec, uint64_t seed, const std::string& where, const std::string& message) {
    if (first_recorded) return;
    first_recorded = true;
    t.fail_spec = spec;
    t.fail_seed = seed;
    t.fail_where = where;
    t.fail_message = message;
    t.replay = spec.empty() ? "" : replay_check(runner, id, spec, seed);
  };
  for (const json::Value& v : read_lines(jsonl)) {
    const std::string event = text_of(v, "event");
    if (event == "start") {
      open_spec = text_of(v, "spec");
      open_seed = uint64_t(number_of(v, "seed", 0));
    } else if (event == "shape") {
      open_spec.clear();
      const std::string status = text_of(v, "status"), spec = text_of(v, "spec");
      const uint64_t seed = uint64_t(number_of(v, "seed", 0));
      const bool required = v.find("required") && v.find("required")->boolean;
      ++t.shapes;
      if (status == "ok") {
        ++t.passed;
      } else if (status == "unsupported") {
        if (required) {
          ++t.unsupported_required;
          ++t.failed;
          record(spec, seed, "", "not supported, but the starting rung supports it: " + text_of(v, "message"));
        } else {
          ++t.unsupported_optional;
          --t.shapes;  // optional and declined: not counted
        }
      } else {
        ++t.failed;
        const std::string message = text_of(v, "message");
        if (message.find("bad_alloc") != std::string::npos) out_of_memory = true;
        record(spec, seed, text_of(v, "where"), (status == "error" ? "error: " : "") + message);
      }
    } else if (event == "blocked_write") {
      blocked.push_back(text_of(v, "syscall") + " " + text_of(v, "path"));
    } else if (event == "error") {
      runner_error = text_of(v, "message");
    } else if (event == "done") {
      done = true;
    }
  }
  if (!done || !o.ok()) {
    t.status = o.ok() ? "error" : phase_status(o);
    first_recorded = false;  // the death is the first failure that matters
    const std::string spec = open_spec.empty() ? t.fail_spec : open_spec;
    record(spec, open_spec.empty() ? t.fail_seed : open_seed, "",
           runner_error.empty() ? t.process + (open_spec.empty() ? "" : " while running this shape") : runner_error);
    if (open_spec.empty() && spec.empty()) t.replay = "";
    if (!open_spec.empty()) ++t.failed, ++t.shapes;
    return t;
  }
  t.status = out_of_memory ? "out of memory" : t.failed ? "fail" : "pass";
  if (t.shapes == 0 && t.status == "pass") {
    t.status = "fail";
    record("", 0, "", "supports none of the shapes");
  }
  return t;
}

TimingResult read_timing(const std::string& jsonl, const Outcome& o, const Limits& limits, const std::string& replay,
                         std::vector<std::string>* blocked) {
  TimingResult t;
  t.process = o.describe(limits);
  t.replay = replay;
  bool done = false, got = false;
  for (const json::Value& v : read_lines(jsonl)) {
    const std::string event = text_of(v, "event");
    if (event == "blocked_write" && blocked) blocked->push_back(text_of(v, "syscall") + " " + text_of(v, "path"));
    if (event == "done") done = true;
    if (event == "error") t.message = text_of(v, "message");
    if (event != "timing") continue;
    got = true;
    const std::string s = text_of(v, "status");
    t.status = s == "ok" ? "ok" : s == "FAIL" ? "fail" : s;
    t.message = text_of(v, "message");
    t.spec = text_of(v, "spec");
    t.seed = uint64_t(number_of(v, "seed", 0));
    t.median_ms = number_of(v, "median_ms");
    t.p10_ms = number_of(v, "p10_ms");
    t.p90_ms = number_of(v, "p90_ms");
    t.min_ms = number_of(v, "min_ms");
    t.spread = number_of(v, "spread");
    t.reps = int(number_of(v, "reps", 0));
    t.converged = v.find("converged") && v.find("converged")->boolean;
    t.cpu_per_wall = number_of(v, "cpu_per_wall");
    t.warning = text_of(v, "warning");
    t.flops = number_of(v, "flops", 0);
    t.min_bytes = number_of(v, "min_bytes", 0);
    t.threads = text_of(v, "threads");
    t.device = text_of(v, "device");
    t.dtype = text_of(v, "dtype");
  }
  if (!done || !o.ok() || !got) {
    t.status = o.ok() ? "error" : phase_status(o);
    if (t.message.empty()) t.message = t.process;
    t.median_ms = -1;
    return t;
  }
  if (t.status == "ok" && t.median_ms > 0) {
    t.gflops = t.flops / (t.median_ms * 1e-3) / 1e9;
    const Device d = t.device == "cuda" ? Device::gpu : Device::cpu;
    t.peak_gflops = machine_peaks().peak_gflops(d, parse_dtype(t.dtype.empty() ? "f32" : t.dtype),
                                                t.threads == "all" ? Threads::all : Threads::single);
    t.pct_peak = t.peak_gflops > 0 ? 100 * t.gflops / t.peak_gflops : -1;
  }
  return t;
}

std::string verdict_word(const std::string& status) {
  if (status == "fail") return "wrong";
  return status;
}
std::string flag_word(const std::string& status) {
  if (status == "timed out") return "timed_out";
  if (status == "out of memory") return "out_of_memory";
  if (status == "output flood") return "output_flood";
  return status;  // crashed, error
}

// Each blocked call once, in the order first seen.
void dedupe(std::vector<std::string>& v) {
  std::vector<std::string> unique;
  for (const std::string& x : v)
    if (std::find(unique.begin(), unique.end(), x) == unique.end()) unique.push_back(x);
  v = unique;
}

// The first line of a build log that names an error (else its first line).
std::string first_error_line(const std::string& log) {
  std::istringstream in(log);
  std::string first;
  for (std::string line; std::getline(in, line);) {
    if (first.empty()) first = line;
    if (line.find("error") != std::string::npos) return line;
  }
  return first;
}

// The row's variant, verdict, flags and summary.
void judge(SubmissionResult& s) {
  if (!s.built) {
    s.verdict = "build failed";
    s.flags = {"build_failed"};
    s.summary = s.build_process + (s.build_log.empty() ? "" : ": " + first_error_line(s.build_log));
    return;
  }
  if (s.variants.empty()) {
    for (const std::string& note : s.notes)
      if (note.rfind("listing its variants failed", 0) == 0) {
        s.verdict = "crashed (start-up)";
        s.flags = {"crashed"};
        s.summary = note;
        return;
      }
    s.verdict = "no variant";
    s.flags = {"no_variant"};
    s.summary = "registers no variant of the assignment's op and device";
    return;
  }
  s.chosen = 0;
  for (std::size_t i = 0; i < s.variants.size(); ++i) {
    const VariantResult& v = s.variants[i];
    const VariantResult& c = s.variants[std::size_t(s.chosen)];
    const bool v_ok = v.correct() && v.timing.status == "ok", c_ok = c.correct() && c.timing.status == "ok";
    if (v_ok && (!c_ok || v.timing.median_ms < c.timing.median_ms)) s.chosen = int(i);
  }
  const VariantResult& v = s.variants[std::size_t(s.chosen)];
  for (const VariantResult& any : s.variants)
    if (!any.blocked_writes.empty() &&
        std::find(s.flags.begin(), s.flags.end(), "blocked_write") == s.flags.end())
      s.flags.push_back("blocked_write");
  s.verdict.clear();
  for (const auto& [table, name] : {std::pair{&v.public_tests, "public"}, std::pair{&v.hidden_tests, "hidden"}}) {
    if (table->status == "pass" || table->status == "none") continue;
    s.flags.push_back(table->status == "fail" ? std::string("wrong_") + name : flag_word(table->status));
    if (s.verdict.empty()) {
      s.verdict = verdict_word(table->status) + " (" + name + " tests)";
      s.summary = name + std::string(" tests: ") + table->fail_message;
    }
  }
  if (s.verdict.empty() && v.timing.status != "ok") {
    s.flags.push_back("timing_" + flag_word(v.timing.status == "fail" ? "wrong" : v.timing.status));
    s.verdict = verdict_word(v.timing.status) + " (timing)";
    s.summary = "timing: " + v.timing.message;
  }
  if (s.verdict.empty()) {
    s.verdict = "ranked";
    s.summary = "correct on every public and hidden shape";
  }
  if (!v.blocked_writes.empty()) s.summary += "; tried to write files (blocked): " + v.blocked_writes[0];
  std::vector<std::string> unique;
  for (const std::string& f : s.flags)
    if (std::find(unique.begin(), unique.end(), f) == unique.end()) unique.push_back(f);
  s.flags = unique;
}

void print_progress(const std::string& text) { std::cout << text << std::endl; }

std::string fmt(double v, int d) {
  if (!(v >= 0)) return "-";
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(d);
  o << v;
  return o.str();
}

// ---- the command ------------------------------------------------------------------------------

int run(const std::vector<std::string>& args) {
  const ParsedArgs p = parse_args(args,
                                  {{"--assignment", true}, {"--start", true}, {"--best", true}, {"--shape", true},
                                   {"--hidden", true}, {"--seed", true}, {"--out", true}, {"--only", true},
                                   {"--jobs", true}, {"--time-limit", true}, {"--build-time-limit", true},
                                   {"--memory-limit", true}, {"--output-limit", true}, {"--time-budget", true},
                                   {"--title", true}},
                                  "grade");
  if (p.positional.size() != 1) throw UsageError("`convlab grade` takes one SUBMISSIONS_DIR (see --help)");
  const fs::path submissions_dir = fs::absolute(p.positional[0]);
  if (!fs::is_directory(submissions_dir)) throw UsageError(submissions_dir.string() + " is not a folder");

  // The assignment: the file, then the command line over it.
  std::map<std::string, std::string> kv;
  fs::path assignment_dir = fs::current_path();
  if (p.has("--assignment")) {
    kv = read_assignment(p.get("--assignment"));
    assignment_dir = fs::absolute(p.get("--assignment")).parent_path();
    if (kv.count("hidden")) kv["hidden"] = (assignment_dir / kv["hidden"]).string();
  }
  for (const char* key : {"start", "best", "shape", "hidden", "seed", "title", "time_limit", "build_time_limit",
                          "memory_limit", "output_limit", "time_budget"}) {
    std::string option = std::string("--") + key;
    std::replace(option.begin(), option.end(), '_', '-');
    if (p.has(option)) kv[key] = p.get(option);
  }
  Assignment a;
  a.start = kv["start"];
  a.best = kv["best"];
  a.hidden = kv["hidden"];
  if (a.start.empty()) throw UsageError("name the rung the assignment starts from: --start OP/DEVICE/NAME (or start = in --assignment)");
  if (kv.count("seed")) a.seed = uint64_t(to_int("seed", kv["seed"], 0, int64_t(1) << 62));
  if (kv.count("time_limit")) a.time_limit = double(to_int("time-limit", kv["time_limit"], 1, 86400));
  if (kv.count("build_time_limit")) a.build_time_limit = double(to_int("build-time-limit", kv["build_time_limit"], 1, 86400));
  if (kv.count("memory_limit")) a.memory_mib = std::size_t(to_int("memory-limit", kv["memory_limit"], 64, 1 << 22));
  if (kv.count("output_limit")) a.output_kib = std::size_t(to_int("output-limit", kv["output_limit"], 4, 1 << 22));
  if (kv.count("time_budget")) a.time_budget_ms = double(to_int("time-budget", kv["time_budget"], 1, 3600000));
  const int jobs = int(p.get_int("--jobs", std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)), 1, 256));

  const Target start = resolve_target(a.start);
  if (!start.single) throw UsageError("--start wants one rung, OP/DEVICE/NAME, got '" + a.start + "'");
  const VariantRef& start_ref = start.variants[0];
  OpHandle& op = *start.op;
  const Device device = start_ref.info.device;
  if (device == Device::gpu && cuda_device_count() == 0)
    throw std::runtime_error("the assignment is on the GPU and " + no_gpu_reason());
  std::string best_id;
  if (!a.best.empty()) {
    const Target best = resolve_target(a.best);
    if (!best.single || best.variants[0].info.op != op.name() || best.variants[0].info.device != device)
      throw UsageError("--best wants one rung of " + op.name() + " on " + device_name(device) + ", got '" + a.best + "'");
    best_id = best.variants[0].info.id();
  }
  a.shape = kv.count("shape") ? op.canonical(kv["shape"]) : op.shapes(ShapeTable::tour, device).at(0);
  for (const std::string& id : {start_ref.info.id(), best_id}) {
    if (id.empty()) continue;
    const Target t = resolve_target(id);
    if (std::string why = op.unsupported_reason(t.variants[0].index, a.shape); !why.empty())
      throw UsageError("the timing shape: " + why);
  }
  a.title = kv.count("title") ? kv["title"] : op.name() + " on " + device_name(device) + ": start from " +
                                                  start_ref.info.name + (best_id.empty() ? "" : ", beat " + resolve_target(best_id).variants[0].info.name);

  // The tables: a shape is required when the starting rung supports it.
  const fs::path out = fs::absolute(p.get("--out", "grade-report"));
  fs::create_directories(out / "tables");
  auto write_table = [&](const std::vector<std::string>& specs, const fs::path& path) {
    std::ofstream f(path);
    int required = 0;
    for (const std::string& s : specs) {
      const bool req = op.unsupported_reason(start_ref.index, s).empty();
      required += req;
      f << (req ? "required " : "optional ") << s << "\n";
    }
    if (!f) throw std::runtime_error("cannot write " + path.string());
    return int(specs.size());
  };
  const int public_count = write_table(op.shapes(ShapeTable::test, device), out / "tables" / "public.txt");
  int hidden_count = 0;
  if (!a.hidden.empty()) hidden_count = write_table(read_table(a.hidden, op), out / "tables" / "hidden.txt");

  const Toolchain toolchain = read_toolchain();
  const fs::path suite_runner = toolchain.one("suite_runner");
  if (suite_runner.empty() || !fs::exists(suite_runner))
    throw std::runtime_error("the suite's runner " + suite_runner.string() + " is not built (cmake --build: convlab_grade_suite)");
  const bool cuda_build = !toolchain.one("cuda").empty();

  Report report;
  report.title = a.title;
  report.op = op.name();
  report.device = device_name(device);
  report.start_id = start_ref.info.id();
  report.best_id = best_id;
  report.shape = a.shape;
  report.seed = a.seed;
  report.hidden_file = a.hidden.empty() ? "" : fs::absolute(a.hidden).string();
  report.public_shapes = public_count;
  report.hidden_shapes = hidden_count;
  report.created_utc = utc_now();
  if (const char* rev = std::getenv("CONVLAB_GIT_REV")) report.git_rev = rev;
  report.command_line = "convlab grade";
  for (const std::string& w : args) report.command_line += " " + shell_quote(w);
  const MachineLoad load0 = machine_load();
  report.load_at_start = load0.loadavg_1min;
  report.cores = load0.cores;
  if (load0.runnable - 1 > 0)
    report.warnings.push_back("busy machine: " + std::to_string(load0.runnable - 1) + " other tasks were runnable on " +
                              std::to_string(load0.cores) + " cores when grading started (load average " +
                              fmt(load0.loadavg_1min, 2) + "); the times may be noisy, the verdicts are not");
  if (a.hidden.empty()) report.warnings.push_back("no hidden table (--hidden): only the public shapes were checked");
  const MachinePeaks& peaks = machine_peaks();
  report.probe_json = peaks.to_json();
  report.probe_summary = peaks.cpu_model + ", " + std::to_string(peaks.cpu_threads) + " threads: FMA peak " +
                         fmt(peaks.cpu_gflops_1t, 1) + " GFLOP/s on 1 thread, " + fmt(peaks.cpu_gflops_all, 1) +
                         " on all; bandwidth " + fmt(peaks.cpu_gbs_all, 1) + " GB/s" +
                         (peaks.gpu.name.empty() ? "" : "; GPU " + peaks.gpu.name + ", SGEMM " +
                                                            fmt(peaks.gpu.sgemm_gflops, 0) + " GFLOP/s");
  print_progress("grading " + submissions_dir.string() + ": " + a.title);
  print_progress("  " + std::to_string(public_count) + " public shapes, " + std::to_string(hidden_count) +
                 " hidden; timed on " + a.shape + "; seed " + std::to_string(a.seed) + "; report in " + out.string());

  // ---- the submissions, and their builds
  std::set<std::string> only;
  if (p.has("--only"))
    for (const std::string& n : split(p.get("--only"), ',')) only.insert(n);
  std::vector<Submission> subs;
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& e : fs::directory_iterator(submissions_dir))
    if (e.is_directory() && e.path().filename().string()[0] != '.' && fs::absolute(e.path()) != out)
      dirs.push_back(e.path());  // (the report folder itself, when it was put inside the class, is no submission)
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& d : dirs) {
    const std::string name = d.filename().string();
    if (!only.empty() && !only.count(name)) continue;
    Submission s;
    s.root = d;
    s.result.name = name;
    s.result.dir = d.string();
    s.out = out / "submissions" / safe_name(name);
    s.runner = s.out / "runner";
    s.scratch = s.out / "scratch";
    s.result.out_dir = s.out.string();
    fs::remove_all(s.out);
    fs::create_directories(s.out / "obj");
    fs::create_directories(s.out / "logs");
    fs::create_directories(s.scratch);
    std::vector<fs::path> files;
    for (const fs::directory_entry& f : fs::recursive_directory_iterator(d))
      if (f.is_regular_file()) files.push_back(f.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const std::string ext = f.extension().string();
      if (ext == ".cpp") s.sources.push_back(f);
      else if (ext == ".cu" && cuda_build) s.sources.push_back(f);
      else if (ext == ".cu") s.result.notes.push_back(fs::relative(f, d).string() + ": not built (this build has no CUDA)");
    }
    subs.push_back(std::move(s));
  }
  if (only.size() > subs.size()) throw UsageError("--only names a submission that is not in " + submissions_dir.string());

  std::vector<Job> builds;
  std::vector<std::size_t> built_index;
  for (std::size_t i = 0; i < subs.size(); ++i) {
    Submission& s = subs[i];
    if (s.sources.empty()) {
      s.result.build_process = "no .cpp or .cu file";
      s.result.build_log = "the folder holds no variant file";
      continue;
    }
    const fs::path script = s.out / "build.sh";
    std::ofstream(script) << build_script(s, toolchain);
    s.result.build_replay = "sh " + shell_quote(script.string());
    Job j;
    j.argv = {"/bin/sh", script.string()};
    j.cwd = s.scratch.string();
    j.stdout_path = (s.out / "build.out").string();
    j.stderr_path = (s.out / "build.log").string();
    j.env = {"CCACHE_BASEDIR="};  // ccache may cache, but must not rewrite the paths in the compiler's messages
    j.limits.wall_s = a.build_time_limit;
    j.limits.memory_bytes = std::max<std::size_t>(a.memory_mib, 4096) << 20;
    j.limits.file_bytes = std::size_t(1) << 30;
    builds.push_back(j);
    built_index.push_back(i);
  }
  print_progress("building " + std::to_string(builds.size()) + " submissions (" + std::to_string(jobs) + " at a time)");
  const std::vector<Outcome> build_outcomes = run_all(builds, jobs);
  for (std::size_t k = 0; k < builds.size(); ++k) {
    Submission& s = subs[built_index[k]];
    s.result.build_process = build_outcomes[k].describe(builds[k].limits);
    s.result.built = build_outcomes[k].ok() && fs::exists(s.runner);
    s.result.build_log = read_head(builds[k].stderr_path, 4096);
  }

  // ---- what each runner holds
  std::vector<Job> lists;
  std::vector<std::size_t> list_index;
  for (std::size_t i = 0; i < subs.size(); ++i) {
    if (!subs[i].result.built) continue;
    Job j;
    j.argv = {subs[i].runner.string(), "list", "--result", (subs[i].out / "logs" / "list.jsonl").string()};
    j.cwd = subs[i].scratch.string();
    j.stdout_path = (subs[i].out / "logs" / "list.out").string();
    j.stderr_path = (subs[i].out / "logs" / "list.err").string();
    j.env = run_env(subs[i].scratch);
    j.limits = run_limits(a, a.time_limit, false);
    lists.push_back(j);
    list_index.push_back(i);
  }
  const std::vector<Outcome> list_outcomes = run_all(lists, jobs);
  for (std::size_t k = 0; k < lists.size(); ++k) {
    Submission& s = subs[list_index[k]];
    if (!list_outcomes[k].ok()) {
      s.result.notes.push_back("listing its variants failed: " + list_outcomes[k].describe(lists[k].limits) +
                               " (a static initialiser crashed?)");
      continue;
    }
    for (const json::Value& v : read_lines(lists[k].argv[3])) {
      if (text_of(v, "event") != "variant") continue;
      const std::string id = text_of(v, "id");
      if (text_of(v, "op") != op.name() || text_of(v, "device") != device_name(device)) {
        s.result.notes.push_back(id + ": not part of this assignment (" + op.name() + " on " + device_name(device) + ")");
        continue;
      }
      VariantResult r;
      r.id = id;
      r.name = text_of(v, "name");
      r.threads = text_of(v, "threads");
      s.result.variants.push_back(r);
    }
  }

  // ---- the checks: public and hidden tables, each variant, each in its own process
  struct CheckRef {
    std::size_t sub, variant;
    bool hidden;
  };
  std::vector<Job> checks;
  std::vector<CheckRef> check_refs;
  const bool gpu = device == Device::gpu;
  for (std::size_t i = 0; i < subs.size(); ++i)
    for (std::size_t v = 0; v < subs[i].result.variants.size(); ++v)
      for (bool hidden : {false, true}) {
        if (hidden && a.hidden.empty()) continue;
        const std::string tag = std::string(hidden ? "hidden" : "public") + "-" + std::to_string(v);
        Job j;
        j.argv = {subs[i].runner.string(), "check", subs[i].result.variants[v].id, "--table",
                  (out / "tables" / (hidden ? "hidden.txt" : "public.txt")).string(), "--seed", std::to_string(a.seed),
                  "--result", (subs[i].out / "logs" / (tag + ".jsonl")).string()};
        j.cwd = subs[i].scratch.string();
        j.stdout_path = (subs[i].out / "logs" / (tag + ".out")).string();
        j.stderr_path = (subs[i].out / "logs" / (tag + ".err")).string();
        j.env = run_env(subs[i].scratch);
        j.limits = run_limits(a, a.time_limit, gpu);
        checks.push_back(j);
        check_refs.push_back({i, v, hidden});
      }
  print_progress("checking " + std::to_string(checks.size()) + " (variant, table) pairs");
  const std::vector<Outcome> check_outcomes = run_all(checks, jobs);
  for (std::size_t k = 0; k < checks.size(); ++k) {
    Submission& s = subs[check_refs[k].sub];
    VariantResult& v = s.result.variants[check_refs[k].variant];
    TableResult t = read_check(checks[k].argv[8], check_outcomes[k], checks[k].limits, s.runner, v.id, v.blocked_writes);
    if (t.status != "pass") {  // what the submission itself said on stderr (an assertion, an exception), briefly
      std::string err = read_head(checks[k].stderr_path, 240);
      std::replace(err.begin(), err.end(), '\n', ' ');
      if (!trim(err).empty()) t.fail_message += " [stderr: " + trim(err) + "]";
    }
    (check_refs[k].hidden ? v.hidden_tests : v.public_tests) = t;
  }
  if (a.hidden.empty())
    for (Submission& s : subs)
      for (VariantResult& v : s.result.variants) v.hidden_tests.status = "none";  // no hidden table this run

  // ---- timing: one at a time, between two timings of the baselines
  const uint64_t timing_seed = shape_seed(a.seed, a.shape);
  auto timing_job = [&](const fs::path& runner, const std::string& id, const fs::path& logs, const fs::path& cwd,
                        const std::string& tag) {
    Job j;
    j.argv = {runner.string(), "time", id, "--shape", a.shape, "--input-seed", std::to_string(timing_seed),
              "--budget-ms", std::to_string(int(a.time_budget_ms)), "--result", (logs / (tag + ".jsonl")).string()};
    j.cwd = cwd.string();
    j.stdout_path = (logs / (tag + ".out")).string();
    j.stderr_path = (logs / (tag + ".err")).string();
    j.env = run_env(cwd);
    j.limits = run_limits(a, a.time_limit + a.time_budget_ms * 1e-3 + 5, gpu);
    return j;
  };
  auto timing_replay = [&](const fs::path& runner, const std::string& id) {
    return shell_quote(runner.string()) + " time " + id + " --shape " + shell_quote(a.shape) + " --input-seed " +
           std::to_string(timing_seed);
  };
  const fs::path suite_logs = out / "suite";
  fs::create_directories(suite_logs / "scratch");
  std::vector<std::pair<std::string, std::string>> baseline_ids = {{"start", report.start_id}};
  if (!best_id.empty()) baseline_ids.push_back({"best", best_id});
  auto time_baselines = [&](bool after) {
    for (std::size_t b = 0; b < baseline_ids.size(); ++b) {
      const std::string tag = baseline_ids[b].first + (after ? "-after" : "-before");
      const Job j = timing_job(suite_runner, baseline_ids[b].second, suite_logs, suite_logs / "scratch", tag);
      print_progress("timing " + baseline_ids[b].first + " rung " + baseline_ids[b].second + (after ? " (again)" : ""));
      const Outcome o = run_one(j);
      if (report.baselines.size() <= b) {
        BaselineResult r;
        r.role = baseline_ids[b].first;
        r.id = baseline_ids[b].second;
        report.baselines.push_back(r);
      }
      TimingResult t = read_timing(j.argv[10], o, j.limits, timing_replay(suite_runner, baseline_ids[b].second), nullptr);
      if (t.status != "ok")
        throw std::runtime_error("the " + baseline_ids[b].first + " rung " + baseline_ids[b].second +
                                 " failed its timing run: " + t.message + " (" + t.process + ")");
      (after ? report.baselines[b].after : report.baselines[b].before) = t;
    }
  };
  time_baselines(false);
  for (Submission& s : subs)
    for (std::size_t v = 0; v < s.result.variants.size(); ++v) {
      VariantResult& r = s.result.variants[v];
      if (!r.correct()) continue;
      print_progress("timing " + s.result.name + ": " + r.id);
      const Job j = timing_job(s.runner, r.id, s.out / "logs", s.scratch, "time-" + std::to_string(v));
      const Outcome o = run_one(j);
      r.timing = read_timing(j.argv[10], o, j.limits, timing_replay(s.runner, r.id), &r.blocked_writes);
    }
  time_baselines(true);
  for (BaselineResult& b : report.baselines) {
    b.median_ms = 0.5 * (b.before.median_ms + b.after.median_ms);
    b.drift = std::abs(b.after.median_ms - b.before.median_ms) / b.before.median_ms;
    b.gflops = b.before.flops / (b.median_ms * 1e-3) / 1e9;
    b.pct_peak = b.before.peak_gflops > 0 ? 100 * b.gflops / b.before.peak_gflops : -1;
    if (b.drift > 0.10)
      report.warnings.push_back("the " + b.role + " rung's time moved " + fmt(100 * b.drift, 0) +
                                "% between the first and the last timing: the machine's speed changed during grading");
  }

  // ---- verdicts and ranks
  std::vector<SubmissionResult*> ranked;
  for (Submission& s : subs) {
    for (VariantResult& v : s.result.variants) dedupe(v.blocked_writes);
    judge(s.result);
    if (s.result.verdict == "ranked") ranked.push_back(&s.result);
  }
  std::sort(ranked.begin(), ranked.end(), [](const SubmissionResult* x, const SubmissionResult* y) {
    return x->row_variant()->timing.median_ms < y->row_variant()->timing.median_ms;
  });
  const double start_ms = report.baselines[0].median_ms;
  const double best_ms = report.baselines.size() > 1 ? report.baselines[1].median_ms : -1;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    ranked[i]->rank = int(i) + 1;
    const double ms = ranked[i]->row_variant()->timing.median_ms;
    ranked[i]->speedup_over_start = start_ms / ms;
    if (best_ms > 0) ranked[i]->ratio_to_best = best_ms / ms;
  }
  int noisy = 0;
  for (Submission& s : subs)
    if (const VariantResult* v = s.result.row_variant(); v && !v->timing.warning.empty()) ++noisy;
  if (noisy) report.warnings.push_back(std::to_string(noisy) + " timing(s) carry a warning (see the rows)");
  // Published order: by rank, then the unranked by name.
  for (Submission& s : subs) report.submissions.push_back(std::move(s.result));
  std::stable_sort(report.submissions.begin(), report.submissions.end(),
                   [](const SubmissionResult& x, const SubmissionResult& y) {
                     if ((x.rank > 0) != (y.rank > 0)) return x.rank > 0;
                     return x.rank > 0 ? x.rank < y.rank : x.name < y.name;
                   });

  write_json(report, (out / "report.json").string());
  write_csv(report, (out / "report.csv").string());
  write_html(report, (out / "report.html").string());

  // ---- the table on the terminal
  std::size_t width = 10;
  for (const SubmissionResult& s : report.submissions) width = std::max(width, s.name.size());
  StreamingTable table(std::cout, {{"rank", 4, true}, {"submission", int(width)}, {"verdict", 22},
                                   {"public", 7, true}, {"hidden", 7, true}, {"median ms", 9, true},
                                   {"GFLOP/s", 8, true}, {"% peak", 6, true}, {"vs start", 8, true}});
  std::cout << "\n";
  for (const BaselineResult& b : report.baselines)
    std::cout << "  " << b.role << " rung " << b.id << ": " << fmt(b.median_ms, 4) << " ms, " << fmt(b.gflops, 2)
              << " GFLOP/s (" << fmt(b.pct_peak, 1) << "% of peak; drift " << fmt(100 * b.drift, 1) << "%)\n";
  table.print_header();
  auto count = [](const TableResult& t) { return t.status == "not run" || t.status == "none" ? std::string("-") : std::to_string(t.passed) + "/" + std::to_string(t.shapes); };
  for (const SubmissionResult& s : report.submissions) {
    const VariantResult* v = s.row_variant();
    table.print_row({s.rank ? std::to_string(s.rank) : "", s.name, s.verdict, v ? count(v->public_tests) : "-",
                     v ? count(v->hidden_tests) : "-", v ? fmt(v->timing.median_ms, 4) : "-",
                     v ? fmt(v->timing.gflops, 2) : "-", v ? fmt(v->timing.pct_peak, 1) : "-",
                     s.speedup_over_start > 0 ? fmt(s.speedup_over_start, 2) + "x" : "-"});
    if (s.verdict != "ranked") table.print_note(s.summary);
    if (!s.replay().empty() && s.verdict != "ranked") table.print_note("replay: " + s.replay());
  }
  for (const std::string& w : report.warnings) std::cout << "warning: " << w << "\n";
  std::cout << "\nwrote " << (out / "report.json").string() << ", report.csv, report.html\n";
  return 0;
}

}  // namespace

const Command grade_command{"grade", "grade a class's submissions: build, public and hidden tests, timing, report",
                            print_help, run};

}  // namespace convlab::app
