// gpu/mbconv/11b_fused_two_pass.cu — lesson 11, GPU rung b: the block in two fused passes, recomputing.
//
// Idea over 11a_layer_by_layer: nothing between the layers touches DRAM. The
// SE's mean over the whole image is the one step a tile cannot finish alone,
// so the block runs as two passes of the same tile kernel
// (gpu/lib/mbconv_fused.cuh), with the gate between them:
//
//   pass 1  (Stage::sums)    per tile: x tile -> E = φ(x·We + be) (mma) -> D = φ(dw(E) + bd), on chip;
//                            the tile's channel sums of D -> partial[n, tile, :]; D is dropped
//   gate    se_gate_kernel   per image: Σ_tiles partial (in tile order), mean, FC, ψ, FC, sigmoid -> g
//   pass 2  (Stage::project) per tile: E and D again, D ⊙ g, Y = (D ⊙ g)·Wp (mma), y = Y + bp + x, stored once
//
// Plain loop it replaces: ref::mbconv_block. Cost: the expand and depthwise
// twice (plus each tile's halo rows: (rows − 1 + K)/rows of the work), the
// project once; DRAM: x twice, y once, the sums and gates (KB):
// MBConvProblem::two_pass_recompute_bytes().
// Tunables: in gpu/lib/mbconv_tile.hpp (kChunk, kRun, kTargetPixels, kMaxAccTiles).
// Supported: f16, bf16, with SE; sizes where a tile of one output row fits (fused_support).
// Workspace: the per-tile sums [N, tiles, hidden] and the gates [N, hidden], fp32.
// Run just this: build/convlab run mbconv/gpu/11b_fused_two_pass --shape N=128,H=56,C=24,dtype=f16
#include "gpu/lib/mbconv_fused.cuh"
#include "gpu/lib/mbconv_layers.cuh"
#include "ops/mbconv.hpp"

namespace convlab {
namespace {

using namespace gpu::mbconv;

bool supports(const MBConvProblem& p) { return p.has_se() && se_gate_fits(p) && fused_support(p); }

std::size_t workspace_bytes(const MBConvProblem& p) {
  const Tile t = choose_tile(p, Stage::sums);
  return (std::size_t(p.N) * t.tiles * p.hidden() + std::size_t(p.N) * p.hidden()) * sizeof(float) + 256;
}

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const Tile t = choose_tile(p, Stage::sums);  // pass 1's tiles: one row of sums each
  float* partial = static_cast<float*>(a.workspace);
  float* gate = partial + std::size_t(p.N) * t.tiles * p.hidden();
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    launch_stage<E, Stage::sums>(p, a, nullptr, partial, nullptr);
    se_gate<E>(p, t.tiles, partial, a.se1_w, a.se1_b, a.se2_w, a.se2_b, gate);
    launch_stage<E, Stage::project>(p, a, gate, nullptr, nullptr);
  });
}

const Register<MBConvProblem> reg{{
    .name = "11b_fused_two_pass",
    .device = Device::gpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "two fused passes (mma.sync 1x1 layers, depthwise on chip): pass 1 channel sums per tile, SE gate, pass 2 "
            "recomputes, gates, projects, stores y once",
    .model_bytes = [](const MBConvProblem& p) { return p.two_pass_recompute_bytes(); },
}};

}  // namespace
}  // namespace convlab
