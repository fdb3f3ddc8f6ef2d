// cpu/tucker_core/12a_tdc_direct.cpp — lesson 12, CPU rung 12a: TDC's core-conv scheme.
//
// Idea: the core conv of a Tucker-format layer (D1 → D2 channels, 3x3) is small in
// channels, so a GEMM view (lesson 04) has a short reduction (9·D1) and a narrow N
// (D2). TDC runs it as a direct convolution instead: an input cube of
// (TH+2)×(TW+2)×TC staged once per (spatial tile, channel tile) and reused by all 9
// taps and every output channel, with the weights stored CRSN so that the K weights
// of one tap are contiguous. The loop nest, and its plain form, are in
// cpu/lib/tdc_core_cpu.hpp; this rung fixes one tile for the CPU.
// Plain loop it replaces: ref::conv2d's seven loops over a KRSC kernel.
// Cost: 2·N·H·W·K·9·C flops; the cube is re-read from cache by every k.
// Tunables: the tile below (L1-sized cube: 6·10·16·4 B = 3.8 KB).
// Supported: fp32, any N, H, W, C, K (the tile may overhang; TC may exceed C).
// Run just this: build/convlab run tucker_core/cpu/12a_tdc_direct
#include "cpu/lib/tdc_core_cpu.hpp"
#include "ops/tucker_conv.hpp"

namespace convlab {
namespace {

constexpr TdcTile kCpuTile{4, 8, 16};
static_assert(kCpuTile.th >= 1 && kCpuTile.tw >= 1 && kCpuTile.tc >= 1, "every tile extent is at least 1");

void run(const TuckerCoreProblem& p, const Args<TuckerCoreProblem>& a) {
  cpu::tdc_core_cpu(p, kCpuTile, static_cast<const float*>(a.x), static_cast<const float*>(a.w),
                    static_cast<float*>(a.y), true);
}

const Register<TuckerCoreProblem> reg{{
    .name = "12a_tdc_direct",
    .device = Device::cpu,
    .lesson = 12,
    .supports = f32_only<TuckerCoreProblem>,
    .run = run,
    .threads = Threads::all,
    .idea = "TDC's direct core conv: a (TH+2)x(TW+2)xTC input cube per tile, CRSN weights, channel tiles summed in turn",
}};

}  // namespace
}  // namespace convlab
