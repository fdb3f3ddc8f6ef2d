// cpu/lib/threads.hpp — how many threads the OpenMP CPU variants use.
//
// A variant with per-thread workspace (a packed A block, a tile, a slab per
// thread) sizes it for thread_count() threads when the case is built, and its
// run() starts as many: both ask here, so they agree as long as
// OMP_NUM_THREADS does not change in between.
#pragma once

#include <omp.h>

namespace convlab::cpu {

inline int thread_count() { return omp_get_max_threads(); }

}  // namespace convlab::cpu
