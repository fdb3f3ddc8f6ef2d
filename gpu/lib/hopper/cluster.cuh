// gpu/lib/hopper/cluster.cuh — thread-block clusters (sm_90): the CTA's rank,
// distributed shared memory (DSMEM) and the cluster-scope barrier operations.
//
// A cluster is up to 8 (16 with opt-in) CTAs launched together on the SMs of
// one GPC. Each CTA can read and write the others' shared memory through the
// shared::cluster window: `mapa` turns an address of this CTA's shared memory
// into the address of the same offset in CTA `rank`'s. The window of one CTA
// is contiguous, so mapa(base) + offset == mapa(base + offset): kernels map a
// region's base once.
//
// Ordering across CTAs is the memory model's, at cluster scope:
//
//   writer (CTA 0)                                 reader (CTA 1)
//   st.shared::cluster [peer buffer], data
//   mbarrier.arrive.release.cluster [peer bar] --> mbarrier.try_wait.parity.acquire.cluster [own bar]
//                                                  ld.shared [own buffer]   (sees the data)
//
// The release orders this thread's earlier stores (local and remote) before
// the arrival; the acquire orders the reader's later loads after the phase
// completed. When the data is read by the ASYNC proxy (wgmma from shared
// memory, TMA store) a proxy fence is needed as well: fence.proxy.async after
// the generic stores, before the arrival that publishes them
// (fence_proxy_async_shared_cluster for stores into another CTA; the rung
// that uses it fences on the reader's side too, after its acquire).
//
// A CTA must not exit while a peer may still touch its shared memory:
// cluster_sync() by every thread of the cluster before exiting (and once after
// the barriers are initialised, before the first remote arrival).
//
// On the host, max_active_clusters sizes a persistent grid of clusters and
// refuses a cluster the device cannot co-schedule; ClusterLaunch holds one
// cluster launch's configuration, asks that query with it and launches.
//
// Two halves, as the other files here: (1) plain C++ (which CTA of a cluster,
// the peer of a pair), host-tested; (2) CUDA: the instructions (PTX ISA 9.x:
// "mapa", "st" with .shared::cluster, "mbarrier" with .cluster scope,
// "fence.proxy.async", "barrier.cluster") and the host's occupancy query and launch.
#pragma once

#include <cstdint>

#include "gpu/lib/mma.cuh"  // CONVLAB_HOST_DEVICE

namespace convlab::gpu::hopper {

// ============================================================================
// 1. Plain C++
// ============================================================================

// Clusters of `size` CTAs along x: blocks size·c .. size·c + size − 1 form
// cluster c, and a block's rank in its cluster is block % size (what
// %clusterid.x and %cluster_ctarank read for a 1-D grid and cluster).
CONVLAB_HOST_DEVICE constexpr int cluster_of_block(int block, int size) { return block / size; }
CONVLAB_HOST_DEVICE constexpr int rank_of_block(int block, int size) { return block % size; }
// The other CTA of a pair.
CONVLAB_HOST_DEVICE constexpr int pair_peer(int rank) { return rank ^ 1; }

}  // namespace convlab::gpu::hopper

// ============================================================================
// 2. CUDA: the instructions
// ============================================================================
#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "core/device.hpp"
#include "gpu/lib/check.cuh"

