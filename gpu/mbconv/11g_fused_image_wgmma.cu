// gpu/mbconv/11g_fused_image_wgmma.cu — lesson 11, GPU rung g: 11f's one kernel per image, with the
// two 1x1 layers on Hopper's warpgroup MMA and the expand running one chunk ahead of the depthwise.
//
// Idea over 11f_fused_image: 11f spends most of its time issuing instructions — sixteen warps
// each load fragments with ldmatrix for a few mma.sync per chunk, and every phase waits for the
// slowest warp at a CTA barrier. Here a whole 64 × 64 expand chunk is C/16 wgmma instructions of
// one warpgroup, reading x and We straight from shared memory, and the project is a handful of
// wgmma per 32 hidden rows. The CTA's three warpgroups split the chunk loop into a producer and
// consumers: warpgroup 0 makes E of chunk c + 1 while warpgroups 1 and 2 run the depthwise of
// chunk c, handing E over through two slots and their mbarriers instead of stopping the whole CTA
// twice a chunk.
//
//   plain loops (ref::mbconv_block)            here, per CTA = image n
//   e = φ(x·We + be)                           warpgroup 0, per 64-channel chunk: wgmma m64n64k16 over C,
//                                              A = x (K-major), B = We[:, chunk] (MN-major, by TMA in
//                                              boxes of up to 256 k rows, two chunks ahead) -> φ -> E slot
//   d = φ(dw(e) + bd)                          warpgroups 1-2: warp = 8 channels, lane = a channel pair
//                                              over an output row segment of up to 8 pixels, each E
//                                              pair loaded once for all its taps; FMA -> D panel
//                                              (K-major, swizzled); sums; FC1's share: sums · W1 rows
//   g = sigmoid(ψ(mean(d)·W1 + b1)·W2 + b2)    FC1 in the depthwise's loop (Cr ≤ 64; else after it),
//                                              FC2 by all 384 threads (gpu/lib/mbconv_image_se.cuh);
//                                              D *= g
//   y = (d ⊙ g)·Wp + bp (+ x)                  warpgroup w: n64 blocks w and w + 3 of C_out,
//                                              wgmma m64n64k16 over hidden, Wp by TMA in stages of 64
//                                              rows, a CTA barrier per stage
//
// Cost: the block's MACs with M rounded up to 64 (the expand's and the project's m64 tile);
// DRAM: x, y and the weights once; every CTA reads all the weights from L2 (N·|weights|).
// The kernel: gpu/lib/mbconv_image_wgmma.cuh (shared with 11j, which splits an image over a cluster).
// Where it stands: lesson 11's NOTES.md (the latest session's profile and what it left).
// Contract: f16/bf16, an expand (e > 1), SE or none, K = 3 or 5, stride 1 or 2, H·W ≤ 64 and
// P·Q ≤ 64 (one m64 tile), C_out ≤ 384, any C, hidden and C_out whose layout
// (gpu/lib/mbconv_image_wgmma_layout.hpp) fits 227 KB of shared memory; an sm_90a build on an
// H100/H200-class GPU (else Unsupported). No workspace.
// Tunables: the chunk (64), the Wp stage (64 rows; 3 in flight where they fit, else 2), the E
// slots (two where they fit, else one): the layout header. TMA where We's and Wp's rows are a
// multiple of 8 elements and 16-byte aligned, else cp.async by every thread.
// Run just this: build/convlab run mbconv/gpu/11g_fused_image_wgmma --shape N=128,H=7,C=192,dtype=f16
// Its phases' times per CTA: the same with CONVLAB_PHASE_STAMPS=1 and --reps 0 (gpu/lib/phase_stamps.cuh);
// the chunk loop's steps in SM cycles: CONVLAB_CHUNK_TRACE=1 (f16, SiLU).
#include "gpu/lib/mbconv_image_wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"
#include "ops/mbconv.hpp"

namespace convlab {
namespace {

using namespace gpu;
using namespace gpu::mbconv;
using namespace gpu::mbconv::image_wgmma;

bool supports(const MBConvProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && (p.kernel == 3 || p.kernel == 5) &&
         (p.stride == 1 || p.stride == 2) && p.N <= (1 << 30) && WgImageLayout(p).fits();
}

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("mbconv/gpu/11g_fused_image_wgmma cannot run here: " + why);
  run_image_wgmma<false>(p, a, 1, "11g");
}

const Register<MBConvProblem> reg{{
    .name = "11g_fused_image_wgmma",
    .device = Device::gpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .idea = "11f's one kernel per image with the 1x1 layers on wgmma and the expand warpgroup one chunk ahead of the depthwise",
    .model_bytes = [](const MBConvProblem& p) { return p.min_bytes(); },
}};

}  // namespace
}  // namespace convlab
