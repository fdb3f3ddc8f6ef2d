// gpu/conv2d/01c_thread_per_output.cu — lesson 01, GPU rung 01c: one thread per output.
//
// Idea: the seven-loop convolution (cpu/conv2d/01a_seven_loop) with its four
// output loops (n, p, q, k) replaced by the GPU's grid. Every one of the
// N·P·Q·K outputs gets its own thread, which runs the three reduction loops
// (r, s, t) on its own and writes its one value. There is no cooperation
// between threads at all: this is the baseline every later GPU rung improves.
//
// The one decision that matters is the order of the thread index. Output y is
// NHWC, so k is its fastest-moving index; consecutive threads take consecutive
// k, and a warp's 32 stores land in consecutive addresses (coalesced: one or
// two 128-byte transactions instead of 32). The 32 threads of a warp then also
// read the same x values (one broadcast load), but their weight rows lie
// R·S·T elements apart, so weights are fetched as 32 scattered loads that only
// the L1/L2 caches rescue.
//
// Cost: N·P·Q·K·T·R·S multiply-adds, as on the CPU, and for every one of them
// two loads from global memory (through the caches): about 2 loads per FMA,
// where the GPU can afford well under one. The kernel is bound by load
// throughput, not arithmetic — rung 01d (01d_smem_tile) attacks exactly that.
// fp32 and fp16 (fp16 values are widened to fp32, accumulated in fp32, and the
// sum rounded to fp16 once at the store).
// Run just this: build/convlab run conv2d/gpu/01c_thread_per_output
#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/element.cuh"

namespace convlab {
namespace {

using gpu::ConvGeometry;

// ---- tunables ----------------------------------------------------------------
constexpr int kThreadsPerBlock = 256;
static_assert(kThreadsPerBlock % 32 == 0, "whole warps only: a partial warp leaves lanes idle in every block");
static_assert(kThreadsPerBlock <= 1024, "CUDA allows at most 1024 threads per block");

// Kernel contract:
//   x [N, H, W, C] NHWC, w [K, R, S, T] KRSC, y [N, P, Q, K] NHWC, Element = float or __half.
//   Thread i (over the whole grid) computes output element i of y, i.e.
//   i = ((n·P + p)·Q + q)·K + k, so consecutive threads differ in k first.
//   Edge duties: threads past the last output return at once; taps that fall
//   into the zero padding are skipped (they would add 0).
template <class Element>
__global__ void __launch_bounds__(kThreadsPerBlock)
    conv2d_thread_per_output(ConvGeometry g, const Element* __restrict__ x, const Element* __restrict__ w,
                             Element* __restrict__ y) {
  const int64_t index = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t outputs = int64_t(g.N) * g.P * g.Q * g.K;
  if (index >= outputs) return;

  // Undo i = ((n·P + p)·Q + q)·K + k.
  const int k = int(index % g.K);
  const int64_t pixel = index / g.K;
  const int q = int(pixel % g.Q);
  const int p = int(pixel / g.Q % g.P);
  const int n = int(pixel / (int64_t(g.Q) * g.P));

  const int first_channel = (k / g.K_per_group) * g.T;  // input channels of k's group start here
  float acc = 0.f;
  for (int r = 0; r < g.R; ++r) {                       // filter rows
    const int ih = p * g.stride + r - g.pad;
    if (ih < 0 || ih >= g.H) continue;                  // zero padding above / below
    for (int s = 0; s < g.S; ++s) {                     // filter columns
      const int iw = q * g.stride + s - g.pad;
      if (iw < 0 || iw >= g.W) continue;                // zero padding left / right
      const Element* x_tap = x + ((int64_t(n) * g.H + ih) * g.W + iw) * g.C + first_channel;
      const Element* w_tap = w + ((int64_t(k) * g.R + r) * g.S + s) * g.T;
      for (int t = 0; t < g.T; ++t)                     // input channels of the group
        acc += gpu::to_float(x_tap[t]) * gpu::to_float(w_tap[t]);
    }
  }
  y[index] = gpu::from_float<Element>(acc);
}

int64_t blocks_needed(const ConvProblem& p) {
  const int64_t outputs = int64_t(p.N) * p.P() * p.Q() * p.K;
  return gpu::ceil_div<int64_t>(outputs, kThreadsPerBlock);
}

bool supports(const ConvProblem& p) {
  const bool dtype_ok = p.dtype == DType::f32 || p.dtype == DType::f16;
  return dtype_ok && blocks_needed(p) <= gpu::kMaxGridX;  // one thread per output must fit in one grid
}

template <class Element> void launch(const ConvProblem& p, const Args<ConvProblem>& a) {
  conv2d_thread_per_output<Element><<<unsigned(blocks_needed(p)), kThreadsPerBlock>>>(
      gpu::geometry_of(p), static_cast<const Element*>(a.x), static_cast<const Element*>(a.w),
      static_cast<Element*>(a.y));
  gpu::check_launch("conv2d_thread_per_output");
}

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  // f16 tensors are the harness's uint16_t bit patterns, read as __half.
  gpu::visit_dtype<float, __half>(p.dtype, [&](auto tag) { launch<typename decltype(tag)::type>(p, a); });
}

const Register<ConvProblem> reg{{
    .name = "01c_thread_per_output",
    .device = Device::gpu,
    .lesson = 1,
    .supports = supports,
    .run = run,
    .idea = "one thread per output (n,p,q,k), k fastest so stores coalesce; fp32 or fp16 in, fp32 sums",
}};

}  // namespace
}  // namespace convlab
