// gpu/ffn/08a_layer_by_layer.cu — lesson 08, GPU rung 08a: Eq. 30 layer by layer on the suite's own GEMM.
//
// The GPU twin of cpu/ffn/08a_layer_by_layer: lesson 03's fp32 SGEMM (rung 03m,
// double-buffered, gpu/lib/sgemm_double_buffered.cuh) twice, with the bias
// (+ φ) pass of gpu/lib/ffn_epilogue.cuh after each:
//
//   H = X·U ;  H = φ(H + a) ;  Z = H·V ;  Z = Z + b        H [P, hidden] in the workspace
//
// Supported: f32 only, any sizes with ceil(P / 128) ≤ 65535 (the SGEMM's grid
// rows). fp16 would want lesson 03's tensor-core GEMM (gpu/gemm/10_...), which
// lives inside its rung's file and has no launcher other variants can call;
// the f16 layer-by-layer path is the cuBLAS baseline.
// Run just this: build/convlab run ffn/gpu/08a_layer_by_layer --shape P=401408,C=64,dtype=f32
#include <cstddef>

#include "ops/ffn.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/ffn_epilogue.cuh"
#include "gpu/lib/sgemm_double_buffered.cuh"

namespace convlab {
namespace {

bool supports(const FfnProblem& p) {
  return p.dtype == DType::f32 && gpu::ceil_div<int64_t>(p.P, gpu::double_buffered::kBlockM) <= gpu::kMaxGridYZ;
}

std::size_t workspace_bytes(const FfnProblem& p) { return std::size_t(p.P) * p.hidden * sizeof(float); }

void run(const FfnProblem& p, const Args<FfnProblem>& args) {
  float* h = static_cast<float*>(args.workspace);  // [P, hidden] row-major: the hidden tensor
  float* z = static_cast<float*>(args.z);          // [P, C_out]
  gpu::double_buffered::launch(p.P, p.hidden, p.C, static_cast<const float*>(args.x),
                               static_cast<const float*>(args.u), h);
  gpu::ffn::bias_activate(p.P, p.hidden, h, static_cast<const float*>(args.a), p.activation);
  gpu::double_buffered::launch(p.P, p.C_out, p.hidden, h, static_cast<const float*>(args.v), z);
  gpu::ffn::bias_activate(p.P, p.C_out, z, static_cast<const float*>(args.b), FfnActivation::identity);
}

const Register<FfnProblem> reg{{
    .name = "08a_layer_by_layer",
    .device = Device::gpu,
    .lesson = 8,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "lesson 03's fp32 SGEMM twice with bias+φ passes; hidden tensor P·αC in DRAM",
    .model_bytes = [](const FfnProblem& p) { return p.layer_by_layer_bytes(); },  // H and z through DRAM
}};

}  // namespace
}  // namespace convlab
