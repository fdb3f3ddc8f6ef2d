// bench/measure.hpp — what one registered benchmark does when Google Benchmark
// calls it: build the case, check it, time it, check it again, report counters.
//
// main.cpp only decides *which* benchmarks exist; everything about *how* one is
// measured lives behind measure_case(), so the CPU and GPU paths sit side by side.
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/harness.hpp"

namespace convlab::bench {

// One benchmark = one variant of one operation on one shape.
struct BenchTarget {
  const OpHandle* op = nullptr;
  std::size_t variant = 0;   // index into op->variants()
  VariantInfo info;
  std::string spec;          // "M=1024,N=1024,K=1024,dtype=f32" (parseable, goes into the label)
  DType dtype = DType::f32;  // chooses the peak that pct_peak divides by
  uint64_t seed = 0;         // the same for every variant of one shape: they share one reference
};

// The body of every benchmark. Called several times per benchmark by Google
// Benchmark (it grows the iteration count until MinTime is reached); the case
// is built on the first call and kept until another benchmark starts.
void measure_case(benchmark::State& state, const BenchTarget& target);

// Seed for a shape: CONVLAB_SEED (if set) mixed with a stable hash of the spec.
uint64_t seed_for(const std::string& spec);
uint64_t base_seed();

}  // namespace convlab::bench
