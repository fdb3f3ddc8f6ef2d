// cpu/conv2d/06b_grouped.cpp — lesson 06, CPU rung 06b: grouped convolution with narrow groups.
//
// Idea over 06a_depthwise: between depthwise (T = 1) and dense (T = C) lie
// grouped convs with a small group width T: ResNeXt's T = 4..32, ConvFirst's
// T = 8. Rung 04a runs them as one implicit GEMM per group, M = N·P·Q by
// Kg = K/groups by R·S·T, and with Kg = 8 its 6×16 micro-kernel computes 16
// columns of which 8 exist — half the FMAs are thrown away — and it packs a
// fresh A block for each group's 8 columns of work. The work per output is
// T·R·S multiply-adds (72 for T = 8, 3×3), enough to be compute bound on
// this CPU (Eq. 24 with K = C: intensity T·R·S/4 = 18 flops per byte at fp32,
// against a ridge of ~8), but only if the vectors are full.
//
// So vectorise along the Kg output channels of one group (8 = one AVX2
// vector, 32 = four) and keep a row of output pixels in flight (8 when Kg ≤
// 16, else 4), so each weight vector loaded is used once per pixel and each
// input value x[.., t] is one broadcast per pixel:
//
//   plain loops (the reference):                 here, per output row (n, p) and group g:
//     for n, p, q, k (group g = k / Kg):           wt[g][r][s][t][0..Kg) = w[g·Kg + j][r][s][t]   (transposed once)
//       acc = 0                                    for q0 step kPix:
//       for r, s, t:                                 acc[kPix][Kg] = 0                             registers
//         acc += x[n, ih, iw, g·T + t]               for r, s:   src[i] = pixel of output q0+i at (r, s), or a zero row
//              · w[k, r, s, t]                         for t < T:
//       y[n, p, q, k] = acc                              wv = wt[g][r][s][t][:]                     one vector load
//                                                        for i < kPix: acc[i][:] += src[i][t] · wv  broadcast · vector
//                                                    y[n, p, q0 + i, g·Kg : g·Kg + Kg) = acc[i]
//
// A tap in the padding reads a row of zeros instead of x, so the t loop has
// no branch: for Kg = 8 it compiles to one vector load and eight FMAs with
// broadcast memory operands per t. Kg is a template parameter for the common
// widths (8, 16, 32, 64), the accumulators GCC vectors (Vec8) kept in
// registers; any other Kg ≤ 64 takes a run-time width.
//
// Cost: 2·N·P·Q·K·T·R·S flops plus multiplications by zero for the taps in
// the left and right padding (1/42 of them at 28 wide, 3x3; padding rows are
// skipped), no empty vector lanes for Kg a multiple of 8. Per tap the pixel pointers are recomputed, which for T = 8 is paid
// over only 8 iterations of the t loop: that setup, not the FMAs, is what
// keeps T = 8 further from the peak than T = 32.
// Supported: f32, groups > 1 with T ≥ 2 or Kg ≥ 2 (depthwise proper is
// 08's), Kg ≤ 64, any R, S, stride, pad. Workspace: K·R·S·T + C floats.
// Run just this: build/convlab run conv2d/cpu/06b_grouped --shape N=8,H=28,C=128,K=128,R=3,pad=1,groups=16
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ops/conv2d.hpp"

