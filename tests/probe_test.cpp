// tests/probe_test.cpp — the machine probe (core/probe.hpp): plausible CPU
// numbers, the peak a variant is judged against, and the JSON cache.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/load.hpp"
#include "core/probe.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace {

using namespace convlab;

// One short probe shared by the cases below (~0.3 s).
const MachinePeaks& quick_probe() {
  static const MachinePeaks m = probe_cpu(0.05);
  return m;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("convlab_probe_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// Points CONVLAB_PROBE_FILE at `path` for the lifetime of this object.
struct ProbeFileOverride {
  explicit ProbeFileOverride(const std::string& path) {
    if (const char* old = std::getenv("CONVLAB_PROBE_FILE")) previous = old;
    had_previous = std::getenv("CONVLAB_PROBE_FILE") != nullptr;
    setenv("CONVLAB_PROBE_FILE", path.c_str(), 1);
  }
  ~ProbeFileOverride() {
    if (had_previous) setenv("CONVLAB_PROBE_FILE", previous.c_str(), 1);
    else unsetenv("CONVLAB_PROBE_FILE");
  }
  std::string previous;
  bool had_previous = false;
};

}  // namespace

TEST_CASE("probe: CPU peaks are positive and plausible", "[probe][cpu]") {
  const MachinePeaks& m = quick_probe();
  INFO(m.to_json());
  CHECK(!m.cpu_model.empty());
  CHECK(m.cpu_threads >= 1);
  // Any CPU of the last twenty years: more than 0.5 GFLOP/s and 0.5 GB/s on one
  // core, and well under 100 TFLOP/s and 10 TB/s on all of them.
  CHECK(m.cpu_gflops_1t > 0.5);
  CHECK(m.cpu_gflops_all < 1e5);
  CHECK(m.cpu_gbs_1t > 0.5);
  CHECK(m.cpu_gbs_all < 1e4);
  // More threads never make the machine slower, so an all-thread figure below
  // the one-thread one is other processes on the cores: the probe keeps the
  // figure as measured and must say so (a test run shares the cores, so this
  // can happen here).
  if (m.cpu_threads > 1 && m.cpu_gflops_all < m.cpu_gflops_1t) CHECK(!probe_notes(m).empty());
  // All threads cannot beat one thread by much more than the thread count (the
  // slack allows for other processes slowing the single-thread measurement).
  CHECK(m.cpu_gflops_all <= 4.0 * m.cpu_threads * m.cpu_gflops_1t);
  // An AVX2/FMA core does at least 8 flops per cycle, so at > 1 GHz more than 8 GFLOP/s.
  if (m.cpu_has_fma) CHECK(m.cpu_gflops_1t > 8);
}

TEST_CASE("probe: the peak each variant is judged against", "[probe][cpu]") {
  MachinePeaks m;
  m.cpu_gflops_1t = 10;
  m.cpu_gflops_all = 40;
  m.cpu_gbs_1t = 5;
  m.cpu_gbs_all = 15;
  m.gpu.sgemm_gflops = 50000;
  m.gpu.hgemm_gflops = 600000;
  m.gpu.bf16gemm_gflops = 590000;
  m.gpu.copy_gbs = 4000;
  m.cpu_threads = 4;
  CHECK(m.peak_gflops(Device::cpu, DType::f32, Threads::single) == 10);
  // A threaded variant is judged against the threads it will use now.
  const int now = omp_get_max_threads();
  CHECK(m.peak_gflops(Device::cpu, DType::f32, Threads::all) == m.cpu_gflops_for(now));
  CHECK(m.peak_gflops(Device::cpu, DType::f16, Threads::all) == m.cpu_gflops_for(now));  // the CPU computes f16 in f32
  CHECK(m.cpu_gflops_for(1) == 10);  // OMP_NUM_THREADS=1: the one-thread peak
  CHECK(m.cpu_gflops_for(2) == 20);  // in between: linear in threads
  CHECK(m.cpu_gflops_for(3) == 30);
  CHECK(m.cpu_gflops_for(4) == 40);  // all the probed threads: the all-thread peak
  CHECK(m.cpu_gflops_for(8) == 40);
  CHECK(m.cpu_gbs_for(3) == 15);     // capped by the all-thread figure
  CHECK(m.peak_gflops(Device::gpu, DType::f32, Threads::all) == 50000);
  CHECK(m.peak_gflops(Device::gpu, DType::f16, Threads::all) == 600000);
  CHECK(m.peak_gflops(Device::gpu, DType::bf16, Threads::single) == 590000);
  CHECK(m.peak_gbs(Device::cpu, Threads::single) == 5);
  CHECK(m.peak_gbs(Device::cpu, Threads::all) == m.cpu_gbs_for(now));
  CHECK(m.peak_gbs(Device::gpu, Threads::all) == 4000);
}

TEST_CASE("probe: the cache is reused on this machine and ignored from another", "[probe][cpu]") {
  // A cache written for this very machine, with numbers no measurement gives.
  MachinePeaks planted;
  planted.cpu_model = quick_probe().cpu_model;
  planted.cpu_threads = std::max(3, omp_get_max_threads());  // a cache for fewer threads than now is not used
  planted.cpu_has_fma = true;
  planted.cpu_gflops_1t = 123.25;
  planted.cpu_gflops_all = 456.5;
  planted.cpu_gbs_1t = 7.75;
  planted.cpu_gbs_all = 19.125;
  planted.gpu.name = cuda_device_name();
  planted.gpu.copy_gbs = 3.5;
  planted.gpu.sgemm_gflops = 1e4;

  SECTION("same CPU and GPU: the cached numbers come back unchanged") {
    const std::string path = temp_path("same.json");
    std::ofstream(path) << planted.to_json();
    const ProbeFileOverride env(path);
    const MachinePeaks& m = machine_peaks();
    CHECK(m.cpu_model == planted.cpu_model);
    CHECK(m.cpu_threads == std::max(3, omp_get_max_threads()));
    CHECK(m.cpu_has_fma);
    CHECK(m.cpu_gflops_1t == 123.25);
    CHECK(m.cpu_gflops_all == 456.5);
    CHECK(m.cpu_gbs_1t == 7.75);
    CHECK(m.cpu_gbs_all == 19.125);
    CHECK(m.gpu.copy_gbs == 3.5);
    CHECK(m.gpu.sgemm_gflops == 1e4);
    CHECK(&machine_peaks() == &m);  // read once
    std::filesystem::remove(path);
  }

  SECTION("another CPU: measured afresh and rewritten") {
    const std::string path = temp_path("other.json");
    planted.cpu_model = "Imaginary CPU \"9000\" \\ (test)";  // also exercises string escaping
    std::ofstream(path) << planted.to_json();
    const ProbeFileOverride env(path);
    const MachinePeaks& m = machine_peaks();  // measures: about a second
    CHECK(m.cpu_model == quick_probe().cpu_model);
    CHECK(m.cpu_gflops_1t != 123.25);
    CHECK(m.cpu_gflops_1t > 0.5);
    const std::string written = testing::read_text(path);
    INFO(written);
    CHECK(written.find("Imaginary") == std::string::npos);
    CHECK(written.find("\"cpu_gflops_1t\"") != std::string::npos);
    std::filesystem::remove(path);
  }
}
