// bench/tma_stream_probe.cu — how fast can one CTA per SM stream a weight matrix out of L2 into
// shared memory, the way 11g's project streams Wp? (lesson 11's NOTES.md, sessions wave-2o/2p)
//
//   build/convlab_tma_stream [--rows 1152] [--cols 192] [--ctas 128] [--room 93] [--reps 20]
//                            [--copies 1] [--spacer 120] [--json FILE] [--help]
//
// Every CTA walks a rows × cols 16-bit matrix, resident in L2, in stages of box_rows rows, into
// a ring of `stages` slots that fits `room` KB. Step kk, as in 11g's project: a CTA barrier (every
// warp is done with stage kk − 1), stage kk + stages − 1 is asked for, every thread waits for
// stage kk and reads one element of it. No MMA, no gate: the time per stage is the floor the
// stream sets for its configuration. Three methods:
//   tma          thread 0 asks for cols/64 boxes of box_rows × 64 (128-byte swizzle); every thread
//                fences the generic proxy against the async one before the barrier (as 11g did)
//   tma-nofence  the same without the fence (the barrier and thread 0's issue after it order the
//                reads of stage kk − 1 before the engine rewrites it)
//   tma-panels   tma-nofence with the stage's cols/64 panels in one copy (a 3-D tensor map,
//                TmaTile2d::box_panels): the same bytes in the same places, one copy per stage
//   cp.async     every thread asks for 16-byte pieces of the stage; wait_group, then the barrier
// Sweeps box_rows 16..128 and stages 2..8 (those that fit the room).
// --copies R: R copies of the matrix one under another, CTA b streams copy b mod R (R = 1: every
//   SM asks for the same lines at about the same time; R = ctas: no two SMs share a line).
// --spacer KB: shared memory each CTA asks for beyond its ring (default 120: more than half an
//   SM's with the ring, so one CTA per SM, as 11g).
//
// Check: the matrix is all ones and each CTA's slots are zeroed first, so the sum of what a CTA's
// threads read (stages · threads) says every stage landed before it was read.
// Prints one row per configuration: the median event time of a lone launch (reps launches; it
// holds the launch, which grows with the grid), then from the last launch's %globaltimer stamps
// (thread 0 of each CTA: entry, loop start, loop end) the span from the first entry to the last
// end, the entries' spread, the median prologue and loop, and µs per stage and bytes per µs per
// SM from the median loop: the stream's own figures.
// Exit status: 0 when every check passed, 1 when one did not, 2 for a bad flag, 3 without a
// usable sm_90a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "app/common.hpp"  // parse_args
#include "core/device.hpp"
#include "core/timing.hpp"  // summarize
#include "gpu/lib/check.cuh"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/mma.cuh"           // cp_async_16
#include "gpu/lib/wgmma.cuh"         // shared_address, fence_proxy_async_shared
#include "gpu/lib/wgmma_probe.hpp"  // wgmma_unavailable_reason: can this device run sm_90a code

