// gpu/conv2d/06c_pointwise.cu — lesson 06, GPU rung 06c: a pointwise (1x1) conv is the suite's GEMM.
//
// Idea over 06b_grouped: with R = S = 1, stride 1, pad 0 and one group, NHWC
// x is already the GEMM's A and KRSC w its Bᵀ:
//
//   Y[M, K] = X[M, C] · Wᵀ      M = N·H·W;  X = x as stored, W = w as [K, C], Y = y as stored
//
// so the rung writes no kernel of its own for the product. It calls:
//
//   fp32  lesson 03's double-buffered SGEMM (gpu/lib/sgemm_double_buffered.cuh),
//         which wants B = Wᵀ as [C, K] row-major: w (K·C floats, 256 KiB for
//         C = K = 256) is transposed into the workspace by a small kernel
//         first — 0.5 MB of traffic against 2 × 103 MB for x and y.
//   fp16  lesson 04's tensor-core implicit GEMM (04b_implicit_gemm_tensor_core,
//         through gpu/lib/implicit_gemm_tensor_core.cuh). For a 1x1 conv
//         its im2col view is the identity (every 16-byte chunk of A is 8
//         channels of one pixel, no padding), and it takes w as [K, C] rows
//         directly, the "col" operand mma.sync wants: nothing to transpose.
// Supported: f32 (ceil(N·H·W / 128) ≤ 65535) and what 04b_implicit_gemm_tensor_core supports in f16;
// R = S = 1, stride 1, pad 0, groups 1.
// Run just this: build/convlab run conv2d/gpu/06c_pointwise --shape N=128,H=28,C=256,K=256,R=1,dtype=f16
#include <cstdint>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/implicit_gemm_tensor_core.cuh"
#include "gpu/lib/sgemm_double_buffered.cuh"

namespace convlab {
namespace {

int64_t pixels(const ConvProblem& p) { return int64_t(p.N) * p.H * p.W; }

bool is_pointwise(const ConvProblem& p) {
  return p.R == 1 && p.S == 1 && p.stride == 1 && p.pad == 0 && p.groups == 1;
}

bool supports(const ConvProblem& p) {
  if (!is_pointwise(p)) return false;
  if (p.dtype == DType::f32)
    return gpu::ceil_div<int64_t>(pixels(p), gpu::double_buffered::kBlockM) <= gpu::kMaxGridYZ &&
           int64_t(p.K) * p.C <= INT32_MAX;
  return p.dtype == DType::f16 && gpu::tensor_core_conv::supports(p);
}

std::size_t workspace_bytes(const ConvProblem& p) {
  return p.dtype == DType::f32 ? std::size_t(p.K) * p.C * sizeof(float) : 0;
}

// wt[c][k] = w[k][c]: [K, C] → [C, K], one thread per element (K·C is small).
__global__ void transpose_weights(int K, int C, const float* __restrict__ w, float* __restrict__ wt) {
  const int64_t total = int64_t(K) * C;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int k = int(i % K), c = int(i / K);  // consecutive threads write consecutive wt
    wt[i] = w[int64_t(k) * C + c];
  }
}

void run(const ConvProblem& p, const Args<ConvProblem>& args) {
  if (p.dtype != DType::f32) {
    gpu::tensor_core_conv::run(p, args);  // fp16: lesson 04's tensor-core GEMM, view = identity
    return;
  }
  const auto* x = static_cast<const float*>(args.x);  // [N, H, W, C] = A [M, C]
  const auto* w = static_cast<const float*>(args.w);  // [K, 1, 1, C] = [K, C]
  auto* y = static_cast<float*>(args.y);              // [N, H, W, K] = C [M, K]
  auto* wt = static_cast<float*>(args.workspace);     // [C, K]       = B
  constexpr int kTransposeThreads = 256;
  const int64_t blocks = gpu::ceil_div<int64_t>(int64_t(p.K) * p.C, kTransposeThreads);
  transpose_weights<<<unsigned(blocks < 4096 ? blocks : 4096), kTransposeThreads>>>(p.K, p.C, w, wt);
  gpu::check_launch("transpose_weights");
  gpu::double_buffered::launch(int(pixels(p)), p.K, p.C, x, wt, y);
}

const Register<ConvProblem> reg{{
    .name = "06c_pointwise",
    .device = Device::gpu,
    .lesson = 6,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "1x1 conv = GEMM on x as stored: fp32 lesson 03's double-buffered SGEMM (w transposed once), "
            "fp16 lesson 04's tensor-core GEMM (view = identity)",
}};

}  // namespace
}  // namespace convlab
