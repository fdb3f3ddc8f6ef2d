// bench/main.cpp — convlab_bench: every registered variant on every benchmark
// shape, through Google Benchmark.
//
// At start-up one benchmark is registered per (operation, variant, shape of the
// operation's bench table that the variant supports), named
//   op/device/variant/label        e.g. conv2d/cpu/01b_openmp/n8h56w56c64_k64r3s3_str1pad1g1_f32
// Nothing here names a variant: a new file in cpu/ or gpu/ is benchmarked with
// no edit. Benchmarks of one shape are registered next to each other, so the
// variants of that shape share one double-precision reference (see harness.hpp).
// Cases are built lazily when a benchmark runs, so --benchmark_filter costs
// nothing for the benchmarks it leaves out.
//
//   build/convlab_bench --benchmark_filter=conv2d/cpu
//                       --benchmark_out=/tmp/bench-cpu.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <iostream>
#include <string>
#include <vector>

#include "bench/context.hpp"
#include "bench/measure.hpp"
#include "core/harness.hpp"

namespace {

using namespace convlab;
using convlab::bench::BenchTarget;

// Minimum measured time per benchmark (seconds), used unless the command line
// gives --benchmark_min_time. A variant slower than this gets one timed
// iteration, so even the seven-loop conv finishes in seconds. On the GPU it is
// event time: the L2 flushes between repetitions are not counted.
// It is passed as the global default rather than per benchmark with MinTime(),
// because MinTime() would append "/min_time:0.250" to every benchmark name.
constexpr const char* kDefaultMinTimeSeconds = "0.25";

// Google Benchmark 1.8 (State::skipped() appeared with it) wants a unit on
// --benchmark_min_time ("0.25s"); 1.7 wants a bare number of seconds.
template <class State> constexpr bool min_time_takes_unit = requires(State& s) { s.skipped(); };

struct CommandLine {
  std::vector<std::string> storage;  // owns the strings `args` points into
  std::vector<char*> args;           // argv for benchmark::Initialize
  bool only_listing = false;         // --benchmark_list_tests: no need to probe the machine
};

// Copies argv, adding our default --benchmark_min_time unless one was given.
CommandLine prepare_command_line(int argc, char** argv) {
  CommandLine cl;
  bool has_min_time = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--benchmark_min_time", 0) == 0) has_min_time = true;
    if (arg == "--benchmark_list_tests" || arg == "--benchmark_list_tests=true") cl.only_listing = true;
    cl.storage.push_back(arg);
  }
  if (!has_min_time) {
    const std::string unit = min_time_takes_unit<benchmark::State> ? "s" : "";
    cl.storage.push_back(std::string("--benchmark_min_time=") + kDefaultMinTimeSeconds + unit);
  }
  for (std::string& s : cl.storage) cl.args.push_back(s.data());
  cl.args.push_back(nullptr);
  return cl;
}

// Every (op, variant, shape) the bench tables ask for, in registration order.
// GPU variants are left out (and counted) when no device is visible.
std::vector<BenchTarget> collect_targets(int& left_out_gpu) {
  std::vector<BenchTarget> targets;
  const bool have_gpu = cuda_device_count() > 0;
  left_out_gpu = 0;
  for (const OpHandle* op : all_ops()) {
    const std::vector<VariantInfo> variants = op->variants();
    for (Device device : {Device::cpu, Device::gpu}) {
      for (const std::string& spec : op->shapes(ShapeTable::bench, device)) {
        const DType dtype = op->input_specs(spec).front().dtype;
        for (std::size_t i = 0; i < variants.size(); ++i) {
          if (variants[i].device != device) continue;
          if (!op->unsupported_reason(i, spec).empty()) continue;
          if (device == Device::gpu && !have_gpu) {
            ++left_out_gpu;
            continue;
          }
          targets.push_back({op, i, variants[i], spec, dtype, bench::seed_for(spec)});
        }
      }
    }
  }
  return targets;
}

void register_benchmarks(const std::vector<BenchTarget>& targets) {
  for (const BenchTarget& target : targets) {
    const std::string name = target.info.id() + "/" + target.op->label(target.spec);
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
        name.c_str(), [target](benchmark::State& state) { bench::measure_case(state, target); });
    b->Unit(benchmark::kMillisecond);
    if (target.info.device == Device::gpu)
      b->UseManualTime();  // CUDA-event time of the kernel alone
    else
      b->UseRealTime();    // threaded variants: CPU time would add up every thread
  }
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine cl = prepare_command_line(argc, argv);
  int bench_argc = int(cl.args.size()) - 1;

  int left_out_gpu = 0;
  const std::vector<BenchTarget> targets = collect_targets(left_out_gpu);
  register_benchmarks(targets);
  if (left_out_gpu > 0)  // stderr: stdout may be JSON (--benchmark_format=json)
    std::cerr << "convlab_bench: " << left_out_gpu << " GPU benchmark(s) left out: no CUDA device visible"
              << (cuda_compiled() ? "" : " (built without CUDA)") << "\n";

  benchmark::Initialize(&bench_argc, cl.args.data());
  if (benchmark::ReportUnrecognizedArguments(bench_argc, cl.args.data())) return 1;
  if (!cl.only_listing) bench::add_machine_context();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
