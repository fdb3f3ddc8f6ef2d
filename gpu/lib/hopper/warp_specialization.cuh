// gpu/lib/hopper/warp_specialization.cuh — giving warpgroups of one CTA
// different jobs (a PRODUCER that only issues copies, CONSUMERS that only
// compute) and moving registers from the first to the second (setmaxnreg, sm_90a).
//
// Why: a consumer warpgroup of a 128 x 256 GEMM tile holds 64 x 256 fp32
// accumulators = 128 registers per thread, plus addresses and descriptors; a
// producer needs a few dozen. A CTA is launched with one register count for
// every thread (65536 / threads at most, capped at 255), so without
// reallocation the producer's share is wasted. setmaxnreg.dec lowers the
// executing warpgroup's allocation and returns registers to the CTA's pool;
// setmaxnreg.inc blocks until that pool can grant the larger allocation.
//
//   CTA of 1 + C warpgroups:   warpgroup 0          producer   (dec to kProducerRegs)
//                              warpgroups 1 .. C    consumers  (inc to kConsumerRegs)
//
// Rules the hardware and ptxas impose (PTX ISA 9.x §9.7.19.5 "setmaxnreg"):
//   * the count is a multiple of 8 in [24, 256];
//   * every warp of a warpgroup executes the same setmaxnreg (.sync.aligned);
//   * ptxas honours it only in a kernel with a register cap at entry
//     (__launch_bounds__(threads, 1)) and where each role is one branch of
//     a single if/else on the warpgroup index (otherwise warning C7508);
//   * the pool is the CTA's own: what it was launched with (the cap times
//     its threads; 168 · 384 = 64 512 for three warpgroups), not the SM's
//     64 K. An inc that the decs have not paid for waits for ever: the
//     total after reallocation must fit the launch's allocation
//     (register_budget_fits, static_assert'ed by kernels, host-tested).
//
// The plain form this replaces: every warpgroup loads and computes
// (gpu/gemm/03p_wgmma_tma.cu), one thread of them also issuing the copies.
#pragma once

#include <cstdint>

#include "gpu/lib/mma.cuh"  // CONVLAB_HOST_DEVICE

namespace convlab::gpu::hopper {

inline constexpr int kWarpgroupThreads = 128;  // 4 consecutive warps, the first a multiple of 4
inline constexpr int kRegistersPerSm = 65536;

// Is `regs` a count setmaxnreg accepts?
CONVLAB_HOST_DEVICE constexpr bool valid_setmaxnreg(int regs) { return regs % 8 == 0 && regs >= 24 && regs <= 256; }

// The launch cap per thread of a CTA of `warpgroups` warpgroups at one CTA
// per SM: 65536 / threads, rounded down to the allocation granule of 8, at most 255.
CONVLAB_HOST_DEVICE constexpr int launch_register_cap(int warpgroups) {
  const int per_thread = kRegistersPerSm / (warpgroups * kWarpgroupThreads) / 8 * 8;
  return per_thread > 255 ? 255 : per_thread;
}

// Do one producer warpgroup at `producer_regs` and `consumers` consumer
// warpgroups at `consumer_regs` fit the registers the CTA was launched with
// (its pool), each count valid, the producer giving registers up and the
// consumers taking them (never the other way)?
CONVLAB_HOST_DEVICE constexpr bool register_budget_fits(int producer_regs, int consumer_regs, int consumers) {
  const int cap = launch_register_cap(1 + consumers);
  return valid_setmaxnreg(producer_regs) && valid_setmaxnreg(consumer_regs) && producer_regs <= cap &&
         consumer_regs >= cap &&
         (producer_regs + consumers * consumer_regs) <= cap * (1 + consumers);
}

// The warpgroup a thread belongs to, and its index inside it.
CONVLAB_HOST_DEVICE constexpr int warpgroup_of(int thread) { return thread / kWarpgroupThreads; }
CONVLAB_HOST_DEVICE constexpr int thread_in_warpgroup(int thread) { return thread % kWarpgroupThreads; }

}  // namespace convlab::gpu::hopper

#if defined(__CUDACC__)
namespace convlab::gpu::hopper {

// setmaxnreg exists for sm_90a only (like wgmma): elsewhere these trap, and
// callers check gpu::wgmma_unavailable_reason() on the host before launching.
template <int kRegs> __device__ __forceinline__ void warpgroup_registers_decrease() {
  static_assert(valid_setmaxnreg(kRegs), "setmaxnreg: a multiple of 8 in [24, 256]");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#else
  __trap();
#endif
}
template <int kRegs> __device__ __forceinline__ void warpgroup_registers_increase() {
  static_assert(valid_setmaxnreg(kRegs), "setmaxnreg: a multiple of 8 in [24, 256]");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#else
  __trap();
#endif
}

// Named barriers (bar.arrive / bar.sync with an id other than 0, the id
// __syncthreads uses): `threads` threads, a multiple of 32, meet at barrier
// `id`; arrivers go on at once, syncers wait until all `threads` have come.
// Used to set two consumer warpgroups apart in time (one arrives once it is
// ahead, the other syncs before it starts), so that one's tensor-core work
// overlaps the other's non-tensor work.
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace convlab::gpu::hopper
#endif  // __CUDACC__
