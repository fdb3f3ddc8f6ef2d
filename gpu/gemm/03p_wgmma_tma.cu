// gpu/gemm/03p_wgmma_tma.cu — lesson 03, GPU rung 03p: Hopper's copy engine
// (TMA) and warpgroup MMA (wgmma), the two instructions cuBLAS's HGEMM runs on.
//
// Idea over 10_tensor_core_pipelined (mma.sync + cp.async): that rung spends
// its issue slots on 16-byte cp.async per thread, ldmatrix per fragment and
// one mma.sync per 16x8x16; it stays near 60 % of cuBLAS. Here:
//   * TMA: ONE thread asks for a whole 128 x 64 (A) or 64 x 64 (B) box; the
//     copy engine computes every address, applies the 128-byte swizzle, fills
//     zeros outside the matrix and counts the bytes on an mbarrier. No thread
//     computes a load address, no bounds check in the loop (gpu/lib/hopper/tma.cuh);
//   * wgmma m64n256k16: one instruction per warpgroup and k16 step does the work
//     of 128 mma.sync, both operands read by the tensor cores straight from the
//     swizzled slots through descriptors (gpu/lib/wgmma.cuh): no ldmatrix;
//   * an mbarrier ring of 4 slots (gpu/lib/hopper/mbarrier.cuh) instead of
//     __syncthreads: a warpgroup waits only for the slot it reads, and frees the
//     slot before last as soon as its wgmma have retired.
// Both warpgroups compute; thread 0 is also the producer, refilling a slot in
// the middle of its own warpgroup's loop (03q gives that job its own warps).
//
// The plain loop it replaces: for (m, n) { acc = 0; for (k) acc += A[m][k]·B[k][n]; C[m][n] = acc; }
// The kernel, its tile diagram and edge duties: gpu/lib/hopper/wgmma_gemm.cuh.
//
// Cost and floor: 2·M·N·K FLOP at the dense f16/bf16 wgmma rate, 4096 FLOP per
// clock per SM (132 SMs: ~989 TFLOP/s at 1.83 GHz); per 64-deep k tile a CTA
// reads 48 KB for 4.2 MFLOP (85 FLOP/byte from L2, ~1024 clocks of tensor
// time). Shared memory 197 KB (4 slots of 48 KB): one CTA per SM, 256 threads.
// Tunables: the block at the top of gpu/lib/hopper/wgmma_gemm.cuh.
//
// Supported: f16 and bf16, any M, N, K ≥ 1 with K % 8 == 0 and N % 8 == 0
// (TMA strides are multiples of 16 bytes); 16-byte aligned buffers. Other
// shapes are declined by supports() (the rungs before this one take them).
// Needs compute capability 9.0 and a build with 90 in CONVLAB_CUDA_ARCHS.
// Run just this: build/convlab run gemm/gpu/03p_wgmma_tma --shape M=4096,dtype=f16
#include "gpu/lib/hopper/wgmma_gemm.cuh"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  wgmma_gemm::run<wgmma_gemm::Schedule::inline_producer>(p, a, "03p_wgmma_tma");
}

const Register<GemmProblem> reg{{
    .name = "03p_wgmma_tma",
    .device = Device::gpu,
    .lesson = 3,
    .supports = wgmma_gemm::supports,
    .run = run,
    .idea = "TMA boxes into 128B-swizzled slots, 4-slot mbarrier ring, wgmma m64n256k16 from shared memory, "
            "128x256x64 tiles; 2 warpgroups, thread 0 also produces (K, N % 8 == 0)",
}};

}  // namespace
}  // namespace convlab
