// tests/support.hpp — what the registry-driven tests share: the seed, the
// GPU skip, and "run one variant over its operation's test table".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/harness.hpp"

namespace convlab::testing {

// The run's base seed: $CONVLAB_SEED if set, otherwise fresh from the clock.
// It is printed with every failure, so any failure can be replayed exactly.
uint64_t base_seed();
// The seed of one shape's inputs: base_seed() mixed with the shape's text, so
// each shape draws different data and a failure replays with CONVLAB_SEED.
uint64_t seed_for(const std::string& spec);

// True (and prints CONVLAB-SKIP, which CTest reports as skipped) when a GPU
// test cannot run here.
bool skip_without_gpu();

// checked_run twice (a run must not lean on the previous run's output),
// failing the Catch test with `what` and the replay seed on a mismatch.
void check_twice(ICase& c, const std::string& what);

// Runs variant `index` of `op` on every supported test shape: poison, run,
// verify; fails the Catch test on any mismatch, and if the variant supports
// none of the shapes (a variant must be tested on something).
void check_variant_on_table(const OpHandle& op, std::size_t index);

}  // namespace convlab::testing