namespace {

using namespace convlab;

constexpr int kThreads = 384;  // 11g's CTA
constexpr int kMaxStages = 8;

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void record(uint64_t* stamps, uint64_t entry, uint64_t loop0) {
  const uint64_t loop1 = global_ns();
  stamps[3 * blockIdx.x] = entry, stamps[3 * blockIdx.x + 1] = loop0, stamps[3 * blockIdx.x + 2] = loop1;
}

// Grid: ctas CTAs of kThreads, stages · stage_bytes + 1024 + spacer bytes of dynamic shared memory.
// Thread 0 of CTA b stamps %globaltimer at its entry, before and after the stage loop: stamps[3b ..].
__global__ void __launch_bounds__(kThreads, 1)
    stream_kernel(const __grid_constant__ CUtensorMap map, const __grid_constant__ CUtensorMap panels_map, int k_stages,
                  int nb, int box_rows, int stages, bool fence, bool one_copy, int copies, float* sums,
                  uint64_t* stamps) {
  const uint64_t t_entry = global_ns();
  extern __shared__ unsigned char smem_raw[];
  __shared__ alignas(8) uint64_t full[kMaxStages];
  const uint32_t raw = gpu::shared_address(smem_raw), base = (raw + 1023u) & ~1023u;
  const unsigned char* ring = smem_raw + (base - raw);
  const uint32_t stage_bytes = uint32_t(nb * box_rows * 128);
  const int tid = threadIdx.x;
  for (uint32_t i = tid; i < stages * stage_bytes / 16; i += kThreads)
    reinterpret_cast<uint4*>(const_cast<unsigned char*>(ring))[i] = make_uint4(0, 0, 0, 0);
  gpu::fence_proxy_async_shared();  // the zeros before the engine's writes
  if (tid == 0) {
    for (int s = 0; s < stages; ++s) gpu::hopper::mbarrier_init(gpu::shared_address(&full[s]), 1);
    gpu::hopper::fence_mbarrier_init();
  }
  __syncthreads();
  const uint64_t t0 = global_ns();
  const int copy_row0 = int(blockIdx.x % unsigned(copies)) * k_stages * box_rows;
  const auto issue = [&](int kk) {
    const int slot = kk % stages, row0 = copy_row0 + kk * box_rows;
    const uint32_t bar = gpu::shared_address(&full[slot]), dst = base + uint32_t(slot) * stage_bytes;
    gpu::hopper::mbarrier_arrive_expect_tx(bar, stage_bytes);
    if (one_copy) gpu::hopper::tma_load_panels(dst, &panels_map, bar, 0, row0, 64);
    else
      for (int b = 0; b < nb; ++b) gpu::hopper::tma_load_2d(dst + uint32_t(b * box_rows * 128), &map, bar, 64 * b, row0);
  };
  if (tid == 0)
    for (int kk = 0; kk < min(stages - 1, k_stages); ++kk) issue(kk);
  float acc = 0.0f;
  for (int kk = 0; kk < k_stages; ++kk) {
    if (fence) gpu::fence_proxy_async_shared();  // this thread's read of stage kk - 1 before the engine's rewrite
    __syncthreads();                  // every warp is done with stage kk - 1: its slot may be refilled
    if (tid == 0 && kk + stages - 1 < k_stages) issue(kk + stages - 1);
    gpu::hopper::mbarrier_wait(gpu::shared_address(&full[kk % stages]), (kk / stages) & 1);
    const unsigned short bits = reinterpret_cast<const unsigned short*>(ring + (kk % stages) * stage_bytes)[tid];
    acc += __half2float(__ushort_as_half(bits));
  }
  atomicAdd(&sums[blockIdx.x], acc);
  if (tid == 0) record(stamps, t_entry, t0);
}

// The same stream without the copy engine: every thread asks for 16-byte pieces of the stage with
// cp.async (the pre-Hopper way), the stage's row-major bytes in one slot; the same barrier per stage.
template <int S>
__global__ void __launch_bounds__(kThreads, 1)
    cp_async_kernel(const unsigned short* matrix, int k_stages, int stage_elems, int copies, float* sums,
                    uint64_t* stamps) {
  const uint64_t t_entry = global_ns();
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = gpu::shared_address(smem_raw), base = (raw + 1023u) & ~1023u;
  const unsigned char* ring = smem_raw + (base - raw);
  const int tid = threadIdx.x, pieces = stage_elems / 8;
  for (int i = tid; i < S * pieces; i += kThreads)
    reinterpret_cast<uint4*>(const_cast<unsigned char*>(ring))[i] = make_uint4(0, 0, 0, 0);
  __syncthreads();
  const uint64_t t0 = global_ns();
  const unsigned short* src = matrix + std::size_t(blockIdx.x % unsigned(copies)) * k_stages * stage_elems;
  const auto issue = [&](int kk) {
    const uint32_t dst = base + uint32_t((kk % S) * pieces) * 16u;
    for (int i = tid; i < pieces; i += kThreads)
      gpu::cp_async_16(dst + uint32_t(i) * 16u, src + std::size_t(kk) * stage_elems + i * 8, true);
  };
  for (int kk = 0; kk < S - 1; ++kk) {
    if (kk < k_stages) issue(kk);
    gpu::cp_async_commit();
  }
  float acc = 0.0f;
  for (int kk = 0; kk < k_stages; ++kk) {
    gpu::cp_async_wait<S - 2>();  // my pieces of stage kk have landed
    __syncthreads();              // everyone's have, and everyone is done with stage kk - 1
    if (kk + S - 1 < k_stages) issue(kk + S - 1);
    gpu::cp_async_commit();
    const unsigned short bits = reinterpret_cast<const unsigned short*>(ring + (kk % S) * pieces * 16)[tid];
    acc += __half2float(__ushort_as_half(bits));
  }
  gpu::cp_async_wait<0>();
  atomicAdd(&sums[blockIdx.x], acc);
  if (tid == 0) record(stamps, t_entry, t0);
}

int usage(const char* why) {
  std::fprintf(stderr,
               "tma_stream: %s\nusage: convlab_tma_stream [--rows R] [--cols C] [--ctas N] [--room KB] [--reps R] "
               "[--copies R] [--spacer KB] [--json FILE]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int rows = 1152, cols = 192, ctas = 128, room_kb = 93, reps = 20, copies = 1, spacer_kb = 120;
  std::string json_path;
  try {  // the suite's option parser (app/common.hpp): one error line and status 2 on a bad flag
    const std::vector<app::OptionSpec> allowed = {{"--rows", true},  {"--cols", true},   {"--ctas", true},
                                                  {"--room", true},  {"--reps", true},   {"--copies", true},
                                                  {"--spacer", true}, {"--json", true},  {"--help", false}};
    const app::ParsedArgs a =
        app::parse_args(std::vector<std::string>(argv + 1, argv + argc), allowed, "convlab_tma_stream");
    if (a.has("--help")) {
      std::printf("usage: convlab_tma_stream [--rows R] [--cols C] [--ctas N] [--room KB] [--reps R] [--copies R] "
                  "[--spacer KB] [--json FILE]\n(bench/tma_stream_probe.cu's header says what each flag does)\n");
      return 0;
    }
    if (!a.positional.empty()) throw app::UsageError("unexpected argument '" + a.positional.front() + "'");
    rows = int(a.get_int("--rows", rows, 64, 65536));
    cols = int(a.get_int("--cols", cols, 64, 1024));
    ctas = int(a.get_int("--ctas", ctas, 1, 4096));
    room_kb = int(a.get_int("--room", room_kb, 8, 100));
    reps = int(a.get_int("--reps", reps, 1, 1000));
    copies = int(a.get_int("--copies", copies, 1, 256));
    spacer_kb = int(a.get_int("--spacer", spacer_kb, 0, 200));
    json_path = a.get("--json");
  } catch (const app::UsageError& e) {
    return usage(e.what());
  }
  if (cols % 64 != 0) return usage("--cols must be a multiple of 64 (whole 64-column boxes)");
  if (rows % 128 != 0) return usage("--rows must be a multiple of 128 (whole stages of every box height)");
  try {
    require_cuda_device();
    if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty()) throw DeviceError(why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tma_stream: %s\n", e.what());
    return 3;
  }

  try {
    const std::size_t elems = std::size_t(rows) * cols;  // one copy
    std::vector<unsigned short> ones(elems * copies, 0x3c00);  // 1.0 in f16
    void* matrix = device_malloc(elems * copies * 2);
    float* sums = static_cast<float*>(device_malloc(std::size_t(ctas) * sizeof(float)));
    uint64_t* stamps = static_cast<uint64_t*>(device_malloc(std::size_t(ctas) * 3 * sizeof(uint64_t)));
    copy_bytes(matrix, Device::gpu, ones.data(), Device::cpu, elems * copies * 2);
    const int nb = cols / 64;
    std::ofstream json;
    if (!json_path.empty()) {
      json.open(json_path);
      if (!json) return usage(("cannot write " + json_path).c_str());
      json << "{\"rows\": " << rows << ", \"cols\": " << cols << ", \"ctas\": " << ctas << ", \"room_kb\": " << room_kb
           << ", \"reps\": " << reps << ", \"copies\": " << copies << ", \"spacer_kb\": " << spacer_kb
           << ", \"configs\": [";
    }
    std::printf("%d x %d f16 (%.0f KB) streamed by %d CTAs of %d threads from %d copies, ring room %d KB, median of %d\n",
                rows, cols, elems * 2 / 1024.0, ctas, kThreads, copies, room_kb, reps);
    std::printf("%8s %7s %12s %7s %10s %9s %9s %9s %9s %9s %12s  %s\n", "box_rows", "stages", "method", "KB/stg",
                "kernel us", "span", "entries", "prologue", "loop us", "us/stage", "B/us per SM", "check");
    bool all_ok = true, first = true;
    GpuTimer timer;
    for (const int box_rows : {16, 32, 64, 128}) {
      const std::size_t stage_bytes = std::size_t(nb) * box_rows * 128;
      gpu::hopper::TmaTile2d tile{.base = reinterpret_cast<uint64_t>(matrix), .rows = uint64_t(rows) * copies,
                                  .cols = uint64_t(cols), .row_stride_bytes = uint64_t(cols) * 2, .elem_bytes = 2,
                                  .box_rows = box_rows, .box_cols = 64};
      const CUtensorMap map = gpu::hopper::encode_tma_tile_2d(tile);
      tile.box_panels = nb;  // one copy a stage (a single panel is the same copy as tma's)
      const CUtensorMap panels_map = nb > 1 ? gpu::hopper::encode_tma_tile_2d(tile) : map;
      const int k_stages = rows / box_rows;
      for (const int stages : {2, 3, 4, 6, 8}) {
        if (stages * stage_bytes > std::size_t(room_kb) * 1024 || stages > k_stages) continue;
        const std::size_t shared = stages * stage_bytes + 1024 + std::size_t(spacer_kb) * 1024;
        if (shared > 227 * 1024) continue;
        gpu::allow_dynamic_shared(stream_kernel, shared, "stream_kernel");
        const auto cp_kernel = [&]() -> void (*)(const unsigned short*, int, int, int, float*, uint64_t*) {
          switch (stages) {
            case 2: return cp_async_kernel<2>;
            case 3: return cp_async_kernel<3>;
            case 4: return cp_async_kernel<4>;
            case 6: return cp_async_kernel<6>;
            default: return cp_async_kernel<8>;
          }
        }();
        gpu::allow_dynamic_shared(cp_kernel, shared, "cp_async_kernel");
        for (const char* method : {"tma", "tma-nofence", "tma-panels", "cp.async"}) {
          const std::string m = method;
          const auto launch = [&] {
            if (m == "cp.async")
              cp_kernel<<<unsigned(ctas), kThreads, shared>>>(static_cast<const unsigned short*>(matrix), k_stages,
                                                               box_rows * cols, copies, sums, stamps);
            else
              stream_kernel<<<unsigned(ctas), kThreads, shared>>>(map, panels_map, k_stages, nb, box_rows, stages,
                                                                  m == "tma", m == "tma-panels" && nb > 1, copies,
                                                                  sums, stamps);
          };
          device_memset(sums, 0, std::size_t(ctas) * sizeof(float));
          launch();  // warm-up: the matrix into L2, and the check
          device_synchronize("stream_kernel");
          std::vector<float> got(ctas);
          copy_bytes(got.data(), Device::cpu, sums, Device::gpu, got.size() * sizeof(float));
          const float want = float(k_stages) * kThreads;
          const bool ok = std::all_of(got.begin(), got.end(), [&](float s) { return s == want; });
          all_ok = all_ok && ok;
          std::vector<double> ms;
          for (int r = 0; r < reps; ++r) {
            timer.start();
            launch();
            timer.stop();
            ms.push_back(timer.elapsed_ms());
          }
          device_synchronize("stream_kernel");
          std::vector<uint64_t> t(std::size_t(ctas) * 3);  // the last launch's stamps
          copy_bytes(t.data(), Device::cpu, stamps, Device::gpu, t.size() * sizeof(uint64_t));
          uint64_t first_in = t[0], last_in = t[0], last_out = t[2];
          std::vector<double> prologue_us, loop_us;
          for (int b = 0; b < ctas; ++b) {
            first_in = std::min(first_in, t[3 * b]), last_in = std::max(last_in, t[3 * b]);
            last_out = std::max(last_out, t[3 * b + 2]);
            prologue_us.push_back(double(t[3 * b + 1] - t[3 * b]) * 1e-3);
            loop_us.push_back(double(t[3 * b + 2] - t[3 * b + 1]) * 1e-3);
          }
          const double us = summarize(ms).median * 1e3, loop = summarize(loop_us).median;
          const double entry_spread = double(last_in - first_in) * 1e-3, span = double(last_out - first_in) * 1e-3;
          const double prologue = summarize(prologue_us).median, per_stage = loop / k_stages;
          const double rate = double(elems) * 2 / loop;  // bytes per µs per CTA (one CTA per SM)
          std::printf("%8d %7d %12s %7.1f %10.2f %9.2f %9.2f %9.2f %9.2f %9.3f %12.0f  %s\n", box_rows, stages, method,
                      stage_bytes / 1024.0, us, span, entry_spread, prologue, loop, per_stage, rate, ok ? "ok" : "WRONG");
          if (json) {
            json << (first ? "" : ", ") << "{\"box_rows\": " << box_rows << ", \"stages\": " << stages
                 << ", \"method\": \"" << method << "\"" << ", \"stage_bytes\": " << stage_bytes
                 << ", \"kernel_us\": " << us << ", \"span_us\": " << span << ", \"entry_spread_us\": " << entry_spread
                 << ", \"prologue_us\": " << prologue << ", \"loop_us\": " << loop
                 << ", \"us_per_stage\": " << per_stage
                 << ", \"bytes_per_us_per_sm\": " << rate << ", \"ok\": " << (ok ? "true" : "false") << "}";
            first = false;
          }
        }
      }
    }
    if (json) json << "]}\n";
    device_free(matrix);
    device_free(sums);
    device_free(stamps);
    if (!all_ok) std::fprintf(stderr, "tma_stream: a CTA read a stage before it landed (WRONG rows above)\n");
    return all_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tma_stream: %s\n", e.what());
    return 3;
  }
}
