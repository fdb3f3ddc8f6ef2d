// gpu/gemm/03r_wgmma_persistent.cu — lesson 03, GPU rung 03r: a persistent
// grid, one CTA per SM, looping over the output tiles.
//
// Idea over 03q_wgmma_warp_specialized: there every CTA computes one tile and
// exits; each new CTA starts with an empty ring (its first wgmma waits for a
// full L2/DRAM round trip) and its consumers' stores of C leave the tensor
// cores idle. Here the grid is one CTA per SM and each CTA takes tiles
// b, b + G, b + 2G, ... from a static tile scheduler (gpu/lib/hopper/
// tile_scheduler.cuh, the same grouped order as before). The producer's
// ring position simply continues from one tile into the next, so while the
// consumers store tile i, the first 4 k tiles of tile i+1 are already loading:
// the prologue of every tile but the first overlaps the epilogue of the one before.
// (The epilogue itself still keeps the tensor cores idle: overlapping it with
// the next tile's MMA needs a second accumulator set or ping-pong consumers.)
//
// The plain loop it replaces: for (tile = blockIdx.x; tile < tiles; tile += gridDim.x)
// around 03q's body. Kernel, tile diagram, edge duties: gpu/lib/hopper/wgmma_gemm.cuh
// (Schedule::persistent).
//
// Cost and floor: as 03p/03q; the grid is resident_blocks() (132 on an H200),
// so the last round of tiles leaves ⌈tiles/132⌉·132 − tiles CTAs idle, as
// the last wave of 03q's grid does.
// Supported: f16 and bf16, any M, N, K ≥ 1 with K % 8 == 0 and N % 8 == 0;
// 16-byte aligned buffers. Needs compute capability 9.0 and 90 in CONVLAB_CUDA_ARCHS.
// Run just this: build/convlab run gemm/gpu/03r_wgmma_persistent --shape M=4096,dtype=f16
#include "gpu/lib/hopper/wgmma_gemm.cuh"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  wgmma_gemm::run<wgmma_gemm::Schedule::persistent>(p, a, "03r_wgmma_persistent");
}

const Register<GemmProblem> reg{{
    .name = "03r_wgmma_persistent",
    .device = Device::gpu,
    .lesson = 3,
    .supports = wgmma_gemm::supports,
    .run = run,
    .idea = "03q on a persistent grid (one CTA per SM, static grouped tile scheduler): the next tile's loads "
            "overlap this tile's epilogue (K, N % 8 == 0)",
}};

}  // namespace
}  // namespace convlab
