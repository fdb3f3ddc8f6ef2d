// gpu/convfirst/cudnn.cu — lesson 10, GPU baseline: the ConvFirst block on the vendor libraries.
//
// The same layer sequence as 10a_layer_by_layer (gpu/lib/convfirst_layer_by_layer.cuh),
// with cuDNN's grouped convolution (conv2d/gpu/cudnn: the fastest algorithm
// cuDNN finds for the shape) and cuBLAS GemmEx (gemm/gpu/cublas) for the
// FFN's two layers and the stride-2 projection; the suite's element-wise
// passes for the biases, φ, BlurPool and the shortcut. It is what a framework
// dispatching to the vendor libraries does layer by layer.
// Supported: f32 and f16 (cuDNN's dtypes in conv2d/gpu/cudnn), group width 8.
// Run just this: build/convlab run convfirst/gpu/cudnn --shape N=128,H=56,C=64,dtype=f16
#include "ops/convfirst.hpp"
#include "gpu/lib/convfirst_layer_by_layer.cuh"

namespace convlab {
namespace {

const gpu::convfirst::Rungs& rungs() {
  static const gpu::convfirst::Rungs r{{"cudnn"}, {"cublas"}};
  return r;
}

bool supports(const ConvFirstProblem& p) {
  return (p.dtype == DType::f32 || p.dtype == DType::f16) && gpu::convfirst::layers_support(p, rungs());
}

std::size_t workspace_bytes(const ConvFirstProblem& p) { return gpu::convfirst::Layers(p, rungs()).bytes(); }

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a) { gpu::convfirst::run_layers(p, a, rungs()); }

const Register<ConvFirstProblem> reg{{
    .name = "cudnn",
    .device = Device::gpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "baseline: cuDNN grouped conv + cuBLAS GemmEx for the FFN (and projection), element-wise passes between",
    .baseline = true,
    .model_bytes = [](const ConvFirstProblem& p) { return p.suite_layer_by_layer_bytes(); },
}};

}  // namespace
}  // namespace convlab
