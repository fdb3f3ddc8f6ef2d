// grading/sandbox.hpp — run a child process under limits, so that what a
// student's code does (crash, hang, allocate without end, print megabytes,
// fork) ends in a one-line outcome instead of taking the grader down.
//
// Each job runs in a process group of its own (the wall-clock kill reaches its
// children too), with stdin from /dev/null, stdout and stderr written to files,
// and these resource limits (setrlimit, inherited across exec):
//   RLIMIT_AS (or RLIMIT_DATA)  memory: a huge allocation fails (std::bad_alloc)
//                               instead of waking the kernel's OOM killer. CUDA
//                               reserves far more address space than it uses, so
//                               jobs that touch the GPU limit RLIMIT_DATA instead.
//   RLIMIT_FSIZE                the largest file it may write, its captured output
//                               included: a flood of printing is killed (SIGXFSZ).
//   RLIMIT_CPU                  CPU seconds (SIGXCPU), a backstop to the wall limit.
//   RLIMIT_CORE = 0             no core files.
// The wall-clock limit is the parent's: it polls, and kills the whole group.
// This contains accidents; it is not a security boundary against a student
// who means harm (run the grader in a container for that: docs/grading.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace convlab::grading {

struct Limits {
  double wall_s = 60;               // killed (SIGKILL to the group) after this long
  double cpu_s = 0;                 // RLIMIT_CPU; 0: wall_s × cores + 5
  std::size_t memory_bytes = 0;     // RLIMIT_AS / RLIMIT_DATA; 0: none
  bool limit_data_only = false;     // RLIMIT_DATA instead of RLIMIT_AS (GPU jobs)
  std::size_t file_bytes = 0;       // RLIMIT_FSIZE; 0: none
};

struct Job {
  std::vector<std::string> argv;    // argv[0] is the program (a path, or found on PATH)
  std::string cwd;                  // "" = the grader's
  std::string stdout_path, stderr_path;
  std::vector<std::string> env;     // "KEY=value" added to (or replacing in) the grader's environment
  Limits limits;
};

struct Outcome {
  enum class Kind { exited, signaled, timed_out, not_started };
  Kind kind = Kind::not_started;
  int exit_code = -1;   // exited
  int signal = 0;       // signaled
  double wall_s = 0;
  long max_rss_kib = 0; // the child's peak resident memory
  std::string error;    // not_started: why
  bool ok() const { return kind == Kind::exited && exit_code == 0; }
  // One line: "exit 0", "killed by SIGSEGV (invalid memory access)", "timed out after 3 s (killed)", ...
  std::string describe(const Limits& limits) const;
};

// Runs every job, at most `parallel` at a time; outcomes in the order of `jobs`.
std::vector<Outcome> run_all(const std::vector<Job>& jobs, int parallel);
inline Outcome run_one(const Job& job) { return run_all({job}, 1).at(0); }

// At most `max_bytes` of a file, with a note when it was cut ("" if unreadable).
std::string read_head(const std::string& path, std::size_t max_bytes);

}  // namespace convlab::grading
