// core/load.hpp — is anything else running on these cores?
//
// A time measured while another build shares the cores can be twice the
// quiet one, and a peak probed then is too low. Nothing is corrected for
// that; it is said, in one line, by the probe, `convlab run` and the tour.
// Two signs are looked at: the 1-minute load average against the core count
// (asked before measuring), and the probe's own numbers (an all-thread peak
// below the one-thread peak, or chunks whose rates disagree).
#pragma once

#include <string>
#include <vector>

namespace convlab {

struct MachinePeaks;

struct LoadSample {
  double load_average = -1;  // runnable tasks, 1-minute average; -1 when unknown
  int cores = 1;             // online processors
  bool faked = false;        // came from $CONVLAB_FAKE_LOADAVG
};

// /proc/loadavg and the online core count. $CONVLAB_FAKE_LOADAVG, when set to
// a number, replaces the load average (tests fake a busy machine with it).
LoadSample sample_load();

// Busy: the load average exceeds max(1, 3/4 of the cores), i.e. most cores
// already have something to run before this program starts.
bool looks_busy(const LoadSample& s);

// One line saying the cores look busy and what that does to the numbers; ""
// when they look free.
std::string busy_note(const LoadSample& s);

// What the probe's own numbers say about how quiet it was: one line per
// sign (an all-thread rate below the one-thread one, chunks that disagree).
// The peaks themselves are never changed.
std::vector<std::string> probe_notes(const MachinePeaks& peaks);

}  // namespace convlab
