// gpu/mbconv/11d_fused_no_se.cu — lesson 11, GPU rung d: the block without SE in one fused pass.
//
// Idea over 11b_fused_two_pass: with no squeeze-excitation (se = 0,
// MobileNetV2's inverted residual) nothing waits for the whole image, so one
// pass of the tile kernel (Stage::project, no gate) does the block: x in,
// y out, e and d never leave the chip. Beside 11b on the same shape with SE
// it shows what the SE costs.
//
// Plain loop it replaces: ref::mbconv_block with se_channels = 0. Cost: the
// block's MACs (plus the tiles' halo rows of expand and depthwise), DRAM
// MBConvProblem::min_bytes().
// Supported: f16, bf16, se = 0; the sizes of fused_support. No workspace.
// Run just this: build/convlab run mbconv/gpu/11d_fused_no_se --shape N=128,H=56,C=24,se=0,dtype=f16
#include "gpu/lib/mbconv_fused.cuh"
#include "ops/mbconv.hpp"

namespace convlab {
namespace {

using namespace gpu::mbconv;

bool supports(const MBConvProblem& p) { return !p.has_se() && fused_support(p); }

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    launch_stage<E, Stage::project>(p, a, nullptr, nullptr, nullptr);
  });
}

const Register<MBConvProblem> reg{{
    .name = "11d_fused_no_se",
    .device = Device::gpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .idea = "no SE: one fused pass (mma.sync 1x1 layers, depthwise on chip), x in, y out",
    .model_bytes = [](const MBConvProblem& p) { return p.min_bytes(); },
}};

}  // namespace
}  // namespace convlab
