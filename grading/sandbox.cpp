// grading/sandbox.cpp — see sandbox.hpp.
#include "grading/sandbox.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace convlab::grading {
namespace {

using Clock = std::chrono::steady_clock;

std::string format_bytes(std::size_t bytes) {
  if (bytes >= (std::size_t(1) << 30) && bytes % (std::size_t(1) << 30) == 0)
    return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (std::size_t(1) << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

std::string format_seconds(double s) {
  std::ostringstream o;
  o << (std::round(s * 10) / 10) << " s";
  return o.str();
}

// Everything the child needs, prepared before fork(): after it, only
// async-signal-safe calls (no allocation), since the grader may have threads.
struct Prepared {
  std::vector<std::string> env_storage;
  std::vector<char*> argv, envp;
};

Prepared prepare(const Job& job) {
  Prepared p;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& mine : job.env) replaced |= mine.substr(0, mine.find('=')) == key;
    if (!replaced) p.env_storage.push_back(entry);
  }
  for (const std::string& mine : job.env) p.env_storage.push_back(mine);
  for (const std::string& a : job.argv) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  for (std::string& e : p.env_storage) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  return p;
}

void set_limit(int resource, rlim_t value) {
  struct rlimit r{value, value};
  setrlimit(resource, &r);
}

[[noreturn]] void child(const Job& job, Prepared& p) {
  setpgid(0, 0);  // a group of its own: the wall-clock kill reaches whatever it forks
  const int in = open("/dev/null", O_RDONLY);
  const int out = open(job.stdout_path.empty() ? "/dev/null" : job.stdout_path.c_str(),
                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = open(job.stderr_path.empty() ? "/dev/null" : job.stderr_path.c_str(),
                       O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0 || err < 0) _exit(126);
  dup2(in, 0);
  dup2(out, 1);
  dup2(err, 2);
  for (int fd = 3; fd < 1024; ++fd) close(fd);
  if (!job.cwd.empty() && chdir(job.cwd.c_str()) != 0) {
    static const char msg[] = "sandbox: cannot enter the job's folder\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(126);
  }
  // Signals the grader may ignore or block go back to their defaults.
  for (int s : {SIGXFSZ, SIGXCPU, SIGPIPE, SIGINT, SIGTERM, SIGSEGV}) signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  const Limits& l = job.limits;
  set_limit(RLIMIT_CORE, 0);
  if (l.memory_bytes) set_limit(l.limit_data_only ? RLIMIT_DATA : RLIMIT_AS, rlim_t(l.memory_bytes));
  if (l.file_bytes) set_limit(RLIMIT_FSIZE, rlim_t(l.file_bytes));
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const double cpu = l.cpu_s > 0 ? l.cpu_s : l.wall_s * double(cores > 0 ? cores : 1) + 5;
  set_limit(RLIMIT_CPU, rlim_t(std::ceil(cpu)));
  execvpe(p.argv[0], p.argv.data(), p.envp.data());
  static const char msg[] = "sandbox: cannot start the program\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(127);
}

struct Running {
  std::size_t index;
  pid_t pid;
  Clock::time_point start;
};

}  // namespace

std::string Outcome::describe(const Limits& limits) const {
  switch (kind) {
    case Kind::not_started: return "could not start: " + error;
    case Kind::timed_out: return "timed out after " + format_seconds(limits.wall_s) + " (killed)";
    case Kind::exited: return exit_code == 127 ? "exit 127 (the program could not be started)"
                                               : "exit " + std::to_string(exit_code);
    case Kind::signaled: break;
  }
  std::string name = sigabbrev_np(signal) ? std::string("SIG") + sigabbrev_np(signal) : std::to_string(signal);
  std::string why;
  switch (signal) {
    case SIGSEGV: why = "invalid memory access"; break;
    case SIGBUS: why = "bus error (misaligned or unmapped memory)"; break;
    case SIGFPE: why = "arithmetic fault (e.g. integer division by zero)"; break;
    case SIGILL: why = "illegal instruction"; break;
    case SIGABRT: why = "aborted (an assertion, std::terminate, or a heap corruption check)"; break;
    case SIGXFSZ:
      why = "wrote more than the " + format_bytes(limits.file_bytes) + " output limit";
      break;
    case SIGXCPU: why = "used more than its CPU-time limit"; break;
    case SIGKILL: why = "killed (out of memory, or by the system)"; break;
    default: why = strsignal(signal); break;
  }
  return "killed by " + name + " (" + why + ")";
}

std::vector<Outcome> run_all(const std::vector<Job>& jobs, int parallel) {
  std::vector<Outcome> outcomes(jobs.size());
  std::vector<Running> running;
  std::size_t next = 0;
  if (parallel < 1) parallel = 1;
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && int(running.size()) < parallel) {
      const Job& job = jobs[next];
      Prepared p = prepare(job);
      const pid_t pid = fork();
      if (pid < 0) {
        outcomes[next].error = std::string("fork failed: ") + std::strerror(errno);
        ++next;
        continue;
      }
      if (pid == 0) child(job, p);
      setpgid(pid, pid);  // also here, so the group exists before any kill below
      running.push_back({next, pid, Clock::now()});
      ++next;
    }
    bool reaped = false;
    for (std::size_t i = 0; i < running.size();) {
      Running& r = running[i];
      Outcome& o = outcomes[r.index];
      int status = 0;
      struct rusage usage{};
      const pid_t done = wait4(r.pid, &status, WNOHANG, &usage);
      const double elapsed = std::chrono::duration<double>(Clock::now() - r.start).count();
      if (done == 0 && elapsed <= jobs[r.index].limits.wall_s) {
        ++i;
        continue;
      }
      if (done == 0) {  // over the wall-clock limit: the whole group goes
        kill(-r.pid, SIGKILL);
        wait4(r.pid, &status, 0, &usage);
        o.kind = Outcome::Kind::timed_out;
      } else if (WIFEXITED(status)) {
        o.kind = Outcome::Kind::exited;
        o.exit_code = WEXITSTATUS(status);
      } else {
        o.kind = Outcome::Kind::signaled;
        o.signal = WTERMSIG(status);
      }
      kill(-r.pid, SIGKILL);  // whatever it left behind (a forked child) goes too
      o.wall_s = elapsed;
      o.max_rss_kib = usage.ru_maxrss;
      running.erase(running.begin() + std::ptrdiff_t(i));
      reaped = true;
    }
    if (!reaped && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return outcomes;
}

std::string read_head(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string text(max_bytes, '\0');
  in.read(text.data(), std::streamsize(max_bytes));
  text.resize(std::size_t(in.gcount()));
  if (in.peek() != std::char_traits<char>::eof()) text += "\n[... cut at " + std::to_string(max_bytes) + " bytes]";
  return text;
}

}  // namespace convlab::grading
