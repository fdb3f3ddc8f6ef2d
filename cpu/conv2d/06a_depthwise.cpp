// cpu/conv2d/06a_depthwise.cpp — lesson 06, CPU rung 06a: depthwise convolution as its own loop nest.
//
// Idea over 04a_implicit_gemm: a depthwise conv (groups = C = K, one input
// channel per group, T = 1) is not a GEMM worth the name. As a GEMM per group
// it is M = N·P·Q rows by ONE column by a reduction of R·S = 9: rung 04a packs
// a block of A for every group to multiply it with a single weight column,
// and its 6×16 micro-kernel keeps 15 of its 16 columns idle. Every output
// element costs R·S multiply-adds and reads R·S inputs, so per byte of x
// there are only R·S/4 flops to do at fp32 (Eq. 27: 2.25 for 3x3): the job is to stream x once
// and do those flops on the way, with every SIMD lane busy.
//
// The lanes come from the channel axis. In NHWC the C channels of one pixel
// are contiguous, and channel c of y only needs channel c of x and its own
// R·S weights, so a vector of 16 channels is 16 independent depthwise convs
// that share every address computation:
//
//   plain loops (the reference):                 here:
//     for n, p, q, c:                              wt[r·S + s][c] = w[c][r][s]       (transposed once, workspace)
//       acc = 0                                    for (n, p) rows, split over threads:
//       for r, s (in the image):                     for q: for channel block cb of kBlock:
//         acc += x[n, ih, iw, c] · w[c, r, s]          acc[0..kBlock) = 0                  registers
//       y[n, p, q, c] = acc                            for r, s (in the image):
//                                                        acc[:] += x[n, ih, iw, cb:] · wt[r·S + s][cb:]   SIMD over c
//                                                      y[n, p, q, cb:] = acc
//
// The transposed weights make each tap's weight vector contiguous along c, as
// x is. The block of kBlock channels is a compile-time width, so the
// accumulators live in registers and the c loop vectorises completely; the
// last block of a C that is not a multiple of kBlock runs the same loop with
// a run-time width.
//
// Cost: exactly R·S·C·N·P·Q multiply-adds (no padding work: taps outside the
// image are skipped, not multiplied by zero) and x read R·S times through L1
// (the R input rows of one output row stay in L1/L2 while q sweeps across).
// Compulsory traffic is x + y + w once, so at C = 128, N = 8, 28×28 (3.2 MB
// of x) the data sits in L3 and the loop runs at cache speed, not DRAM speed.
// Supported: f32, groups == C == K (no channel multiplier), any R, S, stride,
// pad. Workspace: R·S·C floats (the transposed weights).
// Run just this: build/convlab run conv2d/cpu/06a_depthwise --shape N=8,H=28,C=128,K=128,R=3,pad=1,groups=128
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ops/conv2d.hpp"

namespace convlab {
namespace {

// ---- tunables --------------------------------------------------------------------
constexpr int kBlock = 32;  // channels per accumulator block: 2 AVX-512 or 4 AVX2 vectors
static_assert(kBlock % 16 == 0, "a block should be whole vectors on AVX2 (8 floats) and AVX-512 (16 floats)");

// acc[0..width) += src[0..width) · wt[0..width): one tap on one channel block.
// Width is a template parameter for full blocks (registers, unrolled SIMD) and
// a run-time value for the last, partial block.
template <int kWidth>
inline void tap_fixed(float (&acc)[kBlock], const float* __restrict src, const float* __restrict wt) {
#pragma omp simd
  for (int c = 0; c < kWidth; ++c) acc[c] += src[c] * wt[c];
}
inline void tap_tail(float (&acc)[kBlock], const float* __restrict src, const float* __restrict wt, int width) {
  for (int c = 0; c < width; ++c) acc[c] += src[c] * wt[c];
}

bool supports(const ConvProblem& p) {
  return p.dtype == DType::f32 && p.groups == p.C && p.K == p.C && p.T() == 1;
}

std::size_t workspace_bytes(const ConvProblem& p) { return std::size_t(p.R) * p.S * p.C * sizeof(float); }

// One output pixel y[n, p, q, c0 : c0 + width) from the image `image` = x[n].
template <bool kFull>
inline void output_pixel(const ConvProblem& pr, const float* image, const float* wt, int p, int q, int c0, int width,
                         float* out) {
  float acc[kBlock] = {};
  const int ih0 = p * pr.stride - pr.pad, iw0 = q * pr.stride - pr.pad;
  const int r_lo = std::max(0, -ih0), r_hi = std::min(pr.R, pr.H - ih0);  // taps inside the image
  const int s_lo = std::max(0, -iw0), s_hi = std::min(pr.S, pr.W - iw0);
  for (int r = r_lo; r < r_hi; ++r) {
    const float* row = image + (std::ptrdiff_t(ih0 + r) * pr.W) * pr.C + c0;
    const float* wrow = wt + std::ptrdiff_t(r) * pr.S * pr.C + c0;
    for (int s = s_lo; s < s_hi; ++s) {
      const float* src = row + std::ptrdiff_t(iw0 + s) * pr.C;
      if constexpr (kFull)
        tap_fixed<kBlock>(acc, src, wrow + std::ptrdiff_t(s) * pr.C);
      else
        tap_tail(acc, src, wrow + std::ptrdiff_t(s) * pr.C, width);
    }
  }
  if constexpr (kFull) {
#pragma omp simd
    for (int c = 0; c < kBlock; ++c) out[c] = acc[c];
  } else {
    for (int c = 0; c < width; ++c) out[c] = acc[c];
  }
}

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* x = static_cast<const float*>(a.x);  // [N, H, W, C]  NHWC
  const float* w = static_cast<const float*>(a.w);  // [C, R, S, 1]  KRSC with K = C, T = 1
  float* y = static_cast<float*>(a.y);              // [N, P, Q, C]  NHWC
  float* wt = static_cast<float*>(a.workspace);     // [R·S, C]      one contiguous weight vector per tap
  const int P = p.P(), Q = p.Q(), C = p.C, taps = p.R * p.S;
  const int full_blocks = C / kBlock, tail = C % kBlock;

#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int c = 0; c < C; ++c)
      for (int tap = 0; tap < taps; ++tap) wt[std::ptrdiff_t(tap) * C + c] = w[std::ptrdiff_t(c) * taps + tap];
    // (implicit barrier: every thread sees all of wt)

#pragma omp for collapse(2) schedule(static)
    for (int n = 0; n < p.N; ++n)
      for (int op = 0; op < P; ++op) {
        const float* image = x + std::ptrdiff_t(n) * p.H * p.W * C;
        float* out_row = y + (std::ptrdiff_t(n) * P + op) * Q * C;
        for (int q = 0; q < Q; ++q) {
          float* out = out_row + std::ptrdiff_t(q) * C;
          for (int b = 0; b < full_blocks; ++b)
            output_pixel<true>(p, image, wt, op, q, b * kBlock, kBlock, out + b * kBlock);
          if (tail) output_pixel<false>(p, image, wt, op, q, full_blocks * kBlock, tail, out + full_blocks * kBlock);
        }
      }
  }
}

const Register<ConvProblem> reg{{
    .name = "06a_depthwise",
    .device = Device::cpu,
    .lesson = 6,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "depthwise (groups = C = K): SIMD across channels, weights transposed to [RS][C], taps in the image only",
}};

}  // namespace
}  // namespace convlab
