// tests/fuzz/libfuzzer_entry.cc — libFuzzer's entry point for one harness of
// tests/fuzz/fuzz_targets.hpp, chosen at compile time (CONVLAB_FUZZ_TARGET,
// CONVLAB_FUZZ_SEEDS_FN; CMakeLists.txt with -DCONVLAB_FUZZ=ON). Built with
// clang -fsanitize=fuzzer by `make fuzz` (README "Fuzzing"); named .cc so the
// test program's tests/*.cpp glob leaves it out.
//
// A broken contract (FuzzFailure) or any unexpected exception escapes
// LLVMFuzzerTestOneInput, terminates, and libFuzzer saves the input as a crash.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/fuzz/fuzz_targets.hpp"

// With CONVLAB_FUZZ_SEEDS=DIR, the harness's seed inputs are written into DIR
// (the corpus folder) before libFuzzer reads it.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("CONVLAB_FUZZ_SEEDS")) {
    int i = 0;
    for (const std::string& s : convlab::fuzz::CONVLAB_FUZZ_SEEDS_FN())
      std::ofstream(std::string(dir) + "/seed-" + std::to_string(i++), std::ios::binary) << s;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  convlab::fuzz::CONVLAB_FUZZ_TARGET(data, size);
  return 0;
}
