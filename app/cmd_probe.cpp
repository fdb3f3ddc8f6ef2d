// app/cmd_probe.cpp — `convlab probe`: measure this machine's limits afresh
// and cache them, so every "% of peak" divides by a number from this machine.
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "app/commands.hpp"
#include "app/common.hpp"
#include "core/load.hpp"
#include "core/probe.hpp"

namespace convlab::app {
namespace {

void print_help(std::ostream& out) {
  out << "usage: convlab probe [--out FILE]\n"
         "\n"
         "Measures the CPU's fp32 FMA throughput (AVX2/FMA kernel with independent\n"
         "accumulators) and memory bandwidth (STREAM-style triad over arrays far larger\n"
         "than the cache), each on one thread and on all, and with a GPU its copy\n"
         "bandwidth and cuBLAS GEMM rates. The result is cached as JSON and used by\n"
         "`convlab run` and `convlab tour` for % of peak. The figures are kept as\n"
         "measured; when the cores look busy (load average) or the probe's own numbers\n"
         "disagree (all threads slower than one, chunks far apart) it says so in a note.\n"
         "\n"
         "--out FILE  where to write the cache (default: $CONVLAB_PROBE_FILE if set,\n"
         "            else probe.json beside the convlab program). Other programs find\n"
         "            a cache elsewhere than the default through CONVLAB_PROBE_FILE.\n";
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_args(args, {{"--out", true}}, "probe");
  if (!parsed.positional.empty()) throw UsageError("`convlab probe` takes no arguments, got '" + parsed.positional[0] + "'");
  if (parsed.has("--out")) {
    const std::string path = parsed.get("--out");
    if (path.empty()) throw UsageError("--out needs a file name");
    if (!std::ofstream(path, std::ios::app)) throw std::runtime_error("cannot write " + path);
    setenv("CONVLAB_PROBE_FILE", path.c_str(), 1);  // measure_and_cache_peaks writes where this points
  }

  const LoadSample load = sample_load();  // before probing: the probe itself loads every core
  const MachinePeaks p = measure_and_cache_peaks(true);
  std::cout << "\nCPU  " << p.cpu_model << ", " << p.cpu_threads << " threads, "
            << (p.cpu_has_fma ? "AVX2 + FMA" : "no AVX2/FMA (portable kernel)") << "\n"
            << "  fp32 FMA peak     " << format_rate(p.cpu_gflops_1t) << " GFLOP/s on 1 thread    "
            << format_rate(p.cpu_gflops_all) << " GFLOP/s on " << p.cpu_threads << " threads\n"
            << "  triad bandwidth   " << format_rate(p.cpu_gbs_1t) << " GB/s on 1 thread       "
            << format_rate(p.cpu_gbs_all) << " GB/s on " << p.cpu_threads << " threads\n";
  if (p.cpu_gbs_1t > 0 && p.cpu_gbs_all > 0)
    std::cout << "  ridge point       " << format_fixed(p.cpu_gflops_1t / p.cpu_gbs_1t, 1) << " flop/byte (1 thread), "
              << format_fixed(p.cpu_gflops_all / p.cpu_gbs_all, 1)
              << " (all): kernels of lower operational intensity are memory-bound\n";
  std::cout << "  FMA chunk spread  " << format_fixed(100 * p.cpu_fma_spread, 1)
            << "% (median chunk below the best; over " << format_fixed(100 * kProbeNoisySpread, 0)
            << "% means the cores were shared)\n";
  if (const std::string note = busy_note(load); !note.empty()) std::cout << note << "\n";
  for (const std::string& note : probe_notes(p)) std::cout << note << "\n";
  if (p.gpu.name.empty()) {
    std::cout << "GPU  none: " << no_gpu_reason() << "\n";
  } else {
    std::cout << "GPU  " << p.gpu.name << ", " << p.gpu.sm_count << " SMs\n"
              << "  copy bandwidth    " << format_rate(p.gpu.copy_gbs) << " GB/s\n"
              << "  cuBLAS sgemm      " << format_rate(p.gpu.sgemm_gflops) << " GFLOP/s (fp32, TF32 off)\n"
              << "  cuBLAS hgemm      " << format_rate(p.gpu.hgemm_gflops) << " GFLOP/s (fp16 in, fp32 accumulate)\n"
              << "  cuBLAS bf16 gemm  " << format_rate(p.gpu.bf16gemm_gflops) << " GFLOP/s (bf16 in, fp32 accumulate)\n";
    if (p.gpu.copy_gbs > 0)
      std::cout << "  ridge point       " << format_fixed(p.gpu.sgemm_gflops / p.gpu.copy_gbs, 1) << " flop/byte (fp32), "
                << format_fixed(p.gpu.hgemm_gflops / p.gpu.copy_gbs, 1) << " (fp16)\n";
  }
  return 0;
}

}  // namespace

const Command probe_command{"probe", "measure this machine's peak FLOP/s and bandwidth, and cache them", print_help,
                            run};

}  // namespace convlab::app
