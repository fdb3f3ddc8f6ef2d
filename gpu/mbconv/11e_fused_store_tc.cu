// gpu/mbconv/11e_fused_store_tc.cu — lesson 11, GPU rung e: 11c's store plan with pass 1's
// depthwise on the tensor cores.
//
// Idea over 11c_fused_store: the depthwise is half of pass 1's instructions on the FMA pipes
// (18 FFMA per output channel pair, with loads, conversions and its epilogue about 42
// instructions). Per tap it is a product with a diagonal matrix, D += E(r,s) · diag(w[:, r, s]),
// which mma m16n8k8 takes in one instruction per 16 pixels × 8 channels (1 of 8 products useful,
// on a pipe the FMA work no longer waits for); ldmatrix gathers E's rows per lane, so the zero
// padding and stride 2 are row addresses. The channel sums are an mma as well (an image
// indicator times D), so a chunk's epilogue is φ, one store per pair and a few movmatrix.
//
//   pass 1  per tile and chunk: E = φ(X·We + be) (mma, smem); per m tile of 16 output pixels:
//           D = bd + Σ_{r,s} E(r,s)·diag(w[:, r, s]) (4 mma m16n8k8 per tap); φ; D -> dbuf;
//           S[image] += I·D (mma)
//   gate, pass 2  as 11c (gpu/lib/mbconv_store_plan.cuh): pass 2 the stream where Wp fits a CTA
//                 whole, else the persistent GEMM (the stream's cta_part form off, as in 11c)
//
// Plain loop it replaces: ref::mbconv_block. Cost: as 11c (MBConvProblem::two_pass_store_bytes());
// the depthwise's tensor work is 8× its MACs, beside the expand's on the same pipe.
// Supported: as 11c (f16, bf16, with SE; the sizes of fused_support).
// Status: faster than 11c at stride 2, not at stride 1 (the gathers' shared wavefronts and one
// HMMA chain per channel block); the measurements, the stall profile and the next steps are in
// lessons/11-mbconv/NOTES.md.
// Run just this: build/convlab run mbconv/gpu/11e_fused_store_tc --shape N=128,H=56,C=24,dtype=f16
#include "gpu/lib/mbconv_store_plan.cuh"

namespace convlab {
namespace {

using namespace gpu::mbconv;

const Register<MBConvProblem> reg{{
    .name = "11e_fused_store_tc",
    .device = Device::gpu,
    .lesson = 11,
    .supports = store_plan_supported,
    .run = run_store_plan<true>,
    .workspace_bytes = [](const MBConvProblem& p) { return StorePlanLayout(p).bytes(); },
    .idea = "11c with pass 1's depthwise on the tensor cores: per tap an mma with a diagonal weight matrix, E gathered by ldmatrix",
    .model_bytes = [](const MBConvProblem& p) { return p.two_pass_store_bytes(); },
}};

}  // namespace
}  // namespace convlab
