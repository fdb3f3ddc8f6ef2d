// cpu/conv2d/09_grouped.cpp — lesson 06, CPU rung 9: grouped convolution with narrow groups.
//
// Idea over 08_depthwise: between depthwise (T = 1) and dense (T = C) lie
// grouped convs with a small group width T: ResNeXt's T = 4..32, ConvFirst's
// T = 8. Rung 05 runs them as one implicit GEMM per group, M = N·P·Q by
// Kg = K/groups by R·S·T, and with Kg = 8 its 6×16 micro-kernel computes 16
// columns of which 8 exist — half the FMAs are thrown away — and it packs a
// fresh A block for each group's 8 columns of work. The work per output is
// T·R·S multiply-adds (72 for T = 8, 3×3), enough to be compute bound (Eq.
// 25: intensity ~T·R·S/2 flops per byte at fp32), but only if the vectors
// are full.
//
// So vectorise along the Kg output channels of one group (8 = one AVX2
// vector, 32 = two AVX-512 vectors) and keep kPixels output pixels of one
// row in flight, so each weight vector loaded is used kPixels times and each
// input value x[.., t] broadcast once per pixel:
//
//   plain loops (the reference):                 here, per output row (n, p) and group g:
//     for n, p, q, k (group g = k / Kg):           wt[g][r][s][t][0..Kg) = w[g·Kg + j][r][s][t]   (transposed once)
//       acc = 0                                    for q0 step kPixels:
//       for r, s, t:                                 acc[kPixels][Kg] = 0                          registers
//         acc += x[n, ih, iw, g·T + t]               for r, s:   for t < T:
//              · w[k, r, s, t]                         wv = wt[g][r][s][t][:]                     one vector load
//       y[n, p, q, k] = acc                            for i < kPixels (tap inside the image):
//                                                        acc[i][:] += x[.., q0+i's pixel, g·T + t] · wv   broadcast · vector
//                                                    y[n, p, q0 + i, g·Kg : g·Kg + Kg) = acc[i]
//
// Kg is a template parameter for the common widths (8, 16, 32, 64) so the
// accumulator tile is registers; any other Kg ≤ 64 takes a run-time width.
//
// Cost: exactly 2·N·P·Q·K·T·R·S flops, nothing wasted on padding or on empty
// vector lanes (for Kg a multiple of the vector width). Per FMA: one
// broadcast of x shared by Kg/16 vectors, one weight vector shared by
// kPixels pixels; that load traffic keeps it below the FMA peak for Kg = 8.
// Supported: f32, groups > 1 with T ≥ 2 or Kg ≥ 2 (depthwise proper is
// 08's), Kg ≤ 64, any R, S, stride, pad. Workspace: K·R·S·T floats.
// Run just this: build/convlab run conv2d/cpu/09_grouped --shape N=8,H=28,C=128,K=128,R=3,pad=1,groups=16
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/ops/conv2d.hpp"

