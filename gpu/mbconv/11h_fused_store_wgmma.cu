// gpu/mbconv/11h_fused_store_wgmma.cu — lesson 11, GPU rung h: 11c's store plan with its pass 2
// on Hopper's warpgroup MMA.
//
// Idea over 11c_fused_store: pass 1 (E padded where pad_e_pays) and the SE gate are 11c's; pass 2,
// the projection of the gated D over the whole batch, is made by two warpgroups per CTA with one
// wgmma m64nNk16 per k16 step (N = 64 or 128 columns of C_out): Wp held in shared memory for the
// CTA's life, D's rows streamed through a cp.async ring, gated in registers
// (gpu/lib/mbconv_project_wgmma.cuh).
// 11c's pass 2 issues 4 mma.sync per 16 rows, 32 columns and k16 step, and streams Wp with D.
// Where it wins and loses (faster at 14², slower at 56²): lesson 11's README and NOTES.
//
//   pass 1  per tile: E, D on chip; sums -> partial; D -> dbuf [N][hidden chunk][P·Q][32]
//   gate    se_gate_kernel: g [N, hidden]
//   pass 2  mbconv_project_wgmma_kernel: Y[N·P·Q, C_out] = (D ⊙ G)·Wp + bp (+ x), blocks of 128 rows
//
// Plain loop it replaces: ref::mbconv_block. Cost: 11c's (the same DRAM bytes; pass 2's MACs
// with C_out rounded up). Supported: 11c's shapes whose Wp (hidden rounded up to 64 rows, 64 or
// 128 columns) fits shared memory beside two stages of D; run() throws Unsupported without an
// sm_90a build on a compute capability 9.0 device.
// Workspace: 11c's (gpu/lib/mbconv_store_plan.cuh).
// Run just this: build/convlab run mbconv/gpu/11h_fused_store_wgmma --shape N=128,H=14,C=112,dtype=f16
#include "gpu/lib/mbconv_store_plan.cuh"
#include "gpu/lib/wgmma_probe.hpp"

namespace convlab {
namespace {

using namespace gpu::mbconv;

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("mbconv/gpu/11h_fused_store_wgmma cannot run here: " + why);
  run_store_plan<false, true, true, false, true>(p, a);  // wgmma pass 2, padded E where it pays
}

const Register<MBConvProblem> reg{{
    .name = "11h_fused_store_wgmma",
    .device = Device::gpu,
    .lesson = 11,
    .supports = [](const MBConvProblem& p) { return store_plan_supported(p) && wg_project_fits(p); },
    .run = run,
    .workspace_bytes = [](const MBConvProblem& p) { return StorePlanLayout(p).bytes(); },
    .idea = "11c's store plan with pass 2 on wgmma: two warpgroups a CTA, the gate applied to D in shared memory",
    .model_bytes = [](const MBConvProblem& p) { return p.two_pass_store_bytes(); },
}};

}  // namespace
}  // namespace convlab
