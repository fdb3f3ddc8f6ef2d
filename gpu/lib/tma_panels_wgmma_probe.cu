// gpu/lib/tma_panels_wgmma_probe.cu — the GPU half of tma_panels_wgmma_probe.hpp: one copy of a
// box of several panels, checked element by element against the host model. Built for sm_90a (its
// name contains "wgmma"; see CMakeLists.txt): the proxy fence and shared-address helpers it
// shares with the wgmma kernels are compiled only there. Not a variant: it registers nothing.
#include "gpu/lib/tma_panels_wgmma_probe.hpp"

#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "core/device.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/wgmma_probe.hpp"  // wgmma_unavailable_reason: does this device run sm_90a code

namespace convlab::gpu {
namespace {

constexpr int kThreads = 256, kPanelCols = 64;

// One CTA, tile_bytes + 1024 bytes of dynamic shared memory; *wrong (zeroed by the host) counts
// the tile's wrong elements.
__global__ void __launch_bounds__(kThreads)
    tma_panels_probe_kernel(const __grid_constant__ CUtensorMap map, const uint16_t* __restrict__ matrix,
                            TmaPanelsCase c, int* wrong) {
  extern __shared__ unsigned char smem_raw[];
  __shared__ alignas(8) uint64_t full;
  const uint32_t raw = shared_address(smem_raw), base = (raw + 1023u) & ~1023u;
  const unsigned char* tile = smem_raw + (base - raw);
  const uint32_t bar = shared_address(&full), tile_bytes = uint32_t(c.box_rows) * 128 * c.box_panels;
  const int tid = threadIdx.x;

  for (uint32_t i = tid; i < tile_bytes / 4; i += kThreads)  // poison: a lost element shows as wrong
    reinterpret_cast<uint32_t*>(const_cast<unsigned char*>(tile))[i] = 0xffffffffu;
  fence_proxy_async_shared();  // the poison before the engine's writes
  if (tid == 0) {
    hopper::mbarrier_init(bar, 1);
    hopper::fence_mbarrier_init();
  }
  __syncthreads();
  if (tid == 0) {
    hopper::mbarrier_arrive_expect_tx(bar, tile_bytes);  // the whole box, zeros included
    hopper::tma_load_panels(base, &map, bar, c.col0, c.row0, kPanelCols);
  }
  hopper::mbarrier_wait(bar, 0);

  const int box_cols = c.box_panels * kPanelCols;
  int bad = 0;
  for (int e = tid; e < c.box_rows * box_cols; e += kThreads) {
    const int r = e / box_cols, col = e % box_cols, gr = c.row0 + r, gc = c.col0 + col;
    const uint16_t want = gr < c.rows && gc < c.cols ? matrix[std::size_t(gr) * c.cols + gc] : uint16_t(0);
    const uint16_t got =
        *reinterpret_cast<const uint16_t*>(tile + hopper::tma_sw128_panels_offset(r, col, c.box_rows, kPanelCols, 2));
    bad += got != want;
  }
  if (bad) atomicAdd(wrong, bad);
}

}  // namespace

int run_tma_panels_probe(const TmaPanelsCase& c, const std::vector<uint16_t>& matrix) {
  if (c.rows < 1 || c.cols < kPanelCols || c.cols % kPanelCols != 0 || c.box_rows < 8 || c.box_panels < 2)
    throw std::invalid_argument(
        "run_tma_panels_probe: a matrix of whole 64-column panels and a box of 8+ rows and 2+ panels");
  if (c.row0 < 0 || c.col0 < 0 || c.col0 % kPanelCols != 0)
    throw std::invalid_argument("run_tma_panels_probe: the box starts at row0 >= 0 and a panel's first column");
  const std::size_t tile_bytes = std::size_t(c.box_rows) * 128 * c.box_panels;
  if (tile_bytes > std::size_t(kTmaPanelsProbeMaxBytes))
    throw std::invalid_argument("run_tma_panels_probe: the box must fit " + std::to_string(kTmaPanelsProbeMaxBytes) +
                                " bytes");
  if (matrix.size() != std::size_t(c.rows) * c.cols)
    throw std::invalid_argument("run_tma_panels_probe: matrix of rows · cols values");
  if (const std::string why = wgmma_unavailable_reason(); !why.empty()) throw std::runtime_error(why);

  const auto dm = device_buffer(matrix.size() * 2), dw = device_buffer(sizeof(int));
  copy_bytes(dm.get(), Device::gpu, matrix.data(), Device::cpu, matrix.size() * 2);
  device_memset(dw.get(), 0, sizeof(int));
  const CUtensorMap map = hopper::encode_tma_tile_2d({.base = reinterpret_cast<uint64_t>(dm.get()),
                                                      .rows = uint64_t(c.rows), .cols = uint64_t(c.cols),
                                                      .row_stride_bytes = uint64_t(c.cols) * 2, .elem_bytes = 2,
                                                      .box_rows = c.box_rows, .box_cols = kPanelCols,
                                                      .box_panels = c.box_panels});
  const std::size_t shared = tile_bytes + 1024;
  allow_dynamic_shared(tma_panels_probe_kernel, shared, "tma_panels_probe_kernel");
  tma_panels_probe_kernel<<<1, kThreads, shared>>>(map, static_cast<const uint16_t*>(dm.get()), c,
                                                   static_cast<int*>(dw.get()));
  check_launch("tma_panels_probe_kernel");
  device_synchronize("tma_panels_probe_kernel");
  int wrong = 0;
  copy_bytes(&wrong, Device::cpu, dw.get(), Device::gpu, sizeof(int));
  return wrong;
}

}  // namespace convlab::gpu
