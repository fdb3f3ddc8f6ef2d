// tests/support.hpp — what the tests share: the seed, the GPU skip, "run one
// variant over its operation's test table", and running the convlab program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
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

// ---- the convlab program ----------------------------------------------------------------

// The convlab program built beside this test binary; "" when it is not there.
std::string convlab_program();
// True (and prints CONVLAB-SKIP, naming `what` was not run) when it is not there.
bool skip_without_program(const std::string& what);

struct ProgramResult {
  int status = -1;  // exit status; -1 if it did not exit normally
  std::string out, err;
};
// Runs `convlab ARGS` through the shell, its stdout and stderr captured.
ProgramResult run_convlab(const std::string& args);

// The whole text of a file ("" when it cannot be read).
std::string read_text(const std::filesystem::path& path);

}  // namespace convlab::testing
