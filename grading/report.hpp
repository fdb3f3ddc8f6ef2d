// grading/report.hpp — what a grading run found, and the three files it is
// published as: report.json (everything), report.csv (one row per
// submission) and report.html (one self-contained page: the table and an
// inline-SVG bar chart; no script, no network).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace convlab::grading {

// One sandboxed check of a table of shapes (the public or the hidden one).
struct TableResult {
  // "pass", "fail", "crashed", "timed out", "out of memory", "output flood", "error", "not run";
  // the hidden table: "none" when the run had no hidden table
  std::string status = "not run";
  int shapes = 0, passed = 0, failed = 0, unsupported_required = 0, unsupported_optional = 0;
  std::string process;             // the runner's outcome: "exit 0", "killed by SIGSEGV (...)"
  // The first failing shape: its spec, input seed, where (coordinates) and the error.
  std::string fail_spec, fail_where, fail_message;
  uint64_t fail_seed = 0;
  std::string replay;              // a command that reruns exactly the failing case
};

struct TimingResult {
  std::string status = "not run";  // "ok", "fail", "unsupported", "crashed", "timed out", "error", "not run"
  std::string message, process, replay;
  std::string spec;
  uint64_t seed = 0;
  double median_ms = -1, p10_ms = -1, p90_ms = -1, min_ms = -1, spread = -1, cpu_per_wall = -1;
  int reps = 0;
  bool converged = false;
  std::string warning;
  double flops = 0, min_bytes = 0;
  double gflops = -1, pct_peak = -1, peak_gflops = 0;
  std::string threads, device, dtype;
};

struct VariantResult {
  std::string id, name, threads;
  TableResult public_tests, hidden_tests;
  TimingResult timing;
  std::vector<std::string> blocked_writes;  // "openat ../../escape.txt"
  // "none" for the hidden table: the run had none (--hidden not given).
  bool correct() const {
    return public_tests.status == "pass" && (hidden_tests.status == "pass" || hidden_tests.status == "none");
  }
};

struct SubmissionResult {
  std::string name, dir, out_dir;
  bool built = false;
  std::string build_process, build_log, build_replay;  // build_log: its head
  std::vector<std::string> notes;         // files left out, variants of other ops, ...
  std::vector<VariantResult> variants;    // of the assignment's op and device
  int chosen = -1;                        // the variant the row shows (the fastest correct one)
  std::string verdict;                    // "ranked", "build failed", "wrong (hidden)", "crashed", ...
  std::vector<std::string> flags;         // short tags: "build_failed", "wrong_hidden", "blocked_write", ...
  std::string summary;                    // one line: why this verdict
  int rank = 0;                           // 1 = fastest correct; 0 = not ranked
  double speedup_over_start = -1, ratio_to_best = -1;
  const VariantResult* row_variant() const { return chosen >= 0 ? &variants[std::size_t(chosen)] : nullptr; }
  std::string replay() const;             // the first failure's replay command ("" if none)
};

struct BaselineResult {
  std::string role, id;                   // "start" / "best"
  TimingResult before, after;             // timed first and last: the drift says whether the machine changed
  double median_ms = -1, gflops = -1, pct_peak = -1, drift = -1;
};

struct Report {
  std::string title, op, device, start_id, best_id, shape, hidden_file, command_line, created_utc, git_rev;
  uint64_t seed = 0;
  int public_shapes = 0, hidden_shapes = 0;
  std::string probe_json;                 // the machine's measured peaks (core/probe), as JSON
  std::string probe_summary;              // "x86 ..., 2 threads: 1 thread 60 GFLOP/s ..."
  double load_at_start = 0;
  int cores = 1;
  std::vector<std::string> warnings;      // for the whole run (busy machine, drift, ...)
  std::vector<BaselineResult> baselines;
  std::vector<SubmissionResult> submissions;
};

void write_json(const Report& r, const std::string& path);
void write_csv(const Report& r, const std::string& path);
void write_html(const Report& r, const std::string& path);

}  // namespace convlab::grading
