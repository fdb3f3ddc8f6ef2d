// gpu/tucker_conv/12b_three_stage.cu — lesson 12, GPU rung 12b: the whole Tucker layer.
//
// Idea over a dense 3x3 conv C → K (lesson 04): run its Tucker form instead, three
// kernels over NHWC with every factor stored as its kernel wants it:
//   z1 = x · u_in         1x1 C → D1, lesson 03's double-buffered SGEMM
//   z2 = core3x3(z1)      D1 → D2, TDC's kernel with the model's tile (rung 12a)
//   y  = z2 · u_out_t     1x1 D2 → K, the same SGEMM
// (gpu/lib/tdc_core.cu, tucker_layer_launch). The MACs per pixel drop from 9·C·K to
// C·D1 + 9·D1·D2 + D2·K; z1 and z2 go through DRAM (or L2) between the kernels.
// Plain loop it replaces: ref::tucker_conv2d's three loop nests.
// Cost: 2·N·H·W·(C·D1 + 9·D1·D2 + D2·K) flops; three launches.
// Tunables: none here (SGEMM tiles: gpu/lib/sgemm_double_buffered.cuh; core tile: the model).
// Supported: fp32, D2 ≤ 1024, ⌈N·H·W/128⌉ ≤ 65535.
// Run just this: build/convlab run tucker_conv/gpu/12b_three_stage
#include <array>
#include <map>
#include <mutex>

#include "gpu/lib/tdc_core.hpp"
#include "ops/tucker_conv.hpp"

namespace convlab {
namespace {

TdcTile core_tile(const TuckerConvProblem& p) {
  static std::mutex mutex;
  static std::map<std::array<int, 5>, TdcTile> tiles;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::array<int, 5> key{p.N, p.H, p.W, p.D1, p.D2};
  auto it = tiles.find(key);
  if (it == tiles.end()) it = tiles.emplace(key, tdc_choose(p.core())).first;
  return it->second;
}

bool supports(const TuckerConvProblem& p) {
  return p.dtype == DType::f32 && p.D2 <= kTdcMaxThreads && gpu::tucker_layer_unsupported(p, core_tile(p)).empty();
}

std::size_t workspace_bytes(const TuckerConvProblem& p) { return gpu::tucker_layer_workspace_bytes(p); }

void run(const TuckerConvProblem& p, const Args<TuckerConvProblem>& a) {
  gpu::tucker_layer_launch(p, core_tile(p), static_cast<const float*>(a.x), static_cast<const float*>(a.u_in),
                           static_cast<const float*>(a.core), static_cast<const float*>(a.u_out_t),
                           static_cast<float*>(a.y), a.workspace);
}

const Register<TuckerConvProblem> reg{{
    .name = "12b_three_stage",
    .device = Device::gpu,
    .lesson = 12,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "Tucker layer: SGEMM 1x1 C->D1, TDC core conv D1->D2 (model's tile), SGEMM 1x1 D2->K",
    .model_bytes = [](const TuckerConvProblem& p) { return p.layer_by_layer_bytes(); },
}};

}  // namespace
}  // namespace convlab
