// gpu/gemm/cublas.cu — baseline: NVIDIA's cuBLAS, the yardstick for every GPU GEMM rung.
//
// What it is: one cublasGemmEx call. fp32 runs with compute type
// CUBLAS_COMPUTE_32F on a handle whose math mode forbids TF32 (plain IEEE
// fp32 FMAs, as the fp32 tolerance demands); fp16 and bf16 run on tensor
// cores with fp32 accumulation (CUBLAS_COMPUTE_32F) and fp16/bf16 output,
// with reduced-precision split-K reductions forbidden (gpu/lib/cublas_handle.cuh).
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
//   cublasGemmEx(OP_N, OP_N, m = N, n = M, k = K, B, ld N, A, ld K, C, ld N)
//
// Every cuBLAS-backed variant makes this call through one wrapper,
// gpu::gemm_row_major (gpu/lib/cublas_handle.cuh), which also takes
// transposed operands and a strided batch.
//
// Cost: whatever NVIDIA's engineers made it — that is the point of a baseline.
// Run just this: build/convlab run gemm/gpu/cublas
#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/cublas_handle.cuh"

namespace convlab {
namespace {

void run(const GemmProblem& p, const Args<GemmProblem>& a) {
  const cudaDataType_t type = gpu::cuda_data_type(p.dtype);
  // C = A·B, all row-major; gpu::gemm_row_major makes the call above (B first, m = N, n = M).
  gpu::gemm_row_major(p.M, p.N, p.K, /*alpha=*/1.f,
                      /*A [M,K]*/ {.data = a.a, .type = type, .ld = p.K},
                      /*B [K,N]*/ {.data = a.b, .type = type, .ld = p.N},
                      /*C [M,N]*/ {.data = a.c, .type = type, .ld = p.N}, "C = A·B");
}

const Register<GemmProblem> reg{{
    .name = "cublas",
    .device = Device::gpu,
    .lesson = 3,
    .supports = any_dtype<GemmProblem>,
    .run = run,
    .idea = "cuBLAS GemmEx on the transposed problem (row-major via column-major); fp32 without TF32",
    .baseline = true,
}};

}  // namespace
}  // namespace convlab
