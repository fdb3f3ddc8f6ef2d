// bench/wgmma_rate_probe.cu — how many cycles does one SM take for a chain of warpgroup MMAs of a
// given shape, fed from shared memory (or A from registers), the way 11g's expand and project
// feed theirs? (lesson 11's NOTES.md, session wave-2r)
//
//   build/convlab_wgmma_rate [--ctas 132] [--chains 64] [--steps 12] [--json FILE] [--help]
//
// Every CTA (one per SM) runs 1, 2 or 3 warpgroups side by side; each warpgroup runs `chains`
// chains of `steps` m64nNk16 wgmma into one accumulator set — one commit group, then wait_group 0:
// one 11g chunk is such a chain (12 steps over C = 192). A and B are all ones and the accumulators
// start at zero, so every one must end at 16·steps·chains: the check.
// Forms:
//   ss   A K-major and B MN-major from shared memory, 128-byte swizzle (11g's expand and project)
//   rs   A from registers, B MN-major from shared memory
// N = 64, 128, 256 (256: at most two warpgroups — 128 accumulators a thread).
// Thread 0 of each warpgroup reads the SM clock before and after its chains; a row gives the
// median over the CTAs of the slowest warpgroup's cycles per chain and per wgmma, and the SM's
// multiply-adds per cycle (warpgroups · 64·N·16 per wgmma). Hopper's dense f16 tensor rate is
// 2048 multiply-adds per cycle per SM (989 TFLOP/s at 1830 MHz over 132 SMs, NVIDIA's H100
// whitepaper), the last column's denominator.
// Exit status: 0 when every check passed, 1 when one did not, 2 for a bad flag, 3 without a
// usable sm_90a GPU.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "app/common.hpp"  // parse_args
#include "core/device.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"  // wgmma_unavailable_reason

