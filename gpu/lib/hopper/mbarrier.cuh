// gpu/lib/hopper/mbarrier.cuh — the shared-memory barrier object (mbarrier,
// sm_80; transaction counts and parity waits sm_90) and the multi-stage
// producer/consumer pipeline built on two rings of them.
//
// An mbarrier is 8 bytes of shared memory holding a PHASE (one bit is what
// waiters see), a pending ARRIVAL count and a pending TRANSACTION count (bytes).
// A phase completes when both reach zero; the barrier then flips its phase
// bit and reloads the arrival count given at init. A copy engine (TMA)
// decrements the transaction count as its bytes land; a thread that announces
// bytes in advance (arrive.expect_tx) adds them, and arrives, in one step.
//
// Waiting: try_wait.parity(P) succeeds once the phase whose parity is P has
// completed. Right after init the barrier is in phase 0, and "phase 1" — the
// imaginary one before it — counts as completed: a producer's first wait on
// an empty slot (parity 1) passes at once, a consumer's first wait on a full
// slot (parity 0) blocks until the data lands.
//
// The pipeline (kStages slots of shared memory, two barriers per slot):
//
//   full[s]   count 1                : the producer's arrive.expect_tx(bytes) + the
//                                      TMA bytes complete it -> "slot s holds data"
//   empty[s]  count = consumer arrivals: every consumer warp arrives once it has finished
//                                      reading slot s -> "slot s may be overwritten"
//
//   producer, item i:  wait empty[i % S] (parity ((i / S) & 1) ^ 1); expect_tx; issue copies
//   consumer, item i:  wait full[i % S]  (parity  (i / S) & 1);      compute; arrive empty[i % S]
//
// PipelineState carries (stage, phase) for one side; advance() moves to the
// next item, flipping the phase when the stage wraps. The plain ring this
// replaces: `slot = i % S; round = i / S;` with a counting semaphore per slot.
//
// Two halves, as in gpu/lib/wgmma.cuh: (1) PipelineState, plain C++, and
// the phase rule, whose protocol tests/hopper_lib_test.cpp runs against a host
// model of the barrier under random interleavings; (2) CUDA: the barrier
// instructions (PTX ISA 9.x §9.7.13.15, "mbarrier").
#pragma once

#include <cstdint>

#include "gpu/lib/mma.cuh"  // CONVLAB_HOST_DEVICE

namespace convlab::gpu::hopper {

// ============================================================================
// 1. The ring position (host and device)
// ============================================================================

template <int kStages> struct PipelineState {
  static_assert(kStages >= 1, "at least one slot");
  int stage = 0;       // slot of the current item
  uint32_t phase = 0;  // parity of the round: item i is in round i / kStages

  CONVLAB_HOST_DEVICE constexpr void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
  // Parity a consumer waits for on full[stage]; a producer on empty[stage].
  CONVLAB_HOST_DEVICE constexpr uint32_t full_parity() const { return phase; }
  CONVLAB_HOST_DEVICE constexpr uint32_t empty_parity() const { return phase ^ 1u; }
  // The state of item i, for checks: advance() i times from the start.
  static CONVLAB_HOST_DEVICE constexpr PipelineState at(int item) {
    return {item % kStages, uint32_t((item / kStages) & 1)};
  }
  constexpr bool operator==(const PipelineState&) const = default;
};

// Shared-memory layout of the barriers: full[0 .. S) then empty[0 .. S), 8 bytes each.
inline constexpr int kMbarrierBytes = 8;
template <int kStages> inline constexpr int kPipelineBarrierBytes = 2 * kStages * kMbarrierBytes;

}  // namespace convlab::gpu::hopper

// ============================================================================
// 2. CUDA: the instructions and the pipeline
// ============================================================================
#if defined(__CUDACC__)
namespace convlab::gpu::hopper {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CONVLAB_MBARRIER_ASM 1
#else
#define CONVLAB_MBARRIER_ASM 0
#endif

// One thread: the barrier at `bar` (shared address, 8-byte aligned) expects
// `arrivals` arrivals per phase.
__device__ __forceinline__ void mbarrier_init(uint32_t bar, uint32_t arrivals) {
#if CONVLAB_MBARRIER_ASM
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
#else
  __trap();
#endif
}

// After the inits, before the barrier that publishes them: makes them visible
// to the async proxy (the TMA engine that completes transactions on them).
__device__ __forceinline__ void fence_mbarrier_init() {
#if CONVLAB_MBARRIER_ASM
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  __trap();
#endif
}

// Arrive once and add `bytes` to the transaction count of the current phase.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#if CONVLAB_MBARRIER_ASM
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#else
  __trap();
#endif
}

// Arrive once (release semantics: this thread's earlier shared-memory reads
// and writes are ordered before whoever waits for the phase).
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) {
#if CONVLAB_MBARRIER_ASM
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#else
  __trap();
#endif
}

// True once the phase of parity `parity` has completed (one probe; the
// hardware may suspend the thread for a while inside it).
__device__ __forceinline__ bool mbarrier_try_wait(uint32_t bar, uint32_t parity) {
#if CONVLAB_MBARRIER_ASM
  uint32_t done;
  asm volatile(
      "{\n.reg .pred ready;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 ready, [%1], %2;\n"
      "selp.b32 %0, 1, 0, ready;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
#else
  __trap();
  return true;
#endif
}

// Blocks until the phase of parity `parity` has completed (acquire: what the
// arrivals and the copies released is visible afterwards).
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
  while (!mbarrier_try_wait(bar, parity)) {
  }
}

#undef CONVLAB_MBARRIER_ASM

// The two barrier rings of a kStages-slot pipeline, at `base` (shared
// address, 8-byte aligned, kPipelineBarrierBytes<kStages> long).
template <int kStages> struct Pipeline {
  uint32_t base;

  __device__ uint32_t full(int stage) const { return base + uint32_t(stage) * kMbarrierBytes; }
  __device__ uint32_t empty(int stage) const { return base + uint32_t(kStages + stage) * kMbarrierBytes; }

  // One thread, before any use: full barriers expect the producer's single
  // arrive, empty barriers `consumer_arrivals` (one per consumer warp). Then a
  // CTA-wide barrier (__syncthreads) must follow before anyone waits.
  __device__ void init(uint32_t consumer_arrivals) const {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(full(s), 1);
      mbarrier_init(empty(s), consumer_arrivals);
    }
    fence_mbarrier_init();
  }

  // Producer: wait until the slot is free, then announce its bytes (the
  // copies issued next with full(st.stage) complete the phase).
  __device__ void producer_acquire(const PipelineState<kStages>& st, uint32_t bytes) const {
    mbarrier_wait(empty(st.stage), st.empty_parity());
    mbarrier_arrive_expect_tx(full(st.stage), bytes);
  }
  // Consumer: wait until the slot's data has landed.
  __device__ void consumer_wait(const PipelineState<kStages>& st) const {
    mbarrier_wait(full(st.stage), st.full_parity());
  }
  // Consumer warp: done reading the slot (lane 0 arrives for the warp). The
  // caller guarantees the reads are over — for wgmma, a wait_group that
  // retired every wgmma reading the slot.
  __device__ void consumer_release(const PipelineState<kStages>& st) const {
    __syncwarp();
    if (threadIdx.x % 32 == 0) mbarrier_arrive(empty(st.stage));
  }
};

}  // namespace convlab::gpu::hopper
#endif  // __CUDACC__
