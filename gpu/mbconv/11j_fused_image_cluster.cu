// gpu/mbconv/11j_fused_image_cluster.cu — lesson 11, GPU rung j: 11g's one kernel per image for
// images too large for one CTA, split over a cluster of two CTAs by bands of output rows.
//
// Idea over 11g_fused_image_wgmma: 11g keeps a whole image's D (every hidden channel of every
// output pixel) in one CTA's shared memory, so that the SE's pool, gate and the project follow
// the depthwise with no second pass through DRAM — but only up to 64 pixels. At 14 × 14 a CTA
// cannot hold the image's D (196 × 480 × 2 bytes = 188 KB at C = 80), yet half of it fits. Here
// the two CTAs of a cluster each make one band of output rows (7 of 14), expanding its input
// rows with their halo (one recomputed row at K = 3: 8 of 14 rows each); the SE's average pool
// is the only thing an image's bands share: each CTA's depthwise warps leave their partial FC1
// sums in shared memory, and after one cluster barrier every CTA reads all of the cluster's
// partials through distributed shared memory and computes the same gate. Everything else is
// 11g's chunk loop and project, with two m64 tiles a chunk.
//
//   plain loops (ref::mbconv_block)            here, per CTA = band k of image n (cluster n)
//   e = φ(x·We + be)                           warpgroup 0: the band's input rows (≤ 128 pixels, two
//                                              m64 tiles a chunk), as in 11g
//   d = φ(dw(e) + bd)                          warpgroups 1-2: the band's output rows, as in 11g
//   g = sigmoid(ψ(mean(d)·W1 + b1)·W2 + b2)    FC1's partials per band; cluster barrier; each CTA adds
//                                              every band's partials (rank order) -> z -> FC2 -> gate
//   y = (d ⊙ g)·Wp + bp (+ x)                  the band's pixels: (n64 block, m64 tile) tasks over the
//                                              three warpgroups
//
// Cost: the block's MACs with each band's M rounded up to 128, plus the halo rows' expand (at
// 14², K = 3: 16 of 14 rows, +14 %); DRAM: x (the halo rows twice, from L2), y and the weights
// once; every CTA reads all the weights from L2 (2N·|weights|); between the CTAs of a cluster
// 8·64·4 bytes of FC1 partials each way.
// Where it stands: lesson 11's NOTES.md.
// Contract: f16/bf16, an expand (e > 1), SE with Cr ≤ 64 (FC1 inside the chunk loop) or none,
// K = 3 or 5, stride 1 or 2, P ≥ 2; each band's input rows (halo included) and output rows at
// most 128 pixels; C_out ≤ 192; a layout (gpu/lib/mbconv_image_wgmma_layout.hpp, split 2) that
// fits 227 KB of shared memory; an sm_90a build on an H100/H200-class GPU (else Unsupported).
// No workspace.
// Tunables: the split (2: a cluster of two); the depthwise's row segment at K = 3 (16 pixels: a
// 14-pixel row in one); the Wp ring (four stages where they fit); 11g's (the layout header).
// Run just this: build/convlab run mbconv/gpu/11j_fused_image_cluster --shape N=128,H=14,C=80,dtype=f16
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

constexpr int kSplit = 2;  // CTAs an image: a cluster of two

bool supports(const MBConvProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && (p.kernel == 3 || p.kernel == 5) &&
         (p.stride == 1 || p.stride == 2) && p.N <= (1 << 28) && (!p.has_se() || p.se_channels() <= kWgLoopFc1Max) &&
         WgImageLayout(p, kSplit).fits();
}

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("mbconv/gpu/11j_fused_image_cluster cannot run here: " + why);
  run_image_wgmma<true>(p, a, kSplit, "11j");
}

const Register<MBConvProblem> reg{{
    .name = "11j_fused_image_cluster",
    .device = Device::gpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .idea = "11g's one kernel per image split over a cluster of two CTAs by bands of output rows, the SE's "
            "partials exchanged through distributed shared memory",
    .model_bytes = [](const MBConvProblem& p) { return p.min_bytes(); },
}};

}  // namespace
}  // namespace convlab
