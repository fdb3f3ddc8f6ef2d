// cpu/conv2d/01b_openmp.cpp — lesson 01, rung 01b: the same loops on every core.
//
// Idea over 01a_seven_loop: the N·P·Q output pixels are independent, so the
// three outer loops are fused into one and shared among OpenMP threads; each
// thread writes a disjoint set of outputs, so no synchronisation is needed.
// The inner loops are unchanged except for one thing: the K accumulators of a
// pixel are kept in a small array so the x values of one (r, s) tap are
// loaded once and reused for all K output channels — the first taste of the
// data reuse that GEMM blocking (lesson 03) makes systematic.
// Cost: the same multiply-adds; speed-up at most the core count, less where
// memory bandwidth runs out first.
// Run just this: build/convlab run conv2d/cpu/01b_openmp
#include <omp.h>

#include <algorithm>

#include <vector>

#include "ops/conv2d.hpp"

namespace convlab {
namespace {

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* x = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const float* w = static_cast<const float*>(a.w);  // [K, R, S, C/groups] KRSC
  float* y = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC
  const int P = p.P(), Q = p.Q(), T = p.T(), Kg = p.K_per_group();
  const int64_t pixels = int64_t(p.N) * P * Q;

#pragma omp parallel
  {
    std::vector<float> acc(p.K);  // one pixel's K outputs, private to the thread
#pragma omp for schedule(static)
    for (int64_t pix = 0; pix < pixels; ++pix) {
      const int n = int(pix / (int64_t(P) * Q));
      const int oh = int(pix / Q % P), ow = int(pix % Q);
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int r = 0; r < p.R; ++r)
        for (int s = 0; s < p.S; ++s) {
          const int ih = oh * p.stride + r - p.pad, iw = ow * p.stride + s - p.pad;
          if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
          const float* xp = x + ((int64_t(n) * p.H + ih) * p.W + iw) * p.C;
          // Plain form: for k: for t: acc[k] += w[k,r,s,t] * x[n,ih,iw,g(k)·T+t].
          // The x row of this tap (C floats) stays in L1 across all K channels.
          for (int k = 0; k < p.K; ++k) {
            const float* wp = w + ((int64_t(k) * p.R + r) * p.S + s) * T;
            const float* xg = xp + (k / Kg) * T;
            float sum = 0.f;
            for (int t = 0; t < T; ++t) sum += wp[t] * xg[t];
            acc[k] += sum;
          }
        }
      std::copy(acc.begin(), acc.end(), y + pix * p.K);
    }
  }
}

const Register<ConvProblem> reg{{
    .name = "01b_openmp",
    .device = Device::cpu,
    .lesson = 1,
    .supports = f32_only<ConvProblem>,
    .run = run,
    .threads = Threads::all,
    .idea = "output pixels shared among OpenMP threads; one x row reused for all K",
}};

}  // namespace
}  // namespace convlab
