// gpu/lib/cudnn_handle.cuh — the process's one cuDNN handle, error checks,
// and owning wrappers for cuDNN's legacy descriptors.
//
// Like the cuBLAS handle (cublas_handle.cuh), the cuDNN handle is made on
// first use, works on the default stream (the one the harness times), and is
// never destroyed, so no static destructor runs after the CUDA runtime is gone.
// Only files whose baseline needs cuDNN include this header; CMake compiles
// them only where cuDNN was found.
#pragma once

#include <cudnn.h>

#include <string>

#include "core/device.hpp"

namespace convlab::gpu {

// cuDNN 9 groups its status codes by thousands: 2xxx bad parameter, 3xxx not supported.
inline bool cudnn_rejects_problem(cudnnStatus_t status) {
  const int category = int(status) / 1000 * 1000;
  return category == int(CUDNN_STATUS_BAD_PARAM) || category == int(CUDNN_STATUS_NOT_SUPPORTED);
}

// "CUDNN_STATUS_NOT_SUPPORTED_SHAPE (3002): <cuDNN's own last message, if any>"
inline std::string cudnn_status_text(cudnnStatus_t status) {
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string text = std::string(cudnnGetErrorString(status)) + " (" + std::to_string(int(status)) + ")";
  if (detail[0]) text += ": " + std::string(detail);
  return text;
}

inline void check_cudnn(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) throw DeviceError(std::string(what) + ": " + cudnn_status_text(status));
}

inline cudnnHandle_t cudnn_handle() {
  static const cudnnHandle_t handle = [] {
    require_cuda_device();
    cudnnHandle_t h = nullptr;
    check_cudnn(cudnnCreate(&h), "cudnnCreate");
    return h;
  }();
  return handle;
}

// Owning wrappers: one cuDNN descriptor each, destroyed with the wrapper.
template <class Handle, cudnnStatus_t (*create)(Handle*), cudnnStatus_t (*destroy)(Handle)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { check_cudnn(create(&handle_), "creating a cuDNN descriptor"); }
  ~CudnnDescriptor() { destroy(handle_); }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  Handle get() const { return handle_; }

 private:
  Handle handle_ = nullptr;
};

using TensorDescriptor =
    CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                              cudnnDestroyConvolutionDescriptor>;

}  // namespace convlab::gpu
