// gpu/conv2d/05b_winograd_f4x4_3x3.cu — lesson 05, GPU rung 8: Winograd F(4×4, 3×3), fp32 and fp16.
//
// Idea over 05a_winograd_f2x2_3x3: bigger tiles, the same four launches
// (gpu/lib/winograd.cuh). A 4×4 output tile from a 6×6 input tile: 36
// multiplies per (c, k) pair instead of 144 — 4× fewer than direct — and V,
// M are 36/16 = 2.25× x and y instead of 4×, so the traffic that held rung 07
// back shrinks too. The price is accuracy (entries up to 8 in Bᵀ and Aᵀ,
// 1/6 and 1/12 in G; the measured table is in lessons/05-winograd).
//
// Count first, N=32 56×56 C=K=128 3×3 pad 1 fp32 on an H200 (tiles =
// 32·14·14 = 6 272):
//   FLOPs   GEMMs 36 · 2 · 6 272 · 128 · 128 = 7.4 GFLOP (direct: 29.6);
//           transforms ≈ 0.4 GFLOP of adds and small multiplies
//   bytes   x 51 MB, V 116 MB written + read, M 116 MB written + read, y 51 MB: ≈ 0.57 GB
//   floors  GEMMs at 30–40 TFLOP/s: 0.19–0.25 ms; transforms ≈ 0.33 GB at ~3.5 TB/s: 0.09 ms
//   predicted 0.30–0.40 ms: about 2× faster than 04a_implicit_gemm (0.735 ms).
// Measured (H200, bench/results/2026-11-30-h200-3/bench-conv2d.json): 0.316 ms,
//   2.32× faster than 04a_implicit_gemm (0.734 ms), 2.47× cuDNN's fp32 FMA
//   algorithm (0.780 ms); inside the predicted range, near its fast end. The
//   bench's 93.6 TFLOP/s (184% "of peak") is an effective rate counting the
//   direct convolution's 29.6 GFLOP; this rung does 7.4 GFLOP of GEMM.
//   N=128: 1.162 ms (05: 2.916); N=128 28×28 C=K=256: 0.949 ms (05: 2.895, 3.05×).
//   fp16, N=128 56×56 C=K=128: 1.320 ms, 3.4× slower than the tensor-core
//   implicit GEMM (06, 0.389 ms) and 5.2× slower than cuDNN (0.252 ms): the GEMMs
//   here run on the CUDA cores. Errors as predicted (fp32 1.7e-6 / 3.3e-6 rel.
//   L2 at C = 64 / 256, fp16 2.1e-4): bench/results/2026-11-30-h200-3/winograd-error.txt.
//
// fp16: x, w, y in half, everything in between in fp32; the only fp16
// rounding is the output's, so F(4×4) passes the fp16 bound honestly (an
// fp16 V would not be safe: see the lesson's error table).
// Supported: f32 and f16, 3×3, stride 1, one group, any N, H, W, C, K, pad.
// Run just this: build/convlab run conv2d/gpu/05b_winograd_f4x4_3x3
#include "gpu/lib/winograd.cuh"

namespace convlab {
namespace {

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  gpu::winograd::run<4>(p, a, "conv2d/gpu/05b_winograd_f4x4_3x3");
}

const Register<ConvProblem> reg{{
    .name = "05b_winograd_f4x4_3x3",
    .device = Device::gpu,
    .lesson = 5,
    .supports = gpu::winograd::supports<4>,
    .run = run,
    .workspace_bytes = gpu::winograd::workspace_bytes<4>,
    .idea = "Winograd F(4x4,3x3): 36 GEMMs over blockIdx.z, 4x fewer multiplies than direct; f32/f16 with fp32 inside",
}};

}  // namespace
}  // namespace convlab