namespace convlab::gpu::hopper {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CONVLAB_CLUSTER_ASM 1
#else
#define CONVLAB_CLUSTER_ASM 0
#endif

// This CTA's rank in its cluster, the cluster's index in the grid and the number of clusters (x).
__device__ __forceinline__ int cluster_cta_rank() {
#if CONVLAB_CLUSTER_ASM
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return int(r);
#else
  __trap();
  return 0;
#endif
}
__device__ __forceinline__ int cluster_index_x() {
#if CONVLAB_CLUSTER_ASM
  uint32_t r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return int(r);
#else
  __trap();
  return 0;
#endif
}
__device__ __forceinline__ int cluster_count_x() {
#if CONVLAB_CLUSTER_ASM
  uint32_t r;
  asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
  return int(r);
#else
  __trap();
  return 1;
#endif
}

// The shared::cluster address of `local` (a shared::cta address of this CTA)
// in CTA `rank`'s shared memory.
__device__ __forceinline__ uint32_t map_shared_to_rank(uint32_t local, int rank) {
#if CONVLAB_CLUSTER_ASM
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
#else
  __trap();
  return local;
#endif
}

// Stores into (any CTA's) shared memory through the cluster window.
__device__ __forceinline__ void st_shared_cluster_u32(uint32_t remote, uint32_t v) {
#if CONVLAB_CLUSTER_ASM
  asm volatile("st.shared::cluster.b32 [%0], %1;\n" ::"r"(remote), "r"(v) : "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void st_shared_cluster_v4(uint32_t remote, uint32_t a, uint32_t b, uint32_t c,
                                                     uint32_t d) {
#if CONVLAB_CLUSTER_ASM
  asm volatile("st.shared::cluster.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(remote), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
#else
  __trap();
#endif
}

// Stores 16 bytes into a peer's shared memory and, when they have landed,
// completes 16 bytes of the transaction count of the peer's barrier `remote_bar`
// (both shared::cluster addresses, map_shared_to_rank). The receiver arrives on
// that barrier with mbarrier_arrive_expect_tx for the bytes it expects per
// phase, then waits on it: the phase completes only once every byte is there,
// with no memory fence on either side (a fence.acq_rel.cluster or a release
// arrival per exchange is a MEMBAR.ALL.GPU in the SASS).
__device__ __forceinline__ void st_async_v4(uint32_t remote, uint32_t a, uint32_t b, uint32_t c, uint32_t d,
                                            uint32_t remote_bar) {
#if CONVLAB_CLUSTER_ASM
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(
                   remote),
               "r"(a), "r"(b), "r"(c), "r"(d), "r"(remote_bar)
               : "memory");
#else
  __trap();
#endif
}

// The same for one 4-byte word (the T hand-over of lesson 10's 10e: mma.sync
// fragments land at scattered rows, so each word is its own store).
__device__ __forceinline__ void st_async_u32(uint32_t remote, uint32_t v, uint32_t remote_bar) {
#if CONVLAB_CLUSTER_ASM
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(remote), "r"(v),
               "r"(remote_bar)
               : "memory");
#else
  __trap();
#endif
}

// Arrive once on an mbarrier of (possibly) another CTA, given its
// shared::cluster address (map_shared_to_rank), with release semantics at
// cluster scope: this thread's earlier loads and stores, remote ones
// included, happen before whatever the waiter does after its acquire.
__device__ __forceinline__ void mbarrier_arrive_cluster(uint32_t remote_bar) {
#if CONVLAB_CLUSTER_ASM
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote_bar) : "memory");
#else
  __trap();
#endif
}

// One release for several arrivals: fence_acq_rel_cluster() orders this
// thread's earlier loads and stores (remote ones included) before its later
// ones at cluster scope, and mbarrier_arrive_cluster_relaxed then arrives
// without a release of its own. A thread that signals k peers after one batch
// of stores pays one fence instead of k releases (each release is a full
// memory barrier on sm_90: MEMBAR.ALL.GPU in the SASS).
__device__ __forceinline__ void fence_acq_rel_cluster() {
#if CONVLAB_CLUSTER_ASM
  asm volatile("fence.acq_rel.cluster;\n" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void mbarrier_arrive_cluster_relaxed(uint32_t remote_bar) {
#if CONVLAB_CLUSTER_ASM
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote_bar) : "memory");
#else
  __trap();
#endif
}

// Blocks until the phase of parity `parity` of this CTA's barrier `bar` has
// completed, acquiring at cluster scope (what peers released before arriving
// is visible afterwards). mbarrier_wait (mbarrier.cuh) acquires at CTA scope
// only: enough for TMA and local arrivals, not for a peer's stores.
__device__ __forceinline__ void mbarrier_wait_cluster(uint32_t bar, uint32_t parity) {
#if CONVLAB_CLUSTER_ASM
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred ready;\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 ready, [%1], %2;\n"
        "selp.b32 %0, 1, 0, ready;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
#else
  __trap();
#endif
}

// Generic-proxy stores into shared memory of any CTA of the cluster become
// visible to the async proxy (wgmma's operand reads) after this fence, issued
// by the storing thread before the release that publishes them.
__device__ __forceinline__ void fence_proxy_async_shared_cluster() {
#if CONVLAB_CLUSTER_ASM
  asm volatile("fence.proxy.async.shared::cluster;\n" ::: "memory");
#else
  __trap();
#endif
}

