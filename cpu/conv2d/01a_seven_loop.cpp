// cpu/conv2d/01a_seven_loop.cpp — lesson 01, rung 01a: the definition, as loops.
//
// Idea: Eq. 15/18 of Lavin's paper written out literally. Seven nested loops —
// four over the output (n, p, q, k) and three over the reduction (r, s, t) —
// and one multiply-add in the middle. Nothing is reused on purpose: every
// weight is reloaded for every output pixel, so the speed is set by how well
// the caches happen to catch those reloads, not by the arithmetic units.
// Cost: N·P·Q·K·T·R·S multiply-adds, one thread, no SIMD beyond what the
// compiler finds on its own.
// Run just this: build/convlab run conv2d/cpu/01a_seven_loop
#include "ops/conv2d.hpp"

namespace convlab {
namespace {

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* x = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const float* w = static_cast<const float*>(a.w);  // [K, R, S, C/groups] KRSC
  float* y = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC
  const int P = p.P(), Q = p.Q(), T = p.T(), Kg = p.K_per_group();

  for (int n = 0; n < p.N; ++n)                  // 1: images
    for (int oh = 0; oh < P; ++oh)               // 2: output rows
      for (int ow = 0; ow < Q; ++ow)             // 3: output columns
        for (int k = 0; k < p.K; ++k) {          // 4: output channels
          const int c0 = (k / Kg) * T;           //    first input channel of k's group
          float acc = 0.f;
          for (int r = 0; r < p.R; ++r)          // 5: filter rows
            for (int s = 0; s < p.S; ++s) {      // 6: filter columns
              const int ih = oh * p.stride + r - p.pad;
              const int iw = ow * p.stride + s - p.pad;
              if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;  // zero padding
              const float* xp = x + ((int64_t(n) * p.H + ih) * p.W + iw) * p.C + c0;
              const float* wp = w + ((int64_t(k) * p.R + r) * p.S + s) * T;
              for (int t = 0; t < T; ++t)        // 7: input channels of the group
                acc += wp[t] * xp[t];
            }
          y[((int64_t(n) * P + oh) * Q + ow) * p.K + k] = acc;
        }
}

const Register<ConvProblem> reg{{
    .name = "01a_seven_loop",
    .device = Device::cpu,
    .lesson = 1,
    .supports = f32_only<ConvProblem>,
    .run = run,
    .threads = Threads::single,
    .idea = "Eq. 15 as seven nested loops, one thread",
}};

}  // namespace
}  // namespace convlab