namespace convlab {
namespace {

// ---- tunables --------------------------------------------------------------------
constexpr int kMaxKg = 64;     // widest group of output channels the accumulator tile holds
constexpr int kMaxPixels = 8;  // output pixels along q sharing each weight vector (narrow groups)
// Pixels per tile: the accumulators (pixels × Kg floats) should fill about 8
// vector registers — 8 pixels of one AVX2 vector for Kg = 8, 4 pixels of
// two AVX-512 vectors for Kg = 32 — enough independent FMAs to cover the FMA
// latency, few enough to leave registers for the broadcasts.
template <int kKg> constexpr int pixels_for() { return kKg > 0 && kKg <= 16 ? kMaxPixels : 4; }

// Eight floats as one value (GCC/Clang vector extension: one AVX register with
// -march=native, two SSE registers without). A local float array indexed in a
// loop tends to live on the stack, every FMA then a load and a store; an array
// of these, with every index a constant after unrolling, is kept in registers.
typedef float Vec8 __attribute__((vector_size(32)));
inline Vec8 load8(const float* p) {
  Vec8 v;
  std::memcpy(&v, p, sizeof v);  // unaligned load
  return v;
}
inline void store8(float* p, Vec8 v) { std::memcpy(p, &v, sizeof v); }
static_assert(kMaxPixels * 16 <= 128 && 4 * kMaxKg <= 256, "the accumulator tile should stay near the register file");

bool supports(const ConvProblem& p) {
  const bool depthwise = p.T() == 1 && p.K_per_group() == 1;
  return p.dtype == DType::f32 && p.groups > 1 && !depthwise && p.K_per_group() <= kMaxKg;
}

// Transposed weights, then a row of C zeros that stands in for a pixel in the padding.
std::size_t weight_floats(const ConvProblem& p) { return std::size_t(p.K) * p.R * p.S * p.T(); }
std::size_t workspace_bytes(const ConvProblem& p) { return (weight_floats(p) + p.C) * sizeof(float); }

// Outputs y[n, op, q0 .. q0 + npix, g·Kg .. + Kg) for one group. kKg == 0: run-time width `Kg_runtime`.
// A pixel in the padding (or past npix) reads the zero row instead of x: no branch in the t loop.
template <int kKg>
void group_pixels(const ConvProblem& pr, const float* image, const float* zeros, const float* wtg, int op, int q0,
                  int npix, int g, int Kg_runtime, float* out_row) {
  constexpr int kWidth = kKg > 0 ? kKg : kMaxKg;
  constexpr int kPix = pixels_for<kKg>();
  const int Kg = kKg > 0 ? kKg : Kg_runtime;
  const int T = pr.T(), C = pr.C;
  float acc[kPix][kWidth] = {};                    // run-time width
  Vec8 vacc[kPix][kKg > 0 ? kKg / 8 : 1] = {};     // fixed widths: registers
  const int ih0 = op * pr.stride - pr.pad;
  for (int r = 0; r < pr.R; ++r) {
    const int ih = ih0 + r;
    if (ih < 0 || ih >= pr.H) continue;  // the whole tap row is padding
    const float* row = image + std::ptrdiff_t(ih) * pr.W * C + std::ptrdiff_t(g) * T;
    for (int s = 0; s < pr.S; ++s) {
      const float* src[kPix];  // the T channels each output reads at this tap (zeros in the padding)
      for (int i = 0; i < kPix; ++i) {
        const int iw = (q0 + i) * pr.stride - pr.pad + s;
        src[i] = (i < npix && iw >= 0 && iw < pr.W) ? row + std::ptrdiff_t(iw) * C : zeros;
      }
      const float* wtap = wtg + std::ptrdiff_t(r * pr.S + s) * T * Kg;
      for (int t = 0; t < T; ++t) {
        const float* __restrict wv = wtap + std::ptrdiff_t(t) * Kg;
        if constexpr (kKg > 0) {
          static_assert(kKg % 8 == 0, "the fixed widths are whole Vec8s");
          Vec8 w8[kKg / 8];
#pragma GCC unroll 8
          for (int b = 0; b < kKg / 8; ++b) w8[b] = load8(wv + 8 * b);
#pragma GCC unroll 8
          for (int i = 0; i < kPix; ++i) {
            const float xv = src[i][t];  // broadcast
#pragma GCC unroll 8
            for (int b = 0; b < kKg / 8; ++b) vacc[i][b] += xv * w8[b];
          }
        } else {
          for (int i = 0; i < kPix; ++i) {
            const float xv = src[i][t];
            for (int j = 0; j < Kg; ++j) acc[i][j] += xv * wv[j];
          }
        }
      }
    }
  }
  for (int i = 0; i < npix; ++i) {
    float* out = out_row + std::ptrdiff_t(q0 + i) * pr.K + std::ptrdiff_t(g) * Kg;
    if constexpr (kKg > 0) {
      for (int b = 0; b < kKg / 8; ++b) store8(out + 8 * b, vacc[i][b]);
    } else {
      for (int j = 0; j < Kg; ++j) out[j] = acc[i][j];
    }
  }
}

template <int kKg> void run_width(const ConvProblem& p, const float* x, const float* wt, const float* zeros, float* y) {
  constexpr int kPix = pixels_for<kKg>();
  const int P = p.P(), Q = p.Q(), Kg = p.K_per_group();
  const std::ptrdiff_t group_weights = std::ptrdiff_t(Kg) * p.R * p.S * p.T();
#pragma omp for collapse(2) schedule(static)
  for (int n = 0; n < p.N; ++n)
    for (int op = 0; op < P; ++op) {
      const float* image = x + std::ptrdiff_t(n) * p.H * p.W * p.C;
      float* out_row = y + (std::ptrdiff_t(n) * P + op) * Q * p.K;
      for (int q0 = 0; q0 < Q; q0 += kPix)
        for (int g = 0; g < p.groups; ++g)
          group_pixels<kKg>(p, image, zeros, wt + g * group_weights, op, q0, std::min(kPix, Q - q0), g, Kg, out_row);
    }
}

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* x = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const float* w = static_cast<const float*>(a.w);  // [K, R, S, T]        KRSC, T = C/groups
  float* y = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC
  float* wt = static_cast<float*>(a.workspace);     // [groups, R, S, T, Kg] output channel innermost
  float* zeros = wt + weight_floats(p);             // [C] zeros: the padding's "pixel"
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
#pragma omp for schedule(static)
    for (int c = 0; c < p.C; ++c) zeros[c] = 0.f;
    // (implicit barrier)
    switch (Kg) {
      case 8: run_width<8>(p, x, wt, zeros, y); break;
      case 16: run_width<16>(p, x, wt, zeros, y); break;
      case 32: run_width<32>(p, x, wt, zeros, y); break;
      case 64: run_width<64>(p, x, wt, zeros, y); break;
      default: run_width<0>(p, x, wt, zeros, y); break;
    }
  }
}

const Register<ConvProblem> reg{{
    .name = "06b_grouped",
    .device = Device::cpu,
    .lesson = 6,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "grouped, narrow groups: SIMD across a group's Kg outputs, 4-8 pixels per weight vector, no padded lanes",
}};

}  // namespace
}  // namespace convlab
