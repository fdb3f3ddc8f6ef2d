// gpu/conv2d/05a_winograd_f2x2_3x3.cu — lesson 05, GPU rung 05a: Winograd F(2×2, 3×3), fp32 and fp16.
//
// Idea over 04a_implicit_gemm: trade multiplies for data movement. Each
// 2×2 block of outputs takes 16 multiplies per (c, k) pair instead of 36
// (2.25× fewer FLOPs in the GEMM), but the transformed input V and the GEMM's
// output M live in global memory between four launches (input transform,
// 16 GEMMs with lesson 03's SGEMM batched over blockIdx.z, output transform;
// see gpu/lib/winograd.cuh). Implicit GEMM moves almost nothing but x, w
// and y; this rung moves V and M twice each.
//
// fp16: x, w, y in half; transforms, V, M and accumulation in fp32 (so the
// same kernels, the same GEMM, twice the read bandwidth saved on x only).
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
