// gpu/common/cublas_handle.cuh — the process's one cuBLAS handle, and error checks.
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

#include <string>

#include "core/device.hpp"

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

}  // namespace convlab::gpu
