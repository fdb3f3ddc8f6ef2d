#include "core/load.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/probe.hpp"

namespace convlab {

LoadSample sample_load() {
  LoadSample s;
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  s.cores = online > 0 ? int(online) : 1;
  if (const char* fake = std::getenv("CONVLAB_FAKE_LOADAVG"); fake && *fake) {
    char* end = nullptr;
    const double v = std::strtod(fake, &end);
    if (end != fake && v >= 0) {
      s.load_average = v;
      s.faked = true;
      return s;
    }
  }
  std::ifstream in("/proc/loadavg");
  double one_minute = -1;
  if (in >> one_minute) s.load_average = one_minute;
  return s;
}

bool looks_busy(const LoadSample& s) {
  return s.load_average >= 0 && s.load_average > std::max(1.0, 0.75 * s.cores);
}

std::string busy_note(const LoadSample& s) {
  if (!looks_busy(s)) return "";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "note: the cores look busy (load average %.1f on %d cores%s): times may be long and noisy, "
                "peaks low; rerun on a quiet machine to trust them",
                s.load_average, s.cores, s.faked ? ", from CONVLAB_FAKE_LOADAVG" : "");
  return buf;
}

std::vector<std::string> probe_notes(const MachinePeaks& m) {
  std::vector<std::string> notes;
  char buf[320];
  if (m.cpu_threads > 1 && m.cpu_gflops_all > 0 && m.cpu_gflops_all < m.cpu_gflops_1t) {
    std::snprintf(buf, sizeof buf,
                  "note: the FMA peak on %d threads (%.0f GFLOP/s) is below the one-thread peak (%.0f): other "
                  "processes held cores while probing; `convlab probe` on a quiet machine measures it again",
                  m.cpu_threads, m.cpu_gflops_all, m.cpu_gflops_1t);
    notes.push_back(buf);
  } else if (m.cpu_threads > 1 && m.cpu_gflops_all > 0 && m.cpu_gflops_all < 1.1 * m.cpu_gflops_1t) {
    // An all-thread peak no higher than one thread's inflates every Threads::all row's % of peak
    // (by the thread count, on the 2-core machine): either the cores were shared while probing,
    // or the threads share one core's FMA pipes (SMT); a quiet re-probe tells which.
    std::snprintf(buf, sizeof buf,
                  "note: the FMA peak on %d threads (%.0f GFLOP/s) is barely above the one-thread peak (%.0f): "
                  "other processes held cores while probing, or the threads share one core (SMT); `convlab "
                  "probe` on a quiet machine tells which",
                  m.cpu_threads, m.cpu_gflops_all, m.cpu_gflops_1t);
    notes.push_back(buf);
  }
  if (m.cpu_threads > 1 && m.cpu_gbs_all > 0 && m.cpu_gbs_all < 0.9 * m.cpu_gbs_1t) {
    std::snprintf(buf, sizeof buf,
                  "note: the triad bandwidth on %d threads (%.1f GB/s) is below the one-thread figure (%.1f): "
                  "the probe shared the machine",
                  m.cpu_threads, m.cpu_gbs_all, m.cpu_gbs_1t);
    notes.push_back(buf);
  }
  if (m.cpu_fma_spread > kProbeNoisySpread) {
    std::snprintf(buf, sizeof buf,
                  "note: the probe's FMA chunks disagreed (median %.0f%% below the best): the cores were busy "
                  "while probing",
                  100 * m.cpu_fma_spread);
    notes.push_back(buf);
  }
  return notes;
}

}  // namespace convlab
