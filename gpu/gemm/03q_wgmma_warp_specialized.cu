// gpu/gemm/03q_wgmma_warp_specialized.cu — lesson 03, GPU rung 03q: a producer
// warpgroup and two consumer warpgroups, registers moved between them.
//
// Idea over 03p_wgmma_tma: in 03p thread 0 refills a slot in the middle of its
// own warpgroup's k loop, so that warpgroup's next wgmma issue can be held up
// while the producer waits for the other warpgroup to free the slot, and every
// thread is compiled for the consumers' register needs. Here the roles are
// split (gpu/lib/hopper/warp_specialization.cuh). With a 4-slot ring and one
// 5-copy refill per k tile, 03p's producer turns out never to fall behind, so
// at these sizes the split is measured to buy nothing (lessons/03-gemm/NOTES.md);
// it is the structure that pays once the producer has more to do (im2col
// boxes, multicast, several tensors) or the ring is shallower:
//   * warpgroup 0, the PRODUCER: setmaxnreg.dec to 40 registers; one thread
//     loops "wait for a free slot, expect its bytes, issue 5 TMA copies",
//     up to 4 slots ahead, never touching the tensor cores;
//   * warpgroups 1 and 2, the CONSUMERS: setmaxnreg.inc to 232 registers
//     (128 accumulators each and room for the rest); they only wait for full
//     slots, issue wgmma, release slots and store C.
// A CTA of 384 threads is launched at 168 registers per thread (65536 / 384);
// after the reallocation 40·128 + 2·232·128 = 64512 of the SM's 65536 are in use.
//
// The plain loop it replaces is 03p's: the same k loop, with the copy issue
// taken out of the consumers' path. Kernel, tile diagram, edge duties:
// gpu/lib/hopper/wgmma_gemm.cuh (Schedule::warp_specialized).
//
// Cost and floor: as 03p (the same tiles, slots and instructions), plus one
// idle-but-cheap warpgroup; its floor is the same tensor-core time.
// Supported: f16 and bf16, any M, N, K ≥ 1 with K % 8 == 0 and N % 8 == 0;
// 16-byte aligned buffers. Needs compute capability 9.0 and 90 in CONVLAB_CUDA_ARCHS.
// Run just this: build/convlab run gemm/gpu/03q_wgmma_warp_specialized --shape M=4096,dtype=f16
#include "gpu/lib/hopper/wgmma_gemm.cuh"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  wgmma_gemm::run<wgmma_gemm::Schedule::warp_specialized>(p, a, "03q_wgmma_warp_specialized");
}

const Register<GemmProblem> reg{{
    .name = "03q_wgmma_warp_specialized",
    .device = Device::gpu,
    .lesson = 3,
    .supports = wgmma_gemm::supports,
    .run = run,
    .idea = "03p + a producer warpgroup (one thread issues all TMA) and 2 consumer warpgroups, "
            "setmaxnreg 40/232 (K, N % 8 == 0)",
}};

}  // namespace
}  // namespace convlab
