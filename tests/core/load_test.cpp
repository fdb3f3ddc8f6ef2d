// tests/core/load_test.cpp — timing that says how much to trust it, and the
// busy-machine check (core/timing.hpp, core/load.hpp).
//
// A busy machine is faked with CONVLAB_FAKE_LOADAVG (the load source the
// check reads first) and with a planted probe cache whose all-thread peak is
// below its one-thread peak; the warning must then appear, in one line, from
// the library and from `convlab run`, and the peaks must stay as measured.
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/load.hpp"
#include "core/probe.hpp"
#include "core/timing.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab {
namespace {

// Sets an environment variable for one scope and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

using convlab::testing::contains;

// A case whose run() spins for the next duration of a fixed cycle: the
// timing loop's input is known, so its verdict can be checked.
class SpinCase final : public ICase {
 public:
  explicit SpinCase(std::vector<double> cycle_ms) : cycle_(std::move(cycle_ms)) {}
  const VariantInfo& variant() const override { return info_; }
  std::string spec() const override { return "spin"; }
  std::string label() const override { return "spin"; }
  double flops() const override { return 1; }
  double min_bytes() const override { return 1; }
  double model_bytes() const override { return 1; }
  int64_t reduction_depth() const override { return 1; }
  std::size_t workspace_bytes() const override { return 0; }
  void poison_outputs() override {}
  void launch() override { run(); }
  void run() override {
    const double ms = cycle_[next_++ % cycle_.size()];
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(ms);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  CompareResult verify() override { return {}; }
  std::vector<Tensor> host_outputs() override { return {}; }
  std::vector<TensorSpec> output_specs() const override { return {}; }

 private:
  VariantInfo info_{"spin", "spin", Device::cpu, 0, Threads::single, "", false};
  std::vector<double> cycle_;
  std::size_t next_ = 0;
};

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("convlab_load_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

}  // namespace

TEST_CASE("timing: repetitions that disagree are flagged noisy", "[timing][cpu]") {
  SpinCase c({1.0, 6.0});  // alternating 1 ms and 6 ms: cv about 0.7, and still far above the
                           // noisy line when a loaded machine stretches every spin by a few ms
  TimingOptions o;
  o.warmup = 0;
  o.min_reps = 6;
  o.min_total_ms = 0;
  o.max_total_ms = 100;
  const Timing t = time_case(c, o);
  INFO("cv " << t.cv << ", " << t.samples_ms.size() << " samples");
  CHECK(t.cv > kNoisyCv);
  CHECK(t.noisy());
  // The samples are the spins: none shorter than its spin (load can only lengthen one).
  CHECK(t.min_ms >= 0.999);
  CHECK(t.max_ms >= 5.99);
}

TEST_CASE("timing: rounds double until the median settles, or stop at the cap", "[timing][cpu]") {
  SECTION("a steady case settles (a loose tolerance: the test machine is shared)") {
    SpinCase c({1.0});
    TimingOptions o;
    o.warmup = 0;
    o.min_reps = 4;
    o.min_total_ms = 0;
    o.settle_tolerance = 0.5;
    const Timing t = time_case(c, o);
    CHECK(t.settled);
    CHECK(t.rounds >= 2);  // settling needs two medians to compare
    CHECK(t.samples_ms.size() >= 8);
  }
  SECTION("a case that never settles stops at the time cap") {
    // Each repetition spins longer than the one before, so every round's median
    // is larger than the last one's, however the machine's load stretches them
    // (a cycle that repeats could hand back the same median twice and "settle").
    std::vector<double> rising;
    for (int i = 0; i < 40; ++i) rising.push_back(0.5 + 0.25 * i);  // 0.5 … 10.25 ms: past 25 ms long before it wraps
    SpinCase c(rising);
    TimingOptions o;
    o.warmup = 0;
    o.min_reps = 3;
    o.min_total_ms = 0;
    o.max_total_ms = 25;
    o.settle_tolerance = 1e-12;
    const Timing t = time_case(c, o);
    double total = 0;
    for (double ms : t.samples_ms) total += ms;
    CHECK_FALSE(t.settled);
    REQUIRE(!t.samples_ms.empty());
    CHECK(total >= 25);                         // it went on to the cap ...
    CHECK(total - t.samples_ms.back() < 25);    // ... and stopped at the first repetition past it
  }
  SECTION("--reps N: exactly N, one round") {
    SpinCase c({0.2});
    TimingOptions o;
    o.warmup = 0;
    o.min_reps = o.max_reps = 7;
    o.min_total_ms = 0;
    o.settle_tolerance = 0;
    const Timing t = time_case(c, o);
    CHECK(t.samples_ms.size() == 7);
    CHECK(t.rounds == 1);
  }
}

TEST_CASE("load: a faked busy machine is said in one line", "[load][cpu]") {
  {
    ScopedEnv busy("CONVLAB_FAKE_LOADAVG", "64");
    const LoadSample s = sample_load();
    CHECK(s.faked);
    CHECK(s.load_average == 64);
    CHECK(looks_busy(s));
    const std::string note = busy_note(s);
    CHECK(contains(note, "busy"));
    CHECK(note.find('\n') == std::string::npos);
  }
  {
    ScopedEnv quiet("CONVLAB_FAKE_LOADAVG", "0");
    CHECK_FALSE(looks_busy(sample_load()));
    CHECK(busy_note(sample_load()).empty());
  }
  LoadSample s;
  s.cores = 16;
  s.load_average = 4;  // a quarter of the cores: not busy
  CHECK_FALSE(looks_busy(s));
  s.load_average = 13;
  CHECK(looks_busy(s));
}

TEST_CASE("load: a probe disturbed by other work is reported, never rewritten", "[load][probe][cpu]") {
  MachinePeaks m;
  m.cpu_threads = 2;
  m.cpu_gflops_1t = 118;
  m.cpu_gflops_all = 90;  // below one thread: another process took a core
  m.cpu_gbs_1t = 20;
  m.cpu_gbs_all = 25;
  const std::vector<std::string> notes = probe_notes(m);
  REQUIRE(notes.size() == 1);
  CHECK(contains(notes[0], "below the one-thread peak"));
  CHECK(m.cpu_gflops_all == 90);  // as measured
  m.cpu_fma_spread = 0.4;         // chunks far apart
  CHECK(probe_notes(m).size() == 2);
  m.cpu_gflops_all = 230;
  m.cpu_fma_spread = 0.01;
  CHECK(probe_notes(m).empty());  // a quiet probe says nothing
  m.cpu_gflops_all = 119;         // two threads no faster than one: said, and kept as measured
  REQUIRE(probe_notes(m).size() == 1);
  CHECK(contains(probe_notes(m)[0], "barely above the one-thread peak"));
  CHECK(m.cpu_gflops_all == 119);
  m.cpu_threads = 1;              // one thread: nothing to compare
  CHECK(probe_notes(m).empty());
}

TEST_CASE("load: % of peak uses the peak of the threads a variant will use", "[load][probe][cpu]") {
  MachinePeaks m;
  m.cpu_threads = 2;
  m.cpu_gflops_1t = 115;
  m.cpu_gflops_all = 230;
  m.cpu_gbs_1t = 20;
  m.cpu_gbs_all = 30;
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);  // what OMP_NUM_THREADS=1 does
  CHECK(m.peak_gflops(Device::cpu, DType::f32, Threads::all) == 115);
  CHECK(m.peak_gbs(Device::cpu, Threads::all) == 20);
  omp_set_num_threads(2);
  CHECK(m.peak_gflops(Device::cpu, DType::f32, Threads::all) == 230);
  omp_set_num_threads(before);
}

TEST_CASE("load: convlab run says when the machine is busy or its probe was disturbed", "[load][app][cpu]") {
  if (testing::skip_without_program("load warning test")) return;
  // A planted probe cache for this machine: all threads below one thread.
  MachinePeaks planted = probe_cpu(0.01);
  planted.cpu_threads = std::max(2, omp_get_max_threads());
  planted.gpu.name = cuda_device_name();
  planted.cpu_gflops_1t = 118;
  planted.cpu_gflops_all = 100;
  planted.cpu_fma_spread = 0;
  const std::string cache = temp_file("probe.json");
  {
    std::ofstream(cache) << planted.to_json() << "\n";
  }
  ScopedEnv probe_file("CONVLAB_PROBE_FILE", cache.c_str());
  const std::string args = "run gemm/cpu/03b_loop_reorder --shape M=24,N=20,K=16 --reps 3";
  {
    ScopedEnv busy("CONVLAB_FAKE_LOADAVG", "64");
    const testing::ProgramResult r = testing::run_convlab(args);
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK(contains(r.out, "the cores look busy (load average 64.0"));
    CHECK(contains(r.out, "below the one-thread peak"));
    CHECK(contains(r.out, "spread"));
  }
  {
    ScopedEnv quiet("CONVLAB_FAKE_LOADAVG", "0");
    const testing::ProgramResult r = testing::run_convlab(args);
    INFO(r.out << r.err);
    CHECK(r.status == 0);
    CHECK_FALSE(contains(r.out, "look busy"));
  }
  // The cache is read, never rewritten to hide the low figure.
  CHECK(testing::read_text(cache).find("\"cpu_gflops_all\": 100") != std::string::npos);
  std::filesystem::remove(cache);
}

}  // namespace convlab
