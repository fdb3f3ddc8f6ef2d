// tests/fuzz/fuzz_test.cpp — the fuzz harnesses on every test run: a bounded,
// seeded mutation loop over each harness's seed inputs.
//
// Each test mutates its seeds (bit flips, bytes set to values parsers care
// about, insertions of grammar tokens, deletions, duplications, truncations,
// splices of two inputs) and feeds every result to the harness, for
// CONVLAB_FUZZ_SECONDS seconds (default 2) or CONVLAB_FUZZ_RUNS inputs
// (default 200000), whichever ends first. The mutations come from
// CONVLAB_SEED (tests/support.hpp), so a failure replays exactly; the input
// that broke the contract is printed in hex. Under `make test-sanitize` the
// same loop runs with AddressSanitizer and UBSan watching every input.
// Longer, coverage-guided runs: `make fuzz` (libFuzzer, tests/fuzz/libfuzzer_entry.cc).
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tests/catch_compat.hpp"
#include "tests/fuzz/fuzz_targets.hpp"
#include "tests/support.hpp"

namespace {

using convlab::fuzz::FuzzFailure;

double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atof(v) : fallback;
}

std::string hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s.substr(0, 4096)) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out + (s.size() > 4096 ? "..." : "");
}

class Mutator {
 public:
  Mutator(uint64_t seed, std::vector<std::string> tokens) : rng_(seed), tokens_(std::move(tokens)) {}

  std::string mutate(const std::vector<std::string>& corpus) {
    std::string s = corpus[pick(corpus.size())];
    const int rounds = 1 + int(pick(4));
    for (int r = 0; r < rounds; ++r) step(s, corpus);
    if (s.size() > kMaxSize) s.resize(kMaxSize);
    return s;
  }

 private:
  static constexpr std::size_t kMaxSize = 1 << 16;
  std::size_t pick(std::size_t n) { return n ? std::size_t(rng_() % n) : 0; }

  void step(std::string& s, const std::vector<std::string>& corpus) {
    static const unsigned char interesting[] = {0x00, 0x01, 0x7F, 0x80, 0xFF, 0x93, '0', '9', '-', '=', ',',
                                                '[', ']', '{', '}', '(', ')', '"', '\'', '\\', ':', ' ', '\n'};
    switch (pick(8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= char(1u << pick(8));
        break;
      case 1:  // a byte parsers care about
        if (!s.empty()) s[pick(s.size())] = char(interesting[pick(sizeof interesting)]);
        break;
      case 2:  // insert a grammar token
        s.insert(pick(s.size() + 1), tokens_[pick(tokens_.size())]);
        break;
      case 3: {  // delete a range
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        s.erase(at, 1 + pick(std::min<std::size_t>(16, s.size() - at)));
        break;
      }
      case 4: {  // duplicate a range, sometimes many times (deep nesting, long numbers)
        if (s.empty()) break;
        const std::size_t at = pick(s.size()), len = 1 + pick(std::min<std::size_t>(8, s.size() - at));
        const std::string piece = s.substr(at, len);
        const std::size_t times = pick(4) == 0 ? 1 + pick(2000) : 1;
        std::string many;
        for (std::size_t i = 0; i < times && many.size() < kMaxSize; ++i) many += piece;
        s.insert(at, many);
        break;
      }
      case 5:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 6: {  // splice with another input
        const std::string& other = corpus[pick(corpus.size())];
        s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
        break;
      }
      case 7: {  // overwrite with a random integer's digits (sizes, lengths)
        const std::string digits = std::to_string(rng_() >> pick(64));
        if (s.empty()) s = digits;
        else s.replace(pick(s.size()), std::min<std::size_t>(digits.size(), 4), digits);
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::string> tokens_;
};

template <class Harness>
void fuzz_loop(const char* name, Harness harness, const std::vector<std::string>& seeds, std::vector<std::string> tokens) {
  const double seconds = env_number("CONVLAB_FUZZ_SECONDS", 2.0);
  const long max_runs = long(env_number("CONVLAB_FUZZ_RUNS", 200000));
  const uint64_t seed = convlab::testing::base_seed() ^ std::hash<std::string>{}(name);
  Mutator mutator(seed, std::move(tokens));
  const auto start = std::chrono::steady_clock::now();
  long runs = 0;
  std::string failure, input;
  auto feed = [&](const std::string& bytes) {
    input = bytes;
    try {
      harness(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const FuzzFailure& e) {
      failure = std::string("contract broken: ") + e.what();
    } catch (const std::exception& e) {
      failure = std::string("unexpected exception: ") + e.what();
    }
    ++runs;
  };
  for (const std::string& s : seeds) feed(s);  // every seed as it is first
  while (failure.empty() && runs < max_runs &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds)
    feed(mutator.mutate(seeds));
  INFO(name << ": " << runs << " inputs in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s (CONVLAB_SEED="
            << convlab::testing::base_seed() << ")");
  if (!failure.empty()) {
    INFO(failure << "\ninput (hex): " << hex(input));
    CHECK(failure.empty());
  }
  CHECK(runs >= long(seeds.size()));
}

}  // namespace

TEST_CASE("fuzz: the .npy reader keeps its contract on mutated files", "[fuzz][cpu]") {
  fuzz_loop("npy", convlab::fuzz::fuzz_npy, convlab::fuzz::npy_seeds(),
            {"\x93NUMPY", "'descr'", "'<f4'", "'<f2'", "'>f8'", "[('a', '<f4')]", "'fortran_order'", "True", "False",
             "'shape'", "(", ")", "9223372036854775807", "4294967296", "L", ", ", "{", "}"});
}

TEST_CASE("fuzz: the JSON reader keeps its contract on mutated text", "[fuzz][cpu]") {
  fuzz_loop("json", convlab::fuzz::fuzz_json, convlab::fuzz::json_seeds(),
            {"[", "]", "{", "}", "\"", "\\u", "\\ud800", "1e999", "-", "true", "null", ":", ",", "[[[[[[[[", "\"\\"});
}

TEST_CASE("fuzz: shape text and option parsing keep their contract on mutated text", "[fuzz][cpu]") {
  fuzz_loop("options", convlab::fuzz::fuzz_options, convlab::fuzz::options_seeds(),
            {"N=", "H=", "pad=", "stride=", "groups=", "hidden=", "dtype=f16", "dtype=bf16", "1073741824", "2147483647",
             "-1", "0", ",", "=", "--shape ", "--out ", "--reps ", "--json", "--shape=", " "});
}
