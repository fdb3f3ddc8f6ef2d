// cpu/conv2d/06c_pointwise.cpp — lesson 06, CPU rung 06c: a pointwise (1x1) conv is a GEMM, with nothing to build.
//
// Idea over 06b_grouped: the other half of a depthwise-separable block. With
// R = S = 1, stride 1, no padding and one group, output pixel m reads input
// pixel m and nothing else, so in NHWC the convolution IS the GEMM
//
//   Y[M, K] = X[M, C] · Wᵀ        M = N·H·W pixels
//   X = x as [N·H·W, C] row-major (NHWC as stored)
//   W = w as [K, C]     row-major (KRSC with R = S = 1): "B transposed"
//   Y = y as [N·H·W, K] row-major (NHWC as stored)
//
// No im2col (lesson 02), no view (lesson 04), no per-group loop: x is handed
// to lesson 03's packed GEMM as A, w as Bᵀ (its packing reads rows of w as
// columns of B, so no transpose is stored), and y is C. The only thing this
// rung does is see that, and call the GEMM (cpu/lib/gemm_kernels.hpp,
// gemm_packed_parallel: Goto's five loops, AVX2 6×16 micro-kernel, OpenMP).
//
// Cost: 2·M·K·C flops at the GEMM's rate. The intensity (Eq. 26) is
// ~1/(1/C + 1/K) · 2/bytes-per-element flops per byte — for C = K = 128 fp32
// about 32 flop/B, above this CPU's ridge (235 GFLOP/s / 30 GB/s ≈ 8), so
// pointwise is compute bound where depthwise is not: in a separable block the
// 1x1 does nearly all the flops and the depthwise nearly none of them, while
// both move about the same bytes.
// Supported: f32, R = S = 1, stride 1, pad 0, groups 1, N·H·W < 2³¹.
// Workspace: the GEMM's packed B panel and one packed A block per thread.
// Run just this: build/convlab run conv2d/cpu/06c_pointwise --shape N=8,H=28,C=128,K=128,R=1
#include <cstddef>
#include <cstdint>

#include "ops/conv2d.hpp"
#include "cpu/lib/threads.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;

using cpu::thread_count;

int64_t pixels(const ConvProblem& p) { return int64_t(p.N) * p.H * p.W; }

bool supports(const ConvProblem& p) {
  return p.dtype == DType::f32 && p.R == 1 && p.S == 1 && p.stride == 1 && p.pad == 0 && p.groups == 1 &&
         pixels(p) < (int64_t(1) << 31);
}

GemmProblem gemm_of(const ConvProblem& p) { return {int(pixels(p)), p.K, p.C, DType::f32}; }

std::size_t workspace_bytes(const ConvProblem& p) { return packed_workspace_bytes(gemm_of(p), thread_count()); }

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  StridedGemm g;
  const GemmProblem shape = gemm_of(p);
  g.M = shape.M;
  g.N = shape.N;
  g.K = shape.K;
  g.a = static_cast<const float*>(a.x);  // x [N, H, W, C] NHWC = A [M, C] row-major
  g.lda = p.C;
  g.b = static_cast<const float*>(a.w);  // w [K, 1, 1, C] KRSC = Bᵀ [K, C] row-major
  g.ldb = p.C;
  g.b_transposed = true;
  g.c = static_cast<float*>(a.y);        // y [N, H, W, K] NHWC = C [M, K] row-major
  g.ldc = p.K;
  gemm_packed_parallel(g, a.workspace, thread_count(), selected_micro_kernel().kernel);
}

const Register<ConvProblem> reg{{
    .name = "06c_pointwise",
    .device = Device::cpu,
    .lesson = 6,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "1x1 conv = GEMM: x is A, w is Bᵀ, y is C as stored (NHWC/KRSC); lesson 03's packed GEMM, called",
}};

}  // namespace
}  // namespace convlab
