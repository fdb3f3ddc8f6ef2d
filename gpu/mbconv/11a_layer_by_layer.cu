// gpu/mbconv/11a_layer_by_layer.cu — lesson 11, GPU rung a: the MBConv block one layer at a time.
//
// The block as a framework runs it, built from the suite's own GPU rungs
// (gpu/lib/mbconv_layers.cuh has the sequence):
//
//   gemm/gpu/03o_tensor_core_pipelined (lesson 03)   e = x·We, then φ(e + be)     f32: 03m_double_buffering
//   conv2d/gpu/06a_depthwise (lesson 06)             d = dw(e), then φ(d + bd)
//   pool, SE gate, d ⊙= g                            three small kernels (SE only)
//   the same GEMM                                    y = d·Wp, then y += bp (+ x)
//
// Plain loop it replaces: ref::mbconv_block. Cost: e and d cross DRAM
// several times each (MBConvProblem::suite_layer_by_layer_bytes()); at N=128
// 56x56 C=24 e=6 f16 that is about 1.3 GB, a 0.27 ms memory floor.
// Supported: f32 and f16 (the depthwise rung's dtypes).
// Run just this: build/convlab run mbconv/gpu/11a_layer_by_layer --shape N=128,H=56,C=24,dtype=f16
#include "gpu/lib/mbconv_layers.cuh"
#include "ops/mbconv.hpp"

namespace convlab {
namespace {

const gpu::mbconv::Rungs& rungs() {
  static const gpu::mbconv::Rungs r{{"06a_depthwise"}, {"03o_tensor_core_pipelined", "03m_double_buffering"}};
  return r;
}

bool supports(const MBConvProblem& p) {
  return (p.dtype == DType::f32 || p.dtype == DType::f16) && gpu::mbconv::layers_support(p, rungs());
}

std::size_t workspace_bytes(const MBConvProblem& p) { return gpu::mbconv::Layers(p, rungs()).bytes(); }

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) { gpu::mbconv::run_layers(p, a, rungs()); }

const Register<MBConvProblem> reg{{
    .name = "11a_layer_by_layer",
    .device = Device::gpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "the suite's tensor-core GEMM and depthwise rungs with bias/φ, pool, gate, scale and residual passes; e "
            "and d in DRAM",
    .model_bytes = [](const MBConvProblem& p) { return p.suite_layer_by_layer_bytes(); },
}};

}  // namespace
}  // namespace convlab
