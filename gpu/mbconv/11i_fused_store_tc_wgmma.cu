// gpu/mbconv/11i_fused_store_tc_wgmma.cu — lesson 11, GPU rung i: the store plan with 11e's pass 1
// (the depthwise on the tensor cores) and 11h's pass 2 (wgmma).
//
// Idea: the store plan's two passes are independent choices, and the two faster halves come from
// different rungs. 11e's pass 1 beats 11c's at stride 2 (its ldmatrix gathers address the strided
// taps as rows; 11c's FMA loop reads a wider window per output pair); 11h's pass 2 beats 11c's
// wherever D is not streamed from DRAM (14², 28²). 11i takes both; the gate between them, and the
// dependent launches of the gate and pass 2, are the store plan's (gpu/lib/mbconv_store_plan.cuh).
//
//   pass 1  mbconv_tile_kernel<..., kTensorDw = true>: per tile and chunk E (mma), D = bd +
//           Σ_taps E(r,s)·diag(w) (mma m16n8k8), φ, D -> dbuf, the channel sums (mma)
//   gate    se_gate_kernel: g [N, hidden]
//   pass 2  mbconv_project_wgmma_kernel: Y = (D ⊙ G)·Wp + bp (+ x), blocks of 128 rows
//
// Plain loop it replaces: ref::mbconv_block. Cost: 11c's bytes (MBConvProblem::two_pass_store_bytes());
// pass 1's tensor work as 11e's, pass 2's as 11h's. Supported: 11h's shapes (11c's whose Wp fits
// 11h's pass 2); run() throws Unsupported without an sm_90a build on a compute capability 9.0 device.
// Where it wins (stride 2) and loses (K = 5 at stride 1): lesson 11's README and NOTES.
// Workspace: 11c's (gpu/lib/mbconv_store_plan.cuh).
// Run just this: build/convlab run mbconv/gpu/11i_fused_store_tc_wgmma --shape N=128,H=28,C=40,C_out=80,stride=2,dtype=f16
#include "gpu/lib/mbconv_store_plan.cuh"
#include "gpu/lib/wgmma_probe.hpp"

namespace convlab {
namespace {

using namespace gpu::mbconv;

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("mbconv/gpu/11i_fused_store_tc_wgmma cannot run here: " + why);
  run_store_plan<true, true>(p, a);
}

const Register<MBConvProblem> reg{{
    .name = "11i_fused_store_tc_wgmma",
    .device = Device::gpu,
    .lesson = 11,
    .supports = [](const MBConvProblem& p) { return store_plan_supported(p) && wg_project_fits(p); },
    .run = run,
    .workspace_bytes = [](const MBConvProblem& p) { return StorePlanLayout(p).bytes(); },
    .idea = "the store plan from two rungs: 11e's pass 1 (depthwise on the tensor cores) and 11h's pass 2 (wgmma)",
    .model_bytes = [](const MBConvProblem& p) { return p.two_pass_store_bytes(); },
}};

}  // namespace
}  // namespace convlab
