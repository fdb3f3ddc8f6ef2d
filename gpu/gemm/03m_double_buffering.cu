// gpu/gemm/03m_double_buffering.cu — lesson 03, GPU rung 03m: fetch the next slice while computing this one.
//
// Idea over 03l_warp_tiling: in rung 03l every K slice is a strict sequence
//
//   fetch slice s from global (~500+ cycles of latency)   → barrier
//   64 FMAs × 8 k-steps out of shared memory               → barrier
//
// and a block's warps sit idle during the fetch, hidden only by the one other
// resident block. Here the two overlap, with two buffers at two levels:
//
//   shared memory: two stages As[2][..], Bs[2][..]. Slice s is computed from
//     stage s % 2 while slice s+1 is written into stage (s+1) % 2, so one
//     barrier per slice suffices (rung 03l needs two);
//   registers:     slice s+1's global loads are ISSUED before slice s's math
//     and their results are only consumed (stored to shared memory) after it,
//     so the 8 k-steps of FMAs run while the loads are in flight;
//   fragments:     inside a slice the A/B fragments of k-step kk+1 are read
//     from shared memory before the FMAs of k-step kk, hiding the shared-load
//     latency behind 64 FMAs.
//
//   plain (rung 03l):                          double-buffered (here):
//     for s:                                   fetch(0); store(stage 0); sync
//       fetch(s); store(As, Bs); sync           for s:
//       math(As, Bs); sync                         if (s+1 < S) fetch(s+1)  → registers
//                                                  math(stage s%2)
//                                                  if (s+1 < S) store(stage (s+1)%2)
//                                                  sync
//
// Why one barrier is enough: slice s writes stage (s+1)%2, which was last read
// during slice s−1 — and every thread has passed the barrier that ended slice
// s−1 before any thread writes. What slice s+1 reads was written before the
// barrier that ends slice s.
//
// Cost: twice the shared memory and registers for the prefetched float4s and
// the second set of fragments.
//
//   tiles (block × BK, warp, blocks/SM)     TFLOP/s       vs cuBLAS
//   128×128×8,  64×32, 2   (rung 03l's)       41.0 / 41.6   0.81 / 0.82
//   128×128×16, 64×32, 2                    43.0 / 43.3   0.84 / 0.85   half the barriers per FMA
//   128×128×8,  32×64, 2                    38.4 / 38.8   0.76 / 0.76
//   128×128×16, 64×64, 2   (128 threads)    44.0 / 44.4   0.86 / 0.87   ← DefaultTiles
//   128×256×8,  64×64, 1                    44.3 / 44.6   0.87 / 0.88
//
// The winners share an 8×16 lane tile: 128 FMAs per 6 LDS.128 instead of 64
// per 4, at 225–255 registers, so only 8 warps fit per SM and the two-stage
// pipeline must hide the latency on its own. 128×256 is a hair faster but
// wastes half its tile on the 128-column GEMMs of lesson 02's convolutions,
// so the default is 128×128×16.
//
// Supported: fp32, any M, N, K (float4 path when K % 4 == 0 and N % 4 == 0
// with 16-byte aligned buffers, predicated scalar path otherwise; both tested);
// ceil(M/128) must fit in gridDim.y.
// Run just this: build/convlab run gemm/gpu/03m_double_buffering
#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/gemm_tiles.cuh"
#include "gpu/lib/sgemm_double_buffered.cuh"

namespace convlab {
namespace {

using namespace gpu::double_buffered;  // tunables, kernel and launch: gpu/lib/sgemm_double_buffered.cuh

bool supports(const GemmProblem& p) {
  return p.dtype == DType::f32 && gpu::ceil_div<int64_t>(p.M, kBlockM) <= gpu::kMaxGridYZ;
}

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  gpu::double_buffered::launch(p.M, p.N, p.K, static_cast<const float*>(a.a), static_cast<const float*>(a.b),
                               static_cast<float*>(a.c));
}

const Register<GemmProblem> reg{{
    .name = "03m_double_buffering",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "rung 03l with two shared stages, register prefetch of the next slice and double-buffered fragments, "
            "re-tiled by a sweep to 128x128x16 with 64x64 warps (8x16 outputs per lane)",
}};

}  // namespace
}  // namespace convlab
