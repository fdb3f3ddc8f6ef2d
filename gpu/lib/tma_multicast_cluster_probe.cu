// gpu/lib/tma_multicast_cluster_probe.cu — the GPU half of gpu/lib/tma_multicast_cluster_probe.hpp:
// one multicast copy per box over a thread-block cluster, each CTA checking what landed in its own
// shared memory. Compiled for sm_90a (its name contains "cluster"; see CMakeLists.txt). Not a
// variant: it registers nothing.
#include "gpu/lib/tma_multicast_cluster_probe.hpp"

#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "core/device.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/hopper/cluster.cuh"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/wgmma_probe.hpp"  // wgmma_unavailable_reason: does this device run sm_90a code

namespace convlab::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int kBoxRows = 64, kBoxCols = 64, kBoxBytes = kBoxRows * kBoxCols * 2;

// Grid: clusters × cluster CTAs, kThreads threads, boxes · kBoxBytes + 1024 bytes of dynamic shared
// memory. wrong[blockIdx.x] (zeroed by the host) counts this CTA's wrong elements.
__global__ void __launch_bounds__(kThreads)
    tma_multicast_probe_kernel(const __grid_constant__ CUtensorMap map, const uint16_t* __restrict__ matrix,
                               int boxes, int* wrong) {
  extern __shared__ unsigned char smem_raw[];
  __shared__ alignas(8) uint64_t full;
  const uint32_t raw = shared_address(smem_raw), base = (raw + 1023u) & ~1023u;
  const unsigned char* tile = smem_raw + (base - raw);
  const uint32_t bar = shared_address(&full);
  const int rank = hopper::cluster_cta_rank(), tid = threadIdx.x;
  int size = 0;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(size));

  // Poison the tile, so that a box that lands nowhere (or elsewhere) shows as wrong elements.
  for (int i = tid; i < boxes * kBoxBytes / 4; i += kThreads)
    reinterpret_cast<uint32_t*>(const_cast<unsigned char*>(tile))[i] = 0xffffffffu;
  fence_proxy_async_shared();  // the poison before the engine's writes
  if (tid == 0) {
    hopper::mbarrier_init(bar, 1);
    hopper::fence_mbarrier_init();
  }
  hopper::cluster_sync();  // every CTA's barrier is ready before any peer's copy lands on it

  if (tid == 0) {
    hopper::mbarrier_arrive_expect_tx(bar, uint32_t(boxes) * kBoxBytes);  // this CTA receives every box
    const uint16_t everyone = uint16_t((1u << size) - 1u);
    for (int j = rank; j < boxes; j += size)
      hopper::tma_load_2d_multicast(base + uint32_t(j * kBoxBytes), &map, bar, 0, j * kBoxRows, everyone);
  }
  hopper::mbarrier_wait(bar, 0);

  int bad = 0;
  for (int e = tid; e < boxes * kBoxRows * kBoxCols; e += kThreads) {
    const int j = e / (kBoxRows * kBoxCols), r = (e / kBoxCols) % kBoxRows, c = e % kBoxCols;
    const uint16_t got =
        *reinterpret_cast<const uint16_t*>(tile + j * kBoxBytes + hopper::tma_sw128_box_offset(r, c, 2));
    bad += got != matrix[e];
  }
  if (bad) atomicAdd(&wrong[blockIdx.x], bad);
  hopper::cluster_sync();  // no CTA leaves while a peer may still be reading the cluster's state
}

}  // namespace

std::vector<int> run_tma_multicast_probe(int cluster, int clusters, int boxes, const std::vector<uint16_t>& matrix) {
  if (cluster != 2 && cluster != 4) throw std::invalid_argument("run_tma_multicast_probe: a cluster of 2 or 4 CTAs");
  if (clusters < 1 || clusters > 64) throw std::invalid_argument("run_tma_multicast_probe: 1 .. 64 clusters");
  if (boxes < 1 || boxes > kTmaMulticastProbeMaxBoxes)
    throw std::invalid_argument("run_tma_multicast_probe: 1 .. " + std::to_string(kTmaMulticastProbeMaxBoxes) +
                                " boxes");
  const std::size_t elems = std::size_t(boxes) * kBoxRows * kBoxCols, ctas = std::size_t(cluster) * clusters;
  if (matrix.size() != elems) throw std::invalid_argument("run_tma_multicast_probe: matrix of boxes · 64 · 64 values");
  if (const std::string why = wgmma_unavailable_reason(); !why.empty()) throw std::runtime_error(why);

  const auto dm = device_buffer(elems * 2), dw = device_buffer(ctas * sizeof(int));
  copy_bytes(dm.get(), Device::gpu, matrix.data(), Device::cpu, elems * 2);
  device_memset(dw.get(), 0, ctas * sizeof(int));
  const CUtensorMap map = hopper::encode_tma_tile_2d({.base = reinterpret_cast<uint64_t>(dm.get()),
                                                      .rows = uint64_t(boxes) * kBoxRows, .cols = kBoxCols,
                                                      .row_stride_bytes = kBoxCols * 2, .elem_bytes = 2,
                                                      .box_rows = kBoxRows, .box_cols = kBoxCols});
  const std::size_t shared = std::size_t(boxes) * kBoxBytes + 1024;
  allow_dynamic_shared(tma_multicast_probe_kernel, shared, "tma_multicast_probe_kernel");
  hopper::ClusterLaunch launcher(unsigned(cluster), dim3(kThreads), shared);
  launcher.launch(dim3(unsigned(ctas)), tma_multicast_probe_kernel, "cudaLaunchKernelEx(tma_multicast_probe_kernel)",
                  map, static_cast<const uint16_t*>(dm.get()), boxes, static_cast<int*>(dw.get()));
  device_synchronize("tma_multicast_probe_kernel");
  std::vector<int> wrong(ctas);
  copy_bytes(wrong.data(), Device::cpu, dw.get(), Device::gpu, ctas * sizeof(int));
  return wrong;
}

}  // namespace convlab::gpu
