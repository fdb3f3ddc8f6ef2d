// cpu/mbconv/11a_layer_by_layer.cpp — lesson 11, CPU rung a: the MBConv block one layer at a time.
//
// The block as a framework runs it: every layer a call of the suite's own
// rung for it, every activation between them a full tensor in memory.
//
//   e  = gemm/cpu/03f_openmp(x, We)            [N·H·W, hidden]   then one pass: + be, φ   (absent when e = 1)
//   d  = conv2d/cpu/06a_depthwise(e, Wd)       [N, P, Q, hidden] then one pass: + bd, φ
//   g  = SE per image: mean of d, FC, ψ, FC, sigmoid            [N, hidden]   (one pass over d)
//   d ⊙= g                                     one more pass over d
//   y  = gemm/cpu/03f_openmp(d, Wp)            [N·P·Q, C_out]    then one pass: + bp (+ x)
//
// Plain loop it replaces: ref::mbconv_block. Cost: the block's MACs plus
// e and d round-tripping memory several times:
// MBConvProblem::suite_layer_by_layer_bytes(). At N=32 56x56 C=24 e=6 the
// expanded tensor is 57.8 MB: every pass over it leaves the caches (at N=8,
// 14.5 MB, e and d together still fit a 32 MiB L3).
// 11b_fused_two_pass keeps e and d per band of rows in cache.
// Supported: f32, any sizes. Workspace: e, d and the called rungs' scratch.
// Run just this: build/convlab run mbconv/cpu/11a_layer_by_layer --shape N=32,H=56,C=24
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "cpu/lib/mbconv_cpu.hpp"
#include "ops/conv2d.hpp"
#include "ops/gemm.hpp"

namespace convlab {
namespace {

using namespace cpu_mbconv;

GemmProblem expand_layer(const MBConvProblem& p) { return {int(p.input_pixels()), p.hidden(), p.C, DType::f32}; }
GemmProblem project_layer(const MBConvProblem& p) { return {int(p.output_pixels()), p.C_out, p.hidden(), DType::f32}; }
ConvProblem depthwise_layer(const MBConvProblem& p) {
  ConvProblem c;
  c.N = p.N, c.H = p.H, c.W = p.W, c.C = p.hidden(), c.K = p.hidden(), c.R = p.kernel, c.S = p.kernel;
  c.stride = p.stride, c.pad = p.kernel / 2, c.groups = p.hidden(), c.dtype = DType::f32;
  return c;
}
const Variant<GemmProblem>& gemm_rung() { return required_variant<GemmProblem>("gemm", "03f_openmp"); }
const Variant<ConvProblem>& depthwise_rung() { return required_variant<ConvProblem>("conv2d", "06a_depthwise"); }


// Workspace: [ e | d | sums (double) | gates | z | the called rungs' scratch ], each 64-byte aligned.
struct Layout {
  std::size_t e, d, sums, gates, z, scratch;  // floats (sums: doubles) ..., bytes
  explicit Layout(const MBConvProblem& p) {
    const auto up = [](double f) { return (std::size_t(f) + 15) / 16 * 16; };
    e = up(p.e_elems());
    d = up(p.d_elems());
    sums = up(2.0 * p.pooled_elems());  // in floats: one double is two
    gates = up(p.pooled_elems());
    z = up(p.se_channels());
    scratch = std::max({workspace_of(depthwise_rung(), depthwise_layer(p)), workspace_of(gemm_rung(), project_layer(p)),
                        p.has_expand() ? workspace_of(gemm_rung(), expand_layer(p)) : std::size_t(0)});
  }
  std::size_t bytes() const { return (e + d + sums + gates + z) * sizeof(float) + scratch; }
};

bool supports(const MBConvProblem& p) {
  return p.dtype == DType::f32 && p.input_pixels() < 2147483647.0 && p.output_pixels() < 2147483647.0;
}

std::size_t workspace_bytes(const MBConvProblem& p) { return Layout(p).bytes(); }

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const Layout l(p);
  float* e = static_cast<float*>(a.workspace);
  float* d = e + l.e;
  double* sums = reinterpret_cast<double*>(d + l.d);
  float* gates = reinterpret_cast<float*>(sums) + l.sums;
  float* z = gates + l.gates;
  void* scratch = z + l.z;
  const auto* x = static_cast<const float*>(a.x);
  float* y = static_cast<float*>(a.y);
  const int Hd = p.hidden();
  const int64_t out_pixels = int64_t(p.output_pixels()), image_pixels = int64_t(p.P()) * p.Q();

  // 1. Expand and its bias + φ pass.
  const float* dw_in = x;
  if (p.has_expand()) {
    const GemmProblem g = expand_layer(p);
    gemm_rung().run(g, {a.x, a.expand_w, e, scratch});
    const auto* be = static_cast<const float*>(a.expand_b);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(p.input_pixels()); ++i) bias_activate(1, Hd, e + i * Hd, be, p.activation);
    dw_in = e;
  }
  // 2. Depthwise and its bias + φ pass.
  const ConvProblem c = depthwise_layer(p);
  depthwise_rung().run(c, {dw_in, a.dw_w, d, scratch});
  const auto* bd = static_cast<const float*>(a.dw_b);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < out_pixels; ++i) bias_activate(1, Hd, d + i * Hd, bd, p.activation);
  // 3. SE: a pass that sums d per image and channel, the gate, a pass that scales d.
  if (p.has_se()) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < p.N; ++n) {
      double* s = sums + std::ptrdiff_t(n) * Hd;
      std::fill(s, s + Hd, 0.0);
      for (int64_t i = 0; i < image_pixels; ++i) {
        const float* row = d + (n * image_pixels + i) * Hd;
        for (int j = 0; j < Hd; ++j) s[j] += row[j];
      }
    }
    for (int n = 0; n < p.N; ++n)
      se_gate(p, sums + std::ptrdiff_t(n) * Hd, static_cast<const float*>(a.se1_w), static_cast<const float*>(a.se1_b),
              static_cast<const float*>(a.se2_w), static_cast<const float*>(a.se2_b), z, gates + std::ptrdiff_t(n) * Hd);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < out_pixels; ++i) {
      const float* g = gates + (i / image_pixels) * Hd;
      float* row = d + i * Hd;
#pragma omp simd
      for (int j = 0; j < Hd; ++j) row[j] *= g[j];
    }
  }
  // 4. Project, then its bias (+ residual) pass.
  const GemmProblem g = project_layer(p);
  gemm_rung().run(g, {d, a.project_w, y, scratch});
  const auto* bp = static_cast<const float*>(a.project_b);
  const bool residual = p.has_residual();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < out_pixels; ++i) {
    float* row = y + i * p.C_out;
    const float* xr = x + i * p.C;  // the residual exists only when C_out == C and P, Q == H, W
    for (int o = 0; o < p.C_out; ++o) row[o] += bp[o] + (residual ? xr[o] : 0.0f);
  }
}

const Register<MBConvProblem> reg{{
    .name = "11a_layer_by_layer",
    .device = Device::cpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "the suite's GEMM and depthwise rungs one after another, with bias/φ, pool, gate and residual passes; "
            "e and d in memory",
    .model_bytes = [](const MBConvProblem& p) { return p.suite_layer_by_layer_bytes(); },
}};

}  // namespace
}  // namespace convlab
