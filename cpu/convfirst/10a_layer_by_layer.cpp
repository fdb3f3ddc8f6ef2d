// cpu/convfirst/10a_layer_by_layer.cpp — lesson 10, CPU rung a: the ConvFirst block one layer at a time.
//
// The first rung of the block lesson is the block as a framework runs it
// (Fig. 7a): every layer is a call of the suite's own rung for it, and every
// activation between them is a full tensor in memory.
//
//   t  = conv2d/cpu/06b_grouped(x)            [N, H, W, C]        the grouped 3x3 conv (lesson 06)
//   t += conv_b                              one pass over t
//   (stride 2) t' = blurpool(t)              [N, P, Q, C]
//   y  = ffn/cpu/08a_layer_by_layer(t or t')  [N·P·Q, C_out]      lesson 08: H [N·P·Q, hidden] in memory
//   stride 1: y += x                         the residual, one more pass
//   stride 2: s = blurpool(x); y += s  or  y += gemm/cpu/03f_openmp(s, Wsc) + bsc
//
// Plain loop it replaces: ref::convfirst_block, one pixel at a time.
// Cost: the block's MACs plus, in memory, t (C per pixel), the hidden
// tensor (α·C per pixel, four passes inside the FFN rung) and the passes
// above: ConvFirstProblem::suite_layer_by_layer_bytes(). Once H no longer fits
// the caches (N=16 56x56 C=64 α=4: 51 MB against a 32 MB L3) every pass over it is DRAM
// traffic; 10b_fused keeps t and H in cache.
// Supported: f32, any sizes. Workspace: t (and t', s, s·Wsc at stride 2) plus
// the largest workspace of the rungs it calls.
// Run just this: build/convlab run convfirst/cpu/10a_layer_by_layer --shape N=16,H=56,C=64
#include <algorithm>
#include <cstddef>

#include "ops/conv2d.hpp"
#include "ops/ffn.hpp"
#include "ops/gemm.hpp"
#include "cpu/lib/convfirst_cpu.hpp"

namespace convlab {
namespace {

using namespace cpu_convfirst;

// The layers as the suite's problems.
ConvProblem conv_layer(const ConvFirstProblem& p) {
  ConvProblem c;
  c.N = p.N, c.H = p.H, c.W = p.W, c.C = p.C, c.K = p.C, c.R = 3, c.S = 3, c.stride = 1, c.pad = 1;
  c.groups = p.groups(), c.dtype = DType::f32;
  return c;
}
FfnProblem ffn_layer(const ConvFirstProblem& p) {
  return {int(p.output_pixels()), p.C, p.hidden, p.C_out, p.activation, DType::f32};
}
GemmProblem shortcut_layer(const ConvFirstProblem& p) { return {int(p.output_pixels()), p.C_out, p.C, DType::f32}; }

// The grouped rung takes groups > 1; a block of one group (C = 8) is a dense conv.
const Variant<ConvProblem>& conv_rung(const ConvProblem& c) {
  const Variant<ConvProblem>& grouped = required_variant<ConvProblem>("conv2d", "06b_grouped");
  return grouped.supports(c) ? grouped : required_variant<ConvProblem>("conv2d", "01b_openmp");
}
const Variant<FfnProblem>& ffn_rung() { return required_variant<FfnProblem>("ffn", "08a_layer_by_layer"); }
const Variant<GemmProblem>& gemm_rung() { return required_variant<GemmProblem>("gemm", "03f_openmp"); }


// Workspace: [ t | t' | s | s·Wsc | the called rungs' scratch ], each 64-byte aligned.
struct Layout {
  std::size_t t, tp, s, sc, scratch;  // floats, floats, floats, floats, bytes
  explicit Layout(const ConvFirstProblem& p) {
    const auto up = [](double f) { return (std::size_t(f) + 15) / 16 * 16; };
    t = up(p.t_elems());
    tp = p.stride == 2 ? up(p.output_pixels() * p.C) : 0;
    s = tp;
    sc = p.has_projection() ? up(p.y_elems()) : 0;
    const ConvProblem c = conv_layer(p);
    scratch = std::max(workspace_of(conv_rung(c), c), workspace_of(ffn_rung(), ffn_layer(p)));
    if (p.has_projection()) scratch = std::max(scratch, workspace_of(gemm_rung(), shortcut_layer(p)));
  }
  std::size_t bytes() const { return (t + tp + s + sc) * sizeof(float) + scratch; }
};

bool supports(const ConvFirstProblem& p) {
  return p.dtype == DType::f32 && p.group_width == kGroupWidth && p.output_pixels() < 2147483647.0;
}

std::size_t workspace_bytes(const ConvFirstProblem& p) { return Layout(p).bytes(); }

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a) {
  const Layout l(p);
  float* t = static_cast<float*>(a.workspace);  // [N, H, W, C]
  float* tp = t + l.t;                          // [N, P, Q, C]   stride 2: blurpool(t)
  float* s = tp + l.tp;                         // [N, P, Q, C]   stride 2: blurpool(x)
  float* sc = s + l.s;                          // [N·P·Q, C_out] s·Wsc
  void* scratch = sc + l.sc;
  const auto* x = static_cast<const float*>(a.x);
  float* y = static_cast<float*>(a.y);
  const int64_t pixels = int64_t(p.output_pixels());

  const ConvProblem c = conv_layer(p);
  conv_rung(c).run(c, {a.x, a.conv_w, t, scratch});
  add_rows(int64_t(p.input_pixels()), p.C, t, static_cast<const float*>(a.conv_b), nullptr);

  const float* ffn_in = t;
  if (p.stride == 2) {
    blurpool(p.N, p.H, p.W, p.C, t, tp);
    ffn_in = tp;
  }
  const FfnProblem f = ffn_layer(p);
  ffn_rung().run(f, {ffn_in, a.u, a.a, a.v, a.b, y, scratch});

  if (p.stride == 1) {
    add_rows(pixels, p.C_out, y, nullptr, x);
    return;
  }
  blurpool(p.N, p.H, p.W, p.C, x, s);
  if (!p.has_projection()) {
    add_rows(pixels, p.C_out, y, nullptr, s);
    return;
  }
  const GemmProblem g = shortcut_layer(p);
  gemm_rung().run(g, {s, a.shortcut_w, sc, scratch});
  add_rows(pixels, p.C_out, y, static_cast<const float*>(a.shortcut_b), sc);
}

const Register<ConvFirstProblem> reg{{
    .name = "10a_layer_by_layer",
    .device = Device::cpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "Fig. 7a: the suite's grouped-conv and FFN rungs one after another; t and the hidden tensor in memory",
    .model_bytes = [](const ConvFirstProblem& p) { return p.suite_layer_by_layer_bytes(); },
}};

}  // namespace
}  // namespace convlab
