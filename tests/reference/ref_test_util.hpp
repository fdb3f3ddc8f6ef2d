// tests/reference/ref_test_util.hpp — small helpers for the reference
// self-tests: seeded random buffers, an element-wise closeness check that
// reports the first mismatch, and a "throws std::invalid_argument" probe.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/catch_compat.hpp"

namespace convlab::ref_test {

// `count` values uniform in [lo, hi) from std::mt19937_64 seeded with `seed`.
inline std::vector<double> random_vector(size_t count, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::vector<double> values(count);
  for (double& v : values) v = uniform(engine);
  return values;
}

// CHECKs that |actual[i] − expected[i]| <= tolerance for every i (NaN never
// passes) and names the first offending index when it fails.
inline void check_all_close(const std::vector<double>& actual, const std::vector<double>& expected,
                            double tolerance) {
  REQUIRE(actual.size() == expected.size());
  size_t first_bad = actual.size();
  double worst_error = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double error = std::abs(actual[i] - expected[i]);
    if (!(error <= tolerance)) {
      if (first_bad == actual.size()) first_bad = i;
      if (!(error <= worst_error)) worst_error = error;
    }
  }
  std::ostringstream report;
  if (first_bad < actual.size())
    report << "first mismatch at index " << first_bad << " of " << actual.size() << ": actual " << actual[first_bad]
           << ", expected " << expected[first_bad] << "; worst error " << worst_error << " > tolerance "
           << tolerance;
  INFO(report.str());
  CHECK(first_bad == actual.size());
}

// True when calling f throws std::invalid_argument whose message contains
// `needle`; false when it throws nothing or something else.
template <class Function>
bool throws_invalid_argument(Function&& f, const std::string& needle = "") {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return std::string(e.what()).find(needle) != std::string::npos;
  } catch (...) {
    return false;
  }
  return false;
}

}  // namespace convlab::ref_test
