// bench/context.hpp — the machine's measured peaks and the source revision,
// written into the "context" block of Google Benchmark's JSON so a plot drawn
// later from that file alone knows which ceilings this run was measured under.
#pragma once

namespace convlab::bench {

// Probes (or loads the cached probe of) this machine and adds its peaks, the
// GPU name and CONVLAB_GIT_REV as custom context entries. Call before running.
void add_machine_context();

}  // namespace convlab::bench
