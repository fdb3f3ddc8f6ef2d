// core/probe.hpp — the machine's own limits, measured rather than copied.
//
// Every "% of peak" in convlab divides by one of these numbers. They are
// measured once (`convlab probe`) and cached as JSON beside the programs;
// a cache from another machine (different CPU model or GPU) is ignored.
#pragma once

#include <string>

#include "core/device.hpp"
#include "core/dtype.hpp"
#include "core/registry.hpp"

namespace convlab {

struct GpuPeaks {
  std::string name;            // "" when no GPU was probed
  int sm_count = 0;
  double copy_gbs = 0;         // device-to-device copy, bytes read + written
  double sgemm_gflops = 0;     // cuBLAS fp32 (TF32 off) at a large square size
  double hgemm_gflops = 0;     // cuBLAS fp16 in, fp32 accumulate
  double bf16gemm_gflops = 0;  // cuBLAS bf16 in, fp32 accumulate
};

struct MachinePeaks {
  std::string cpu_model;
  int cpu_threads = 1;
  bool cpu_has_fma = false;
  double cpu_gflops_1t = 0, cpu_gflops_all = 0;  // fp32 FMA throughput
  double cpu_gbs_1t = 0, cpu_gbs_all = 0;        // memory bandwidth (triad)
  // 1 - median/best of the FMA chunks (the worse of the two runs): near 0 on a
  // quiet machine; large when other processes took the cores while probing.
  double cpu_fma_spread = 0;
  GpuPeaks gpu;

  // Peak arithmetic rate (GFLOP/s) a variant is judged against: a
  // Threads::all variant is judged against the threads it will actually use
  // now (omp_get_max_threads(): OMP_NUM_THREADS=1 gives the one-thread peak).
  double peak_gflops(Device device, DType dtype, Threads threads) const;
  // Peak memory bandwidth (GB/s) a variant is judged against (same rule).
  double peak_gbs(Device device, Threads threads) const;
  // The CPU peak of `threads` threads: the one-thread figure, the all-thread
  // one when threads >= cpu_threads, and threads × the one-thread figure
  // (capped by the all-thread one) in between.
  double cpu_gflops_for(int threads) const;
  double cpu_gbs_for(int threads) const;
  std::string to_json() const;
};

// Whether the CPU running this process has AVX2 and FMA: asked of that CPU at
// run time, never assumed from how the binary was compiled. The probe's FMA
// loop and lesson 03's micro-kernel choice both go by it.
bool cpu_has_avx2_fma();

// A probe whose FMA chunks' median falls this far below their best was disturbed.
inline constexpr double kProbeNoisySpread = 0.10;

MachinePeaks probe_cpu(double seconds_per_test = 0.25);
GpuPeaks probe_gpu();  // empty when there is no GPU

// Where the probe is cached: $CONVLAB_PROBE_FILE, else probe.json beside the
// executable.
std::string probe_file_path();

// The cached probe for this machine (at probe_file_path()); measured and
// written if missing or from another machine.
const MachinePeaks& machine_peaks();
MachinePeaks measure_and_cache_peaks(bool verbose);

}  // namespace convlab
