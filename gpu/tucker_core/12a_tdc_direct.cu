// gpu/tucker_core/12a_tdc_direct.cu — lesson 12, GPU rung 12a: TDC's core-conv kernel
// with the tile its analytical model picks.
//
// Idea over lesson 04's implicit GEMM: the core conv of a Tucker layer has few
// channels (D1, D2 of 32–192), so as a GEMM its reduction is short (9·D1) and its N
// narrow (D2), and at batch 1 its M (H·W) is small too: a 128×128 GEMM tile is
// mostly padding and a handful of blocks fill the GPU. TDC instead gives each block
// a (TH+2)×(TW+2)×TC input cube in shared memory, runs one thread per output
// channel over CRSN weights (coalesced: a warp reads 32 neighbouring k), and splits
// the channels into tiles whose partial sums meet by atomicAdd. The tile is chosen
// per shape by the model of ops/tucker_conv.hpp (waves of blocks over the SMs,
// issue-bound compute per wave, data movement) instead of a measured search.
// Plain loop it replaces: ref::conv2d's loops; the kernel and its diagram are in
// gpu/lib/tdc_core.cu.
// Cost: 2·N·H·W·K·9·C flops; per (row, channel, filter row) a thread issues 3 weight
// loads, TW+2 shared loads and 3·TW FMAs (48 flops in ~39 instructions at TW = 8).
// Floor: at batch 1 the launch (and the memset with several channel tiles), a few µs;
// above that the fp32 FMA rate, which the latency of the weight loads keeps it far from.
// Tunables: none here; the tile comes from tdc_choose (cached per shape).
// Supported: fp32, any N, H, W, C, and K ≤ 1024.
// Run just this: build/convlab run tucker_core/gpu/12a_tdc_direct
#include <array>
#include <map>
#include <mutex>

#include "gpu/lib/tdc_core.hpp"
#include "ops/tucker_conv.hpp"

namespace convlab {
namespace {

// The model's tile for p, computed once per shape (the model ranks ~1000 candidates:
// tens of microseconds of host time, which must not sit inside every call).
TdcTile tile_for(const TuckerCoreProblem& p) {
  static std::mutex mutex;
  static std::map<std::array<int, 5>, TdcTile> tiles;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::array<int, 5> key{p.N, p.H, p.W, p.C, p.K};
  auto it = tiles.find(key);
  if (it == tiles.end()) it = tiles.emplace(key, tdc_choose(p)).first;
  return it->second;
}

bool supports(const TuckerCoreProblem& p) {
  return p.dtype == DType::f32 && p.K <= kTdcMaxThreads && gpu::tdc_core_unsupported(p, tile_for(p)).empty();
}

void run(const TuckerCoreProblem& p, const Args<TuckerCoreProblem>& a) {
  gpu::tdc_core_launch(p, tile_for(p), static_cast<const float*>(a.x), static_cast<const float*>(a.w),
                       static_cast<float*>(a.y));
}

const Register<TuckerCoreProblem> reg{{
    .name = "12a_tdc_direct",
    .device = Device::gpu,
    .lesson = 12,
    .supports = supports,
    .run = run,
    .idea = "TDC's direct core conv: (TH+2)x(TW+2)xTC smem cube, one thread per output channel, CRSN weights, "
            "atomicAdd over channel tiles; tile from the analytical model",
}};

}  // namespace
}  // namespace convlab
