// gpu/mbconv/11c_fused_store.cu — lesson 11, GPU rung c: two fused passes, storing D instead of recomputing it.
//
// Idea over 11b_fused_two_pass: trade the second expand + depthwise for DRAM
// bytes. Pass 1 (Stage::store) writes the depthwise output D in the
// problem's 16-bit type beside its channel sums; pass 2
// (Stage::project_stored) reads D back, gates it and projects:
//
//   pass 1  per tile: E, D on chip; sums -> partial; D -> dbuf [N][hidden chunk][P·Q][32]   (2 bytes per element)
//   gate    se_gate_kernel, then (C_out ≤ P·Q) gated_weights_kernel: Wg[n] = diag(g_n)·Wp  [N, hidden, C_out]
//   pass 2  per tile: D from dbuf, Y = D·Wg[n] (mma), y = Y + bp + x   (the gate rides on the weights)
//           or, where Wg[n] would outweigh image n's D (C_out > P·Q: small images), Y = (D ⊙ g)·Wp
//           with ⊙ g applied to D's fragments (lessons/11-mbconv/NOTES.md measures both)
//
// Plain loop it replaces: ref::mbconv_block. Cost: expand and depthwise once,
// DRAM + 2·|D|·2 bytes (MBConvProblem::two_pass_store_bytes()). Which of 11b
// and 11c wins depends on whether the recompute's MACs or the stored D's bytes
// are dearer at the shape: lesson 11's NOTES.md measures it.
// Supported: f16, bf16, with SE; the sizes of fused_support.
// Workspace: dbuf, the per-tile sums, the gates and the gated weights.
// Run just this: build/convlab run mbconv/gpu/11c_fused_store --shape N=128,H=56,C=24,dtype=f16
#include "gpu/lib/mbconv_fused.cuh"
#include "gpu/lib/mbconv_layers.cuh"
#include "ops/mbconv.hpp"

namespace convlab {
namespace {

using namespace gpu::mbconv;

bool supports(const MBConvProblem& p) { return p.has_se() && fused_support(p); }

// The gate rides on per-image weights when they are no larger than the image's D.
bool fold_gate(const MBConvProblem& p) { return std::int64_t(p.C_out) <= std::int64_t(p.P()) * p.Q(); }

struct Layout {
  std::size_t partial, gate, dbuf, wg;  // bytes
  explicit Layout(const MBConvProblem& p) {
    const Tile t = choose_tile(p, Stage::store);  // pass 1's tiles: one row of sums each
    const auto up = [](std::size_t b) { return (b + 255) / 256 * 256; };
    partial = up(std::size_t(p.N) * t.tiles * p.hidden() * sizeof(float));
    gate = up(std::size_t(p.N) * p.hidden() * sizeof(float));
    dbuf = up(dbuf_elems(p) * 2);
    wg = fold_gate(p) ? up(std::size_t(p.N) * p.hidden() * p.C_out * 2) : 0;
  }
  std::size_t bytes() const { return partial + gate + dbuf + wg; }
};

std::size_t workspace_bytes(const MBConvProblem& p) { return Layout(p).bytes(); }

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const Tile t = choose_tile(p, Stage::store);
  const Layout l(p);
  unsigned char* base = static_cast<unsigned char*>(a.workspace);
  float* partial = reinterpret_cast<float*>(base);
  float* gate = reinterpret_cast<float*>(base + l.partial);
  void* dbuf = base + l.partial + l.gate;
  void* wg = base + l.partial + l.gate + l.dbuf;
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    launch_stage<E, Stage::store>(p, a, nullptr, partial, dbuf);
    se_gate<E>(p, t.tiles, partial, a.se1_w, a.se1_b, a.se2_w, a.se2_b, gate);
    if (fold_gate(p)) {
      gated_weights<E>(p, a.project_w, gate, wg);
      launch_stage<E, Stage::project_stored>(p, a, nullptr, nullptr, dbuf, wg);
    } else {
      launch_stage<E, Stage::project_stored>(p, a, gate, nullptr, dbuf);
    }
  });
}

const Register<MBConvProblem> reg{{
    .name = "11c_fused_store",
    .device = Device::gpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "two fused passes; pass 1 stores the depthwise output in 16 bits, pass 2 reads it, gates, projects",
    .model_bytes = [](const MBConvProblem& p) { return p.two_pass_store_bytes(); },
}};

}  // namespace
}  // namespace convlab
