// gpu/convfirst/10a_layer_by_layer.cu — lesson 10, GPU rung a: the ConvFirst block one layer at a time.
//
// The block as a framework runs it (Fig. 7a), built from the suite's own
// GPU rungs (gpu/lib/convfirst_layer_by_layer.cuh has the sequence):
//
//   conv2d/gpu/06b_grouped (lesson 06)              t = gconv3x3(x), then + conv_b
//   (stride 2) blurpool(t), blurpool(x)
//   gemm/gpu/03o_tensor_core_pipelined (lesson 03)  h = t·U, then φ(h + a)   f32: 08_double_buffering
//   the same GEMM                                  y = h·V
//   one pass                                       y += b + shortcut (x, blur(x), or blur(x)·Wsc + bsc)
//
// Plain loop it replaces: ref::convfirst_block. Cost: every activation
// between the layers crosses DRAM: t (C per input pixel) three times with
// its bias pass, the hidden tensor (α·C per pixel) four times
// (ConvFirstProblem::suite_layer_by_layer_bytes()). At N=128 56x56 C=64 α=4 f16
// that is 1.39 GB against the fused plan's 0.10 GB: a 0.33 ms memory floor,
// eight times the block's 0.040 ms compute floor.
// Supported: f32 and f16 (the grouped conv rung's dtypes), group width 8.
// Run just this: build/convlab run convfirst/gpu/10a_layer_by_layer --shape N=128,H=56,C=64,dtype=f16
#include "ops/convfirst.hpp"
#include "gpu/lib/convfirst_layer_by_layer.cuh"

namespace convlab {
namespace {

const gpu::convfirst::Rungs& rungs() {
  static const gpu::convfirst::Rungs r{
      {"06b_grouped", "04a_implicit_gemm", "04b_implicit_gemm_tensor_core"},  // C = 8 is one group: a dense conv
      {"03o_tensor_core_pipelined", "03m_double_buffering"}};
  return r;
}

bool supports(const ConvFirstProblem& p) {
  return (p.dtype == DType::f32 || p.dtype == DType::f16) && gpu::convfirst::layers_support(p, rungs());
}

std::size_t workspace_bytes(const ConvFirstProblem& p) { return gpu::convfirst::Layers(p, rungs()).bytes(); }

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a) { gpu::convfirst::run_layers(p, a, rungs()); }

const Register<ConvFirstProblem> reg{{
    .name = "10a_layer_by_layer",
    .device = Device::gpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "Fig. 7a: the suite's grouped-conv rung, two tensor-core GEMM rungs and element-wise passes; t and "
            "the hidden tensor in DRAM",
    .model_bytes = [](const ConvFirstProblem& p) { return p.suite_layer_by_layer_bytes(); },
}};

}  // namespace
}  // namespace convlab
