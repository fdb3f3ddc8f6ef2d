// tests/fuzz/fuzz_targets.hpp — the fuzz harnesses: one function per parser of
// untrusted input, each taking raw bytes.
//
// Each function feeds its bytes to the parser and returns normally whatever the
// bytes are, as long as the parser keeps its contract: it either succeeds with a
// result that is consistent with its input, or throws the one documented kind
// of error (a message for the user). Any other outcome — another exception
// type, a crash, a sanitizer report, an allocation larger than the input can
// justify — is a bug. A broken contract is reported by throwing FuzzFailure.
//
// The same functions are driven from two places:
//   tests/fuzz/fuzz_test.cpp        a bounded, seeded mutation loop, a few seconds per harness, on every
//                                   test run (ctest, and under ASan/UBSan with `make test-sanitize`)
//   tests/fuzz/libfuzzer_entry.cc   libFuzzer's LLVMFuzzerTestOneInput, for long runs by hand (`make fuzz`)
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace convlab::fuzz {

struct FuzzFailure : std::logic_error {
  using std::logic_error::logic_error;
};

// The .npy reader (core/npy.hpp) on the bytes of a file: std::runtime_error only.
void fuzz_npy(const uint8_t* data, std::size_t size);
// The JSON reader (core/json.hpp): std::runtime_error only.
void fuzz_json(const uint8_t* data, std::size_t size);
// The option layer: the first byte picks an operation, the rest is its --shape
// text (KeyValues and OpTraits<P>::parse: SpecError or std::invalid_argument
// only; a parsed problem's tensor sizes are checked without allocating), and
// the same bytes, split at spaces, go through app::parse_args as a command line
// (UsageError only).
void fuzz_options(const uint8_t* data, std::size_t size);

// Valid and nearly valid inputs to start mutating from.
std::vector<std::string> npy_seeds();
std::vector<std::string> json_seeds();
std::vector<std::string> options_seeds();

}  // namespace convlab::fuzz
