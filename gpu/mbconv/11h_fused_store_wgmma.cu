// gpu/mbconv/11h_fused_store_wgmma.cu — lesson 11, GPU rung h: 11c's store plan with its pass 2
// on Hopper's warpgroup MMA.
//
// Idea over 11c_fused_store: pass 1 and the SE gate are 11c's; pass 2, the projection of the
// gated D over the whole batch, is made by two warpgroups per CTA with one wgmma m64nNk16 per
// k16 step (N = 64 or 128 columns of C_out), both operands read by the tensor cores
// from 128-byte-swizzled shared memory, the gate applied to D once per element in shared memory
// (gpu/lib/mbconv_project_wgmma.cuh). 11c's pass 2 spends per k16 step and warp an ldmatrix, four
// gate loads and four multiplies for every 16 rows, then 4 mma.sync per 32 columns.
//
//   pass 1  per tile: E, D on chip; sums -> partial; D -> dbuf [N][hidden chunk][P·Q][32]
//   gate    se_gate_kernel: g [N, hidden]
//   pass 2  mbconv_project_wgmma_kernel: Y[N·P·Q, C_out] = (D ⊙ G)·Wp + bp (+ x), blocks of 128 rows
//
// Plain loop it replaces: ref::mbconv_block. Cost: 11c's (the same DRAM bytes; pass 2's MACs
// with C_out rounded up). Supported: 11c's shapes; run() throws Unsupported without an sm_90a
// build on a compute capability 9.0 device.
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
  run_store_plan<false, true>(p, a);
}

const Register<MBConvProblem> reg{{
    .name = "11h_fused_store_wgmma",
    .device = Device::gpu,
    .lesson = 11,
    .supports = store_plan_supported,
    .run = run,
    .workspace_bytes = [](const MBConvProblem& p) { return StorePlanLayout(p).bytes(); },
    .idea = "11c's store plan with pass 2 on wgmma: two warpgroups a CTA, the gate applied to D in shared memory",
    .model_bytes = [](const MBConvProblem& p) { return p.two_pass_store_bytes(); },
}};

}  // namespace
}  // namespace convlab