// A 4-byte load from (any CTA's) shared memory through the cluster window.
__device__ __forceinline__ float ld_shared_cluster_f32(uint32_t remote) {
#if CONVLAB_CLUSTER_ASM
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
  return v;
#else
  __trap();
  return 0.0f;
#endif
}

// cluster_sync() in two halves, for a CTA that only has to stay alive while its peers read
// its shared memory: every thread arrives (relaxed: it publishes nothing) once it is done
// reading theirs, and waits before it exits.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if CONVLAB_CLUSTER_ASM
  asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if CONVLAB_CLUSTER_ASM
  asm volatile("barrier.cluster.wait;\n" ::: "memory");
#else
  __trap();
#endif
}

// Every thread of every CTA of the cluster: arrive (release) and wait
// (acquire). Not the .aligned form, so threads of one warp may reach it apart.
__device__ __forceinline__ void cluster_sync() {
#if CONVLAB_CLUSTER_ASM
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
#else
  __trap();
#endif
}

#undef CONVLAB_CLUSTER_ASM

// ---- host: how many clusters fit at once ------------------------------------------------

// How many clusters of `config` (its cluster-dimension attribute, block size and
// dynamic shared memory) the current device runs at once: the size of a
// persistent grid, in clusters. Asked once per (kernel, shared bytes, cluster
// size) and remembered. 0 means the cluster cannot be co-scheduled at all (too
// much shared memory or too many threads for the SMs of one GPC): refused with
// a DeviceError naming `what`, rather than launched to fail.
inline int max_active_clusters(const void* kernel, const cudaLaunchConfig_t& config, const char* what) {
  static std::mutex mutex;
  static std::map<std::tuple<const void*, std::size_t, unsigned>, int> known;
  unsigned cluster = 1;
  for (unsigned i = 0; i < config.numAttrs; ++i)
    if (config.attrs[i].id == cudaLaunchAttributeClusterDimension)
      cluster = config.attrs[i].val.clusterDim.x * config.attrs[i].val.clusterDim.y * config.attrs[i].val.clusterDim.z;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(kernel, config.dynamicSmemBytes, cluster);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  int clusters = 0;
  check_cuda(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config),
             (std::string("cudaOccupancyMaxActiveClusters(") + what + ")").c_str());
  if (clusters <= 0)
    throw DeviceError(std::string(what) + ": this device cannot co-schedule a cluster of " + std::to_string(cluster) +
                      " CTAs of " + std::to_string(config.blockDim.x * config.blockDim.y * config.blockDim.z) +
                      " threads and " + std::to_string(config.dynamicSmemBytes) + " bytes of shared memory each");
  return known.emplace(key, clusters).first->second;
}

// ---- host: a launch in clusters ---------------------------------------------------------

// The launch of a kernel in clusters of `cluster` CTAs along x (0: no cluster attribute, a
// plain launch), `block` threads and `shared` bytes of dynamic shared memory a CTA, on the
// default stream. config.attrs points at this object's own attribute, so it is neither copied
// nor moved.
struct ClusterLaunch {
  cudaLaunchAttribute attribute{};
  cudaLaunchConfig_t config{};

  ClusterLaunch(unsigned cluster, dim3 block, std::size_t shared) {
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = cluster;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.blockDim = block;
    config.dynamicSmemBytes = shared;
    config.stream = nullptr;
    config.attrs = cluster > 0 ? &attribute : nullptr;
    config.numAttrs = cluster > 0 ? 1 : 0;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;

  // max_active_clusters for one cluster's grid: how many clusters of `kernel` run at once (the
  // size of a persistent grid, in clusters); a DeviceError naming `what` where none can. Needs a
  // cluster (cluster > 0).
  template <class Kernel> int max_active_clusters(Kernel kernel, const char* what) {
    config.gridDim = dim3(attribute.val.clusterDim.x);
    return hopper::max_active_clusters(reinterpret_cast<const void*>(kernel), config, what);
  }

  // kernel<<<grid, block, shared>>>(args...) in clusters; `what` is check_cuda's message if the
  // launch fails.
  template <class... Params, class... Args>
  void launch(dim3 grid, void (*kernel)(Params...), const char* what, Args&&... args) {
    config.gridDim = grid;
    check_cuda(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), what);
  }
};

}  // namespace convlab::gpu::hopper
#endif  // __CUDACC__
