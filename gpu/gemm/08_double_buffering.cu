// gpu/gemm/08_double_buffering.cu — lesson 03, GPU rung 8: fetch the next slice while computing this one.
//
// Idea over 07_warp_tiling: in rung 7 every K slice is a strict sequence
//
//   fetch slice s from global (~500+ cycles of latency)   → barrier
//   64 FMAs × 8 k-steps out of shared memory               → barrier
//
// and a block's warps sit idle during the fetch, hidden only by the one other
// resident block. Here the two overlap, with two buffers at two levels:
//
//   shared memory: two stages As[2][..], Bs[2][..]. Slice s is computed from
//     stage s % 2 while slice s+1 is written into stage (s+1) % 2, so one
//     barrier per slice suffices (rung 7 needs two);
//   registers:     slice s+1's global loads are ISSUED before slice s's math
//     and their results are only consumed (stored to shared memory) after it,
//     so the 8 k-steps of FMAs run while the loads are in flight;
//   fragments:     inside a slice the A/B fragments of k-step kk+1 are read
//     from shared memory before the FMAs of k-step kk, hiding the shared-load
//     latency behind 64 FMAs.
//
//   plain (rung 7):                          double-buffered (here):
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
// Cost: twice the shared memory (16.6 KiB per block: still 2+ blocks per SM),
// 8 more registers for the prefetched float4s and 16 more for the second set
// of fragments, all within the 128 registers that __launch_bounds__(256, 2)
// allows (ptxas, sm_90: exactly 128 registers, 0 bytes spilled, both paths).
// Prediction at 4096³ on an H200: ~43-48 TFLOP/s (≈ 85-95% of cuBLAS's ~51):
// the FMA pipe is now the limit, less the overhead of ~0.25 LDS.128 per 16
// FMAs, index math and the tail of the last wave (1024 blocks over 132 SMs ×
// 2 = 3.9 waves).
//
// Supported: fp32, any M, N, K (float4 path when K % 4 == 0 and N % 4 == 0
// with 16-byte aligned buffers, predicated scalar path otherwise; both tested);
// ceil(M/128) must fit in gridDim.y.
// Run just this: build/convlab run gemm/cuda/08_double_buffering
#include "core/ops/gemm.hpp"
#include "gpu/common/check.cuh"
#include "gpu/common/gemm_tiles.cuh"
#include "gpu/gemm/sgemm_double_buffered.cuh"

namespace convlab {
namespace {

using namespace gpu::double_buffered;  // tunables, kernel and launch: gpu/gemm/sgemm_double_buffered.cuh

bool supports(const GemmProblem& p) {
  return p.dtype == DType::f32 && gpu::ceil_div<int64_t>(p.M, kBlockM) <= gpu::kMaxGridYZ;
}

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  gpu::double_buffered::launch(p.M, p.N, p.K, static_cast<const float*>(a.a), static_cast<const float*>(a.b),
                               static_cast<float*>(a.c));
}

const Register<GemmProblem> reg{{
    .name = "08_double_buffering",
    .device = Device::cuda,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "rung 7 with two shared stages, register prefetch of the next slice and double-buffered fragments",
}};

}  // namespace
}  // namespace convlab
