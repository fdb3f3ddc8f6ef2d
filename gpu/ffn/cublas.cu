// gpu/ffn/cublas.cu — lesson 08, baseline: Eq. 30 layer by layer on cuBLAS.
//
// What a framework's eager mode does (PyTorch's nn.Linear → GELU → nn.Linear):
// two cuBLAS GEMMs with fp32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F;
// fp16/bf16 inputs run on the tensor cores), and element-wise passes between:
//
//   H = X·U            cublasGemmEx → H [P, hidden] in the workspace, problem dtype
//   H = φ(H + a)       bias_activate_kernel, in place
//   Z = H·V            cublasGemmEx
//   Z = Z + b          bias_activate_kernel (identity)
//
// Row-major through column-major cuBLAS: C = A·B row-major is Cᵀ = Bᵀ·Aᵀ
// column-major, so each call passes B first (gpu::gemm_row_major in
// gpu/lib/cublas_handle.cuh; gpu/gemm/cublas.cu explains it).
// Supported: f32 (IEEE fp32, no TF32: see cublas_handle.cuh), f16, bf16; any sizes.
// Run just this: build/convlab run ffn/gpu/cublas --shape P=401408,C=64,dtype=f16
#include <cstddef>

#include "ops/ffn.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/cublas_handle.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_epilogue.cuh"

namespace convlab {
namespace {

std::size_t workspace_bytes(const FfnProblem& p) { return std::size_t(p.P) * p.hidden * dtype_size(p.dtype); }

void run(const FfnProblem& p, const Args<FfnProblem>& args) {
  const cudaDataType_t type = gpu::cuda_data_type(p.dtype);
  void* h = args.workspace;  // [P, hidden] row-major, problem dtype: the hidden tensor
  gpu::gemm_row_major(p.P, p.hidden, p.C, /*alpha=*/1.f,
                      /*X [P,C]*/ {.data = args.x, .type = type, .ld = p.C},
                      /*U [C,hidden]*/ {.data = args.u, .type = type, .ld = p.hidden},
                      /*H [P,hidden]*/ {.data = h, .type = type, .ld = p.hidden}, "H = X·U");
  gpu::visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    gpu::ffn::bias_activate(p.P, p.hidden, static_cast<Element*>(h), static_cast<const Element*>(args.a),
                            p.activation);
  });
  gpu::gemm_row_major(p.P, p.C_out, p.hidden, /*alpha=*/1.f,
                      /*H [P,hidden]*/ {.data = h, .type = type, .ld = p.hidden},
                      /*V [hidden,C_out]*/ {.data = args.v, .type = type, .ld = p.C_out},
                      /*Z [P,C_out]*/ {.data = args.z, .type = type, .ld = p.C_out}, "Z = H·V");
  gpu::visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    gpu::ffn::bias_activate(p.P, p.C_out, static_cast<Element*>(args.z), static_cast<const Element*>(args.b),
                            FfnActivation::identity);
  });
}

const Register<FfnProblem> reg{{
    .name = "cublas",
    .device = Device::gpu,
    .lesson = 8,
    .supports = any_dtype<FfnProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "baseline: cuBLAS GemmEx (fp32 accumulation) twice, bias+φ passes; hidden tensor in DRAM",
    .baseline = true,
    .model_bytes = [](const FfnProblem& p) { return p.layer_by_layer_bytes(); },  // H and z through DRAM
}};

}  // namespace
}  // namespace convlab
