// gpu/conv2d/05a_winograd_f2x2_3x3.cu — lesson 05, GPU rung 7: Winograd F(2×2, 3×3), fp32 and fp16.
//
// Idea over 04a_implicit_gemm: trade multiplies for data movement. Each
// 2×2 block of outputs takes 16 multiplies per (c, k) pair instead of 36
// (2.25× fewer FLOPs in the GEMM), but the transformed input V and the GEMM's
// output M live in global memory between four launches (input transform,
// 16 GEMMs with lesson 03's SGEMM batched over blockIdx.z, output transform;
// see gpu/lib/winograd.cuh). Implicit GEMM moves almost nothing but x, w
// and y; this rung moves V and M twice each.
//
// Count first, N=32 56×56 C=K=128 3×3 pad 1 fp32 on an H200 (tiles =
// 32·28·28 = 25 088; bandwidth 4.2 TB/s D2D copy, SGEMM 41 TFLOP/s at 4096³
// in bench/NOTES.md):
//   FLOPs   GEMMs 16 · 2 · 25 088 · 128 · 128 = 13.2 GFLOP (direct: 29.6)
//           transforms ≈ 0.2 GFLOP of adds: negligible
//   bytes   x 51 MB read (overlap from L2), V 205 MB written + read, M 205 MB
//           written + read, y 51 MB written, U 1 MB: ≈ 0.92 GB
//   floors  GEMMs at 35–41 TFLOP/s: 0.32–0.38 ms; transforms' traffic
//           (x + V + M + y ≈ 0.51 GB) at ~3.5 TB/s: 0.15 ms; the GEMMs'
//           own V/M traffic (0.41 GB) overlaps their math.
//   predicted 0.50–0.65 ms — ahead of 04a_implicit_gemm (0.735 ms), but
//   only just (written for the SGEMM's first tiles, BK = 8; the measured run
//   used its re-tiled BK = 16, 8 slices): K = C = 128 gives the SGEMM 16 K-slices per tile, so its
//   prologue and epilogue weigh more than at 4096³; a GEMM at 25 TFLOP/s
//   makes this rung 0.7 ms. F(4×4) (rung 08) is the one with real margin.
// Measured (H200, bench/results/2026-11-30-h200-3/bench-conv2d.json): 0.507 ms,
//   1.45× faster than 04a_implicit_gemm (0.734 ms) and 1.54× cuDNN's fp32
//   FMA algorithm (0.780 ms) — the fast end of the prediction, so the short-K
//   SGEMM did not drop to the feared 25 TFLOP/s (no per-launch profile taken).
//   The bench reports 58.4 TFLOP/s, an *effective* rate: it counts the direct
//   convolution's 29.6 GFLOP, not the 13.2 this rung does. N=128: 1.909 ms
//   (05: 2.916); N=128 28×28 C=K=256: 1.563 ms (05: 2.895). All tests pass;
//   error table (fp32 as the CPU rung, fp16 = output rounding only):
//   bench/results/2026-11-30-h200-3/winograd-error.txt.
//
// fp16: x, w, y in half; transforms, V, M and accumulation in fp32 (so the
// same kernels, the same GEMM, twice the read bandwidth saved on x only).
// Measured N=128 56×56 C=K=128 fp16: 2.001 ms (fp32: 1.909) — 5.1× slower than
// 04b_implicit_gemm_tensor_core (0.389 ms): a 2.25× cut in multiplies on the
// CUDA cores cannot match tensor cores' ~7× higher rate (lesson 05, "Speed").
// Supported: f32 and f16, 3×3, stride 1, one group, any N, H, W, C, K, pad;
// float4 GEMM path when C % 4 == 0 and K % 4 == 0. Limits: tiles ≤ 65535·128.
// Run just this: build/convlab run conv2d/gpu/05a_winograd_f2x2_3x3
#include "gpu/lib/winograd.cuh"

namespace convlab {
namespace {

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  gpu::winograd::run<2>(p, a, "conv2d/gpu/05a_winograd_f2x2_3x3");
}

const Register<ConvProblem> reg{{
    .name = "05a_winograd_f2x2_3x3",
    .device = Device::gpu,
    .lesson = 5,
    .supports = gpu::winograd::supports<2>,
    .run = run,
    .workspace_bytes = gpu::winograd::workspace_bytes<2>,
    .idea = "Winograd F(2x2,3x3): input transform, 16 GEMMs (lesson 03 SGEMM over blockIdx.z), output transform; "
            "f32/f16 with fp32 inside",
}};

}  // namespace
}  // namespace convlab
