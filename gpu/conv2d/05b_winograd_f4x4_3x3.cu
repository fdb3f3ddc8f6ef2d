// gpu/conv2d/05b_winograd_f4x4_3x3.cu — lesson 05, GPU rung 05b: Winograd F(4×4, 3×3), fp32 and fp16.
//
// Idea over 05a_winograd_f2x2_3x3: bigger tiles, the same four launches
// (gpu/lib/winograd.cuh). A 4×4 output tile from a 6×6 input tile: 36
// multiplies per (c, k) pair instead of 144 — 4× fewer than direct — and V,
// M are 36/16 = 2.25× x and y instead of 4×, so the traffic that held rung 05a
// back shrinks too. The price is accuracy (entries up to 8 in Bᵀ and Aᵀ,
// 1/6 and 1/12 in G; the measured table is in lessons/05-winograd).
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