namespace {

using namespace convlab;
using namespace convlab::gpu;

constexpr int kMaxSteps = 16;
constexpr double kPeakFmaPerCycle = 2048.0;

// A: 64 rows × 16·steps k, K-major in 64-k panels of 64 × 128 bytes; B: 16·steps k rows × N,
// MN-major in 64-column panels of (16·steps) × 128 bytes. Both all ones.
template <int N>
constexpr std::size_t shared_bytes(int steps) {
  return 1024 + std::size_t((16 * steps + 63) / 64) * 64 * 128 + std::size_t(16 * steps) * N * 2;
}

template <bool kRs, int N, int kGroups>
__global__ void __launch_bounds__(128 * kGroups, 1)
    rate_kernel(int chains, int steps, unsigned long long* cycles, unsigned* errors) {
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = shared_address(smem_raw), base = (raw + 1023u) & ~1023u;
  unsigned char* smem = smem_raw + (base - raw);
  const int tid = threadIdx.x, wg = tid / 128;
  const int k = 16 * steps, a_panels = (k + 63) / 64;
  const uint32_t a_at = base, a_panel = 64 * 128, b_at = base + uint32_t(a_panels) * a_panel,
                 b_panel = uint32_t(k) * 128;
  const std::size_t words = (std::size_t(a_panels) * a_panel + std::size_t(k) * N * 2) / 4;
  for (std::size_t i = tid; i < words; i += blockDim.x) reinterpret_cast<uint32_t*>(smem)[i] = 0x3c003c00u;
  fence_proxy_async_shared();
  __syncthreads();
  const uint32_t ones[4] = {0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.0f;
  const uint64_t a0 = wgmma_descriptor(a_at, 16, 1024, WgmmaSwizzle::b128);
  const uint64_t b0 = wgmma_descriptor(b_at, b_panel, 1024, WgmmaSwizzle::b128);
  const long long t0 = clock64();
  for (int c = 0; c < chains; ++c) {
    wgmma_fence();
    for (int s = 0; s < steps; ++s) {
      const uint64_t a = wgmma_advance(a0, uint32_t((s / 4) * a_panel + 32 * (s % 4)));
      const uint64_t b = wgmma_advance(b0, uint32_t(s * 16 * 128));
      if constexpr (kRs) wgmma_m64nNk16_rs_mn_major_b<__half, N>(d, ones, b, true);
      else if constexpr (N == 256) wgmma_m64n256k16_ss_mn_major_b<__half>(d, a, b, true);
      else wgmma_m64nNk16_ss_mn_major_b<__half, N>(d, a, b, true);
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    fence_operands(d);
  }
  const long long t1 = clock64();
  unsigned bad = 0;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) bad += d[i] != float(k) * float(chains);
  if (bad) atomicAdd(errors, bad);
  if (tid % 128 == 0) cycles[blockIdx.x * 3 + wg] = (unsigned long long)(t1 - t0);
}

struct Config {
  const char* form;
  int n, groups;
  void (*kernel)(int, int, unsigned long long*, unsigned*);
  std::size_t shared;
};

int usage(const char* why) {
  std::fprintf(stderr, "wgmma_rate: %s\nusage: convlab_wgmma_rate [--ctas N] [--chains C] [--steps S] [--json FILE]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int ctas = 132, chains = 64, steps = 12;
  std::string json_path;
  try {
    const std::vector<app::OptionSpec> allowed = {
        {"--ctas", true}, {"--chains", true}, {"--steps", true}, {"--json", true}, {"--help", false}};
    const app::ParsedArgs a = app::parse_args(std::vector<std::string>(argv + 1, argv + argc), allowed, "convlab_wgmma_rate");
    if (a.has("--help")) {
      std::printf("usage: convlab_wgmma_rate [--ctas N] [--chains C] [--steps S] [--json FILE]\n"
                  "(bench/wgmma_rate_probe.cu's header says what each flag does)\n");
      return 0;
    }
    if (!a.positional.empty()) throw app::UsageError("unexpected argument '" + a.positional.front() + "'");
    ctas = int(a.get_int("--ctas", ctas, 1, 4096));
    chains = int(a.get_int("--chains", chains, 1, 4096));  // 16·steps·chains stays exact in fp32
    steps = int(a.get_int("--steps", steps, 1, kMaxSteps));
    json_path = a.get("--json");
  } catch (const app::UsageError& e) {
    return usage(e.what());
  }
  try {
    require_cuda_device();
    if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty()) throw DeviceError(why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgmma_rate: %s\n", e.what());
    return 3;
  }
  const std::vector<Config> configs = {
      {"ss", 64, 1, rate_kernel<false, 64, 1>, shared_bytes<64>(steps)},
      {"ss", 64, 2, rate_kernel<false, 64, 2>, shared_bytes<64>(steps)},
      {"ss", 64, 3, rate_kernel<false, 64, 3>, shared_bytes<64>(steps)},
      {"ss", 128, 1, rate_kernel<false, 128, 1>, shared_bytes<128>(steps)},
      {"ss", 128, 2, rate_kernel<false, 128, 2>, shared_bytes<128>(steps)},
      {"ss", 128, 3, rate_kernel<false, 128, 3>, shared_bytes<128>(steps)},
      {"ss", 256, 1, rate_kernel<false, 256, 1>, shared_bytes<256>(steps)},
      {"ss", 256, 2, rate_kernel<false, 256, 2>, shared_bytes<256>(steps)},
      {"rs", 64, 1, rate_kernel<true, 64, 1>, shared_bytes<64>(steps)},
      {"rs", 64, 2, rate_kernel<true, 64, 2>, shared_bytes<64>(steps)},
      {"rs", 64, 3, rate_kernel<true, 64, 3>, shared_bytes<64>(steps)},
      {"rs", 128, 1, rate_kernel<true, 128, 1>, shared_bytes<128>(steps)},
      {"rs", 128, 3, rate_kernel<true, 128, 3>, shared_bytes<128>(steps)},
      {"rs", 256, 1, rate_kernel<true, 256, 1>, shared_bytes<256>(steps)},
      {"rs", 256, 2, rate_kernel<true, 256, 2>, shared_bytes<256>(steps)},
  };
  bool all_ok = true;
  try {
    auto* cycles = static_cast<unsigned long long*>(device_malloc(std::size_t(ctas) * 3 * 8));
    auto* errors = static_cast<unsigned*>(device_malloc(4));
    std::ofstream json;
    if (!json_path.empty()) {
      json.open(json_path);
      if (!json) return usage(("cannot write " + json_path).c_str());
      json << "{\"ctas\": " << ctas << ", \"chains\": " << chains << ", \"steps\": " << steps << ", \"rows\": [";
    }
    std::printf("%d CTAs, %d chains of %d m64nNk16 f16 wgmma per warpgroup; SM cycles, median CTA (slowest warpgroup)\n",
                ctas, chains, steps);
    std::printf("%5s %4s %11s %12s %12s %14s %9s  %s\n", "form", "N", "warpgroups", "cyc/chain", "cyc/wgmma",
                "FMA/cyc per SM", "of peak", "check");
    bool first = true;
    for (const Config& c : configs) {
      gpu::allow_dynamic_shared(c.kernel, c.shared, "rate_kernel");
      device_memset(cycles, 0, std::size_t(ctas) * 3 * 8);
      device_memset(errors, 0, 4);
      c.kernel<<<unsigned(ctas), unsigned(128 * c.groups), c.shared>>>(chains, steps, cycles, errors);
      check_launch("rate_kernel");
      device_synchronize("rate_kernel");
      std::vector<unsigned long long> cyc(std::size_t(ctas) * 3);
      unsigned bad = 0;
      copy_bytes(cyc.data(), Device::cpu, cycles, Device::gpu, cyc.size() * 8);
      copy_bytes(&bad, Device::cpu, errors, Device::gpu, 4);
      std::vector<double> slowest(ctas);
      for (int b = 0; b < ctas; ++b)
        slowest[b] = double(*std::max_element(cyc.begin() + 3 * b, cyc.begin() + 3 * b + c.groups));
      std::sort(slowest.begin(), slowest.end());
      const double per_chain = slowest[ctas / 2] / chains, per_wgmma = per_chain / steps;
      const double fma = c.groups * 64.0 * c.n * 16.0 / per_wgmma;
      all_ok = all_ok && bad == 0;
      std::printf("%5s %4d %11d %12.0f %12.1f %14.0f %8.0f%%  %s\n", c.form, c.n, c.groups, per_chain, per_wgmma, fma,
                  100.0 * fma / kPeakFmaPerCycle, bad ? "WRONG" : "ok");
      if (json.is_open()) {
        json << (first ? "" : ", ") << "{\"form\": \"" << c.form << "\", \"n\": " << c.n << ", \"warpgroups\": " << c.groups
             << ", \"cycles_per_chain\": " << per_chain << ", \"cycles_per_wgmma\": " << per_wgmma
             << ", \"fma_per_cycle\": " << fma << ", \"check\": " << (bad ? "false" : "true") << "}";
        first = false;
      }
    }
    if (json.is_open()) json << "]}\n";
    device_free(cycles);
    device_free(errors);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wgmma_rate: %s\n", e.what());
    return 1;
  }
  return all_ok ? 0 : 1;
}
