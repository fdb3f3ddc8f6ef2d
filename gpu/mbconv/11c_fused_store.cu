// gpu/mbconv/11c_fused_store.cu — lesson 11, GPU rung c: two fused passes, storing D instead of recomputing it.
//
// Idea over 11b_fused_two_pass: trade the second expand + depthwise for DRAM
// bytes. Pass 1 (Stage::store) writes the depthwise output D in the
// problem's 16-bit type beside its channel sums; pass 2 reads D back, gates
// it and projects, as one GEMM over the whole batch:
//
//   pass 1  per tile: E, D on chip; sums -> partial; D -> dbuf [N][hidden chunk][P·Q][32]   (2 bytes per element);
//           E's rows padded with zero columns where that pays (pad_e_pays: Q ≤ 14, K = 5 or stride 2),
//           and E padded with zero rows too where the taller E keeps two CTAs an SM (pad_rows_fit),
//           so that no depthwise window tests its columns, nor its rows
//   gate    se_gate_kernel: g [N, hidden], written in the 16-bit type with rows of dbuf_live(hidden)
//   pass 2  Y[N·P·Q, C_out] = (D ⊙ G)·Wp over every pixel of the batch, G = the gate of each row's
//           image, applied to D's fragments; y = Y + bp (+ x). Where Wp fits a CTA (56², 28², C = 80
//           @ 14²), a stream of warp tasks of 16 rows that load D straight into their mma fragments
//           (mbconv_project_stream_kernel); where it does not (C = 112 @ 14², 7²) the same stream
//           with one column part of Wp a CTA (run_store_plan's kStreamCtaPart), at three CTAs an SM
//           where that keeps the parts as wide (kStreamThree: stream_three_pays); past hidden 7200
//           the persistent GEMM (mbconv_project_kernel)
//
// Plain loop it replaces: ref::mbconv_block. Cost: expand and depthwise once,
// DRAM + 2·|D|·2 bytes (MBConvProblem::two_pass_store_bytes()). Which of 11b
// and 11c wins depends on whether the recompute's MACs or the stored D's bytes
// are dearer at the shape: lesson 11's NOTES.md measures it.
// Supported: f16, bf16, with SE; the sizes of fused_support.
// Workspace: dbuf, the per-tile sums, the gates, and Wp padded to rows of 16-byte pieces where needed
// (gpu/lib/mbconv_store_plan.cuh, shared with 11e).
// Run just this: build/convlab run mbconv/gpu/11c_fused_store --shape N=128,H=56,C=24,dtype=f16
#include "gpu/lib/mbconv_store_plan.cuh"

namespace convlab {
namespace {

using namespace gpu::mbconv;

const Register<MBConvProblem> reg{{
    .name = "11c_fused_store",
    .device = Device::gpu,
    .lesson = 11,
    .supports = store_plan_supported,
    // run_store_plan's flags in order: depthwise on the FMA pipes (not the tensor cores), pass 2 on
    // mma.sync (not wgmma), dependent launches, the stream's cta_part form, padded E where it pays,
    // the stream at three CTAs an SM where it pays, zero rows in padded E where they fit
    // (gpu/lib/mbconv_store_plan.cuh)
    .run = run_store_plan<false, false, true, true, true, true, true>,
    .workspace_bytes = [](const MBConvProblem& p) { return StorePlanLayout(p).bytes(); },
    .idea = "two fused passes; pass 1 stores the depthwise output in 16 bits, pass 2 is one GEMM over the batch that gates it and projects",
    .model_bytes = [](const MBConvProblem& p) { return p.two_pass_store_bytes(); },
}};

}  // namespace
}  // namespace convlab
