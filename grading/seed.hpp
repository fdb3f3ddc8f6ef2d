// grading/seed.hpp — the inputs of every graded shape follow from the
// instructor's seed and the shape's text, so a grading run is reproducible and
// each shape draws different data. FNV-1a: the same number on every machine
// and compiler (std::hash is not). The result is the seed `convlab run --seed`
// and the runner's --input-seed take, so any failure replays exactly.
#pragma once

#include <cstdint>
#include <string>

namespace convlab::grading {

inline uint64_t shape_seed(uint64_t seed, const std::string& canonical_spec) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : canonical_spec) h = (h ^ c) * 1099511628211ull;
  return h % 1000000000000ull;  // twelve digits: short enough to paste
}

}  // namespace convlab::grading
