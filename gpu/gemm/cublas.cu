// gpu/gemm/cublas.cu — baseline: NVIDIA's cuBLAS, the yardstick for every GPU GEMM rung.
//
// What it is: one cublasGemmEx call. fp32 runs with compute type
// CUBLAS_COMPUTE_32F on a handle whose math mode forbids TF32 (plain IEEE
// fp32 FMAs, as the fp32 tolerance demands); fp16 and bf16 run on tensor
// cores with fp32 accumulation (CUBLAS_COMPUTE_32F) and fp16/bf16 output,
// with reduced-precision split-K reductions forbidden (gpu/common/cublas_handle.cuh).
//
// The one trick: cuBLAS is column-major, convlab is row-major. A row-major
// M×N matrix has the same bytes as a column-major N×M matrix — its transpose.
// So instead of C = A·B we ask cuBLAS for Cᵀ = Bᵀ·Aᵀ, handing it B where it
// expects its first operand and A where it expects its second, no transposes:
//
//   row-major     C[M,N]  = A[M,K] · B[K,N]
//   column-major  Cᵀ[N,M] = Bᵀ[N,K] · Aᵀ[K,M]   (m = N, n = M, k = K;
//                 lda of Bᵀ = N, ldb of Aᵀ = K, ldc of Cᵀ = N)
//
// Cost: whatever NVIDIA's engineers made it — that is the point of a baseline.
// Run just this: build/convlab run gemm/cuda/cublas
#include "core/ops/gemm.hpp"
#include "gpu/common/check.cuh"
#include "gpu/common/cublas_handle.cuh"

namespace convlab {
namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
  }
  throw std::invalid_argument("cublas: unknown dtype");
}

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const cudaDataType_t type = cuda_type(p.dtype);
  const float alpha = 1.f, beta = 0.f;  // C = A·B; with beta = 0 cuBLAS does not read C (it holds NaN poison)
  gpu::check_cublas(cublasGemmEx(gpu::cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N,
                                 /*m=*/p.N, /*n=*/p.M, /*k=*/p.K, &alpha,
                                 /*B as Bᵀ, N×K col-major*/ a.b, type, /*ld=*/p.N,
                                 /*A as Aᵀ, K×M col-major*/ a.a, type, /*ld=*/p.K, &beta,
                                 /*C as Cᵀ, N×M col-major*/ a.c, type, /*ld=*/p.N,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmEx");
  gpu::check_launch("cublasGemmEx");
}

const Register<GemmProblem> reg{{
    .name = "cublas",
    .device = Device::cuda,
    .lesson = 3,
    .supports = any_dtype<GemmProblem>,
    .run = run,
    .idea = "cuBLAS GemmEx on the transposed problem (row-major via column-major); fp32 without TF32",
    .baseline = true,
}};

}  // namespace
}  // namespace convlab
