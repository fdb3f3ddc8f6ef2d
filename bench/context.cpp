// bench/context.cpp — custom context entries for the benchmark JSON (see context.hpp).
//
// All values are strings (Google Benchmark's context is a string map); numbers
// are printed with enough digits to be read back by the notebooks.
#include "bench/context.hpp"

#include <benchmark/benchmark.h>

#include <omp.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "bench/measure.hpp"
#include "core/device.hpp"
#include "core/json.hpp"
#include "core/load.hpp"
#include "core/probe.hpp"

namespace convlab::bench {

namespace {

void add(const std::string& key, const std::string& value) { benchmark::AddCustomContext(key, value); }

}  // namespace

void add_machine_context() {
  // Asked before the probe, which loads every core itself.
  const LoadSample load = sample_load();
  // Measured afresh for every benchmark run (about 2 s), so the % of peak of
  // this run is against this run's machine state, not a stale cache.
  measure_and_cache_peaks(false);
  const MachinePeaks& peaks = machine_peaks();

  add("cpu_model", peaks.cpu_model);
  add("cpu_threads", std::to_string(peaks.cpu_threads));
  add("cpu_has_fma", peaks.cpu_has_fma ? "true" : "false");
  add("cpu_gflops_1t", json::number(peaks.cpu_gflops_1t));    // fp32 FMA throughput, one thread
  add("cpu_gflops_all", json::number(peaks.cpu_gflops_all));  // fp32 FMA throughput, all threads
  add("cpu_gbs_1t", json::number(peaks.cpu_gbs_1t));          // triad bandwidth, one thread
  add("cpu_gbs_all", json::number(peaks.cpu_gbs_all));        // triad bandwidth, all threads

  add("cpu_fma_spread", json::number(peaks.cpu_fma_spread));  // probe chunks: 1 - median/best
  add("omp_threads", std::to_string(omp_get_max_threads()));  // what Threads::all variants use (their pct_peak's peak)
  add("load_average", json::number(load.load_average));      // 1-minute, before the run; -1 unknown
  // The warnings, one line each, in the JSON and on stderr (stdout may be JSON).
  std::string notes = busy_note(load);
  for (const std::string& note : probe_notes(peaks)) notes += (notes.empty() ? "" : " | ") + note;
  add("machine_notes", notes);
  if (!notes.empty()) std::cerr << "convlab_bench: " << notes << "\n";

  add("cuda_compiled", cuda_compiled() ? "true" : "false");
  add("cuda_devices", std::to_string(cuda_device_count()));
  if (!peaks.gpu.name.empty()) {
    add("gpu_name", peaks.gpu.name);
    add("gpu_sm_count", std::to_string(peaks.gpu.sm_count));
    add("gpu_copy_gbs", json::number(peaks.gpu.copy_gbs));              // device-to-device copy
    add("gpu_sgemm_gflops", json::number(peaks.gpu.sgemm_gflops));      // cuBLAS fp32, TF32 off
    add("gpu_hgemm_gflops", json::number(peaks.gpu.hgemm_gflops));      // cuBLAS fp16, fp32 accumulate
    add("gpu_bf16gemm_gflops", json::number(peaks.gpu.bf16gemm_gflops));
  }

  add("convlab_seed", std::to_string(base_seed()));
  if (const char* rev = std::getenv("CONVLAB_GIT_REV"); rev != nullptr && *rev != '\0') add("git_rev", rev);
}

}  // namespace convlab::bench
