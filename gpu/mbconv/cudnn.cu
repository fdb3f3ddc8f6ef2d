// gpu/mbconv/cudnn.cu — lesson 11, GPU baseline: the MBConv block on the vendor libraries.
//
// The same layer sequence as 11a_layer_by_layer (gpu/lib/mbconv_layers.cuh),
// with cuDNN's depthwise convolution (conv2d/gpu/cudnn: the fastest algorithm
// cuDNN finds for the shape) and cuBLAS GemmEx (gemm/gpu/cublas) for the two
// 1x1 layers; the suite's small kernels for the biases, φ, the SE and the
// residual. It is what a framework dispatching to the vendor libraries does
// layer by layer.
// Supported: f32 and f16 (cuDNN's dtypes in conv2d/gpu/cudnn).
// Run just this: build/convlab run mbconv/gpu/cudnn --shape N=128,H=56,C=24,dtype=f16
#include "gpu/lib/mbconv_layers.cuh"
#include "ops/mbconv.hpp"

namespace convlab {
namespace {

const gpu::mbconv::Rungs& rungs() {
  static const gpu::mbconv::Rungs r{{"cudnn"}, {"cublas"}};
  return r;
}

bool supports(const MBConvProblem& p) {
  return (p.dtype == DType::f32 || p.dtype == DType::f16) && gpu::mbconv::layers_support(p, rungs());
}

std::size_t workspace_bytes(const MBConvProblem& p) { return gpu::mbconv::Layers(p, rungs()).bytes(); }

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) { gpu::mbconv::run_layers(p, a, rungs()); }

const Register<MBConvProblem> reg{{
    .name = "cudnn",
    .device = Device::gpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "baseline: cuBLAS GemmEx for the 1x1 layers, cuDNN depthwise conv, the suite's SE and element-wise passes",
    .baseline = true,
    .model_bytes = [](const MBConvProblem& p) { return p.suite_layer_by_layer_bytes(); },
}};

}  // namespace
}  // namespace convlab
