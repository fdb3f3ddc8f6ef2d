// cpu/tucker_conv/12b_three_stage.cpp — lesson 12, CPU rung 12b: the whole Tucker layer.
//
// Idea: a dense 3x3 conv C → K in Tucker form is three convs (ops/tucker_conv.hpp):
// z1 = x · u_in (1x1 C → D1), z2 = core3x3(z1) (D1 → D2, TDC's scheme, rung 12a's
// loop nest from cpu/lib/tdc_core_cpu.hpp), y = z2 · u_out_t (1x1 D2 → K).
// The 1x1 stages are row-times-matrix loops over the pixels (OpenMP over pixels,
// the output channel innermost so the B rows stream contiguously).
// Plain loop it replaces: ref::tucker_conv2d.
// Cost: 2·N·H·W·(C·D1 + 9·D1·D2 + D2·K) flops; z1 and z2 in the workspace.
// Tunables: the core tile below.
// Supported: fp32, any shape.
// Run just this: build/convlab run tucker_conv/cpu/12b_three_stage
#include <algorithm>
#include <cstdint>

#include "cpu/lib/tdc_core_cpu.hpp"
#include "ops/tucker_conv.hpp"

namespace convlab {
namespace {

constexpr TdcTile kCoreTile{4, 8, 16};

// out[m, :] = a[m, :] · b for m < M: a [M, Kd], b [Kd, N], out [M, N], row-major.
void pointwise(int64_t M, int N, int Kd, const float* a, const float* b, float* out) {
#pragma omp parallel for schedule(static)
  for (int64_t m = 0; m < M; ++m) {
    float* o = out + m * N;
    std::fill_n(o, N, 0.f);
    for (int k = 0; k < Kd; ++k) {
      const float v = a[m * Kd + k];
      const float* row = b + int64_t(k) * N;
#pragma omp simd
      for (int n = 0; n < N; ++n) o[n] += v * row[n];
    }
  }
}

std::size_t workspace_bytes(const TuckerConvProblem& p) {
  return std::size_t(p.pixels()) * (p.D1 + p.D2) * sizeof(float);
}

void run(const TuckerConvProblem& p, const Args<TuckerConvProblem>& a) {
  const int64_t M = int64_t(p.pixels());
  float* z1 = static_cast<float*>(a.workspace);  // [N, H, W, D1]
  float* z2 = z1 + M * p.D1;                     // [N, H, W, D2]
  pointwise(M, p.D1, p.C, static_cast<const float*>(a.x), static_cast<const float*>(a.u_in), z1);
  cpu::tdc_core_cpu(p.core(), kCoreTile, z1, static_cast<const float*>(a.core), z2, true);
  pointwise(M, p.K, p.D2, z2, static_cast<const float*>(a.u_out_t), static_cast<float*>(a.y));
}

const Register<TuckerConvProblem> reg{{
    .name = "12b_three_stage",
    .device = Device::cpu,
    .lesson = 12,
    .supports = f32_only<TuckerConvProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "Tucker layer: 1x1 C->D1, TDC core conv D1->D2, 1x1 D2->K, through the workspace",
    .model_bytes = [](const TuckerConvProblem& p) { return p.layer_by_layer_bytes(); },
}};

}  // namespace
}  // namespace convlab
