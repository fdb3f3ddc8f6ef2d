// gpu/common/element.cuh — the element types behind convlab's DTypes, on the GPU.
//
// The harness keeps f16 and bf16 tensors as raw 16-bit patterns (uint16_t on
// the host); on the device the very same bytes are read as __half and
// __nv_bfloat16. Kernels load through to_float() and store through
// from_float<Element>(), which rounds to nearest-even exactly as the host's
// float_to_half / float_to_bf16 do, so fp32 arithmetic sits in between.
//
//   visit_dtype(p.dtype, [&](auto tag) {
//     using Element = typename decltype(tag)::type;   // float, __half or __nv_bfloat16
//     my_kernel<Element><<<grid, block>>>(static_cast<const Element*>(a.x), ...);
//   });
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <utility>

#include "core/dtype.hpp"

namespace convlab::gpu {

static_assert(sizeof(__half) == 2 && sizeof(__nv_bfloat16) == 2, "the harness stores 16-bit types as uint16_t");

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class Element> __device__ __forceinline__ Element from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// A value that carries a type, so a generic lambda can be handed "the element type".
template <class T> struct ElementTag {
  using type = T;
};

// Calls f(ElementTag<T>{}) with T the device type of `dtype`.
template <class F> decltype(auto) visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return std::forward<F>(f)(ElementTag<float>{});
    case DType::f16: return std::forward<F>(f)(ElementTag<__half>{});
    case DType::bf16: return std::forward<F>(f)(ElementTag<__nv_bfloat16>{});
  }
  throw std::invalid_argument("visit_dtype: unknown dtype");
}

}  // namespace convlab::gpu