namespace convlab {
namespace {

// ---- tunables --------------------------------------------------------------------
constexpr int kPixels = 4;   // output pixels along q sharing each weight vector
constexpr int kMaxKg = 64;   // widest group of output channels the accumulator tile holds
static_assert(kPixels * kMaxKg <= 256, "the accumulator tile should stay near the register file (32 AVX-512 registers)");

bool supports(const ConvProblem& p) {
  const bool depthwise = p.T() == 1 && p.K_per_group() == 1;
  return p.dtype == DType::f32 && p.groups > 1 && !depthwise && p.K_per_group() <= kMaxKg;
}

std::size_t workspace_bytes(const ConvProblem& p) {
  return std::size_t(p.K) * p.R * p.S * p.T() * sizeof(float);
}

// Outputs y[n, op, q0 .. q0 + npix, g·Kg .. + Kg) for one group. kKg == 0: run-time width `Kg`.
template <int kKg>
void group_pixels(const ConvProblem& pr, const float* image, const float* wtg, int op, int q0, int npix, int g,
                  int Kg_runtime, float* out_row) {
  constexpr int kWidth = kKg > 0 ? kKg : kMaxKg;
  const int Kg = kKg > 0 ? kKg : Kg_runtime;
  const int T = pr.T(), C = pr.C;
  float acc[kPixels][kWidth] = {};
  const int ih0 = op * pr.stride - pr.pad;
  for (int r = 0; r < pr.R; ++r) {
    const int ih = ih0 + r;
    if (ih < 0 || ih >= pr.H) continue;  // the whole tap row is padding
    const float* row = image + std::ptrdiff_t(ih) * pr.W * C + std::ptrdiff_t(g) * T;
    for (int s = 0; s < pr.S; ++s) {
      const float* src[kPixels];  // the pixel each output reads at this tap, or nullptr in the padding
      for (int i = 0; i < kPixels; ++i) {
        const int iw = (q0 + i) * pr.stride - pr.pad + s;
        src[i] = (i < npix && iw >= 0 && iw < pr.W) ? row + std::ptrdiff_t(iw) * C : nullptr;
      }
      const float* wtap = wtg + std::ptrdiff_t(r * pr.S + s) * T * Kg;
      for (int t = 0; t < T; ++t) {
        const float* __restrict wv = wtap + std::ptrdiff_t(t) * Kg;
        for (int i = 0; i < kPixels; ++i) {
          if (src[i] == nullptr) continue;
          const float xv = src[i][t];
#pragma omp simd
          for (int j = 0; j < (kKg > 0 ? kKg : Kg); ++j) acc[i][j] += xv * wv[j];
        }
      }
    }
  }
  for (int i = 0; i < npix; ++i) {
    float* out = out_row + std::ptrdiff_t(q0 + i) * pr.K + std::ptrdiff_t(g) * Kg;
    for (int j = 0; j < Kg; ++j) out[j] = acc[i][j];
  }
}

template <int kKg> void run_width(const ConvProblem& p, const float* x, const float* wt, float* y) {
  const int P = p.P(), Q = p.Q(), Kg = p.K_per_group();
  const std::ptrdiff_t group_weights = std::ptrdiff_t(Kg) * p.R * p.S * p.T();
#pragma omp for collapse(2) schedule(static)
  for (int n = 0; n < p.N; ++n)
    for (int op = 0; op < P; ++op) {
      const float* image = x + std::ptrdiff_t(n) * p.H * p.W * p.C;
      float* out_row = y + (std::ptrdiff_t(n) * P + op) * Q * p.K;
      for (int q0 = 0; q0 < Q; q0 += kPixels)
        for (int g = 0; g < p.groups; ++g)
          group_pixels<kKg>(p, image, wt + g * group_weights, op, q0, std::min(kPixels, Q - q0), g, Kg, out_row);
    }
}

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* x = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const float* w = static_cast<const float*>(a.w);  // [K, R, S, T]        KRSC, T = C/groups
  float* y = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC
  float* wt = static_cast<float*>(a.workspace);     // [groups, R, S, T, Kg] output channel innermost
  const int Kg = p.K_per_group(), T = p.T(), RS = p.R * p.S;

#pragma omp parallel
  {
    // wt[g][tap][t][j] = w[g·Kg + j][tap][t]
#pragma omp for schedule(static)
    for (int k = 0; k < p.K; ++k) {
      const int g = k / Kg, j = k % Kg;
      for (int tap = 0; tap < RS; ++tap)
        for (int t = 0; t < T; ++t)
          wt[((std::ptrdiff_t(g) * RS + tap) * T + t) * Kg + j] = w[(std::ptrdiff_t(k) * RS + tap) * T + t];
    }
    // (implicit barrier)
    switch (Kg) {
      case 8: run_width<8>(p, x, wt, y); break;
      case 16: run_width<16>(p, x, wt, y); break;
      case 32: run_width<32>(p, x, wt, y); break;
      case 64: run_width<64>(p, x, wt, y); break;
      default: run_width<0>(p, x, wt, y); break;
    }
  }
}

const Register<ConvProblem> reg{{
    .name = "09_grouped",
    .device = Device::cpu,
    .lesson = 6,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "grouped, narrow groups: SIMD across a group's Kg outputs, 4 pixels per weight vector, no padded lanes",
}};

}  // namespace
}  // namespace convlab
