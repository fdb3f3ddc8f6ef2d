// gpu/lib/cublas_handle.cuh — the process's one cuBLAS handle, error checks,
// and the one row-major GEMM call every cuBLAS-backed variant makes on it.
//
// A cuBLAS handle is expensive to create (it allocates device workspace and
// loads kernels), so every cuBLAS-backed variant shares one, made on first use.
// It is never destroyed: destroying it from a static destructor could run
// after the CUDA runtime has shut down, and the process's end frees it anyway.
//
// Its math mode is fixed here, once, for everyone: plain IEEE fp32 arithmetic
// (no TF32: the fp32 tolerance rightly rejects a 10-bit mantissa), and no
// reduced-precision reductions in split-K for fp16/bf16, so an fp16 GEMM
// really accumulates in fp32 as the tolerance model assumes.
#pragma once

#include <cublas_v2.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/device.hpp"
#include "core/dtype.hpp"
#include "gpu/lib/check.cuh"

namespace convlab::gpu {

inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string(what) + ": " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) +
                      ")");
}

// The shared handle, on the default stream (the harness times the default stream).
inline cublasHandle_t cublas_handle() {
  static const cublasHandle_t handle = [] {
    require_cuda_device();
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cublasCreate");
    check_cublas(cublasSetMathMode(h, cublasMath_t(CUBLAS_DEFAULT_MATH |
                                                   CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
                 "cublasSetMathMode (IEEE fp32, no TF32, no reduced-precision reductions)");
    return h;
  }();
  return handle;
}

// convlab's element type as cuBLAS names it.
inline cudaDataType_t cuda_data_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
  }
  throw std::invalid_argument("cuda_data_type: unknown dtype");
}

// ---- row-major GEMM through column-major cuBLAS ---------------------------------------
//
// convlab's matrices are row-major, cuBLAS's column-major. The bytes of a
// row-major M×N matrix are the column-major N×M matrix — its transpose — so
// row-major C = op(A)·op(B) is asked of cuBLAS as column-major
// Cᵀ = op(B)ᵀ·op(A)ᵀ: B's bytes go first, A's second, m = N, n = M, and each
// operand keeps its own leading dimension. gpu/gemm/cublas.cu derives it.
//
//   row-major                              cuBLAS call (column-major)
//   C[M,N] (ld C.ld) = op(A)[M,K]·op(B)[K,N]   opB, opA, m = N, n = M, k = K,
//                                              B (ld B.ld), A (ld A.ld), C (ld C.ld)
//
// A "transposed" operand is stored as op(X)ᵀ: B transposed is a row-major
// [N, K] matrix, A transposed a row-major [K, M] matrix; its op is CUBLAS_OP_T.
//
// Every call here is the same: fp32 accumulation and fp32 alpha
// (CUBLAS_COMPUTE_32F), cuBLAS's default algorithm (CUBLAS_GEMM_DEFAULT), the
// shared handle's math mode (no TF32), beta = 0 so that C is never read (it
// holds NaN poison under test).

// One input matrix of a row-major product: its bytes, element type, row stride
// in elements, whether the product uses its transpose, and (batched calls
// only) the elements from one matrix of the batch to the next.
struct RowMajorInput {
  const void* data;
  cudaDataType_t type;
  int ld;
  bool transposed = false;
  int64_t batch_stride = 0;
};

// The output matrix, the same without the transpose.
struct RowMajorOutput {
  void* data;
  cudaDataType_t type;
  int ld;
  int64_t batch_stride = 0;
};

inline cublasOperation_t cublas_op(const RowMajorInput& x) { return x.transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

// `call` failed: say which product it was (`what`, e.g. "S = QK^T").
inline void check_cublas_call(cublasStatus_t status, const char* call, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) check_cublas(status, (std::string(call) + " (" + what + ")").c_str());
  check_launch(call);  // cuBLAS launches kernels: a launch failure it did not report surfaces here
}

// C[M,N] = alpha · op(A)[M,K] · op(B)[K,N], row-major: one cublasGemmEx.
inline void gemm_row_major(int M, int N, int K, float alpha, const RowMajorInput& A, const RowMajorInput& B,
                           const RowMajorOutput& C, const char* what) {
  const float beta = 0.f;
  check_cublas_call(cublasGemmEx(cublas_handle(), cublas_op(B), cublas_op(A), /*m=*/N, /*n=*/M, /*k=*/K, &alpha,
                                 B.data, B.type, B.ld, A.data, A.type, A.ld, &beta, C.data, C.type, C.ld,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmEx", what);
}

// The same for `batch` independent products, matrix i at data + i·batch_stride
// elements: one cublasGemmStridedBatchedEx.
inline void gemm_row_major_strided_batched(int batch, int M, int N, int K, float alpha, const RowMajorInput& A,
                                           const RowMajorInput& B, const RowMajorOutput& C, const char* what) {
  const float beta = 0.f;
  check_cublas_call(cublasGemmStridedBatchedEx(cublas_handle(), cublas_op(B), cublas_op(A), /*m=*/N, /*n=*/M, /*k=*/K,
                                               &alpha, B.data, B.type, B.ld, B.batch_stride, A.data, A.type, A.ld,
                                               A.batch_stride, &beta, C.data, C.type, C.ld, C.batch_stride, batch,
                                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                    "cublasGemmStridedBatchedEx", what);
}

}  // namespace convlab::gpu
