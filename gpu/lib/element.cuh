// gpu/lib/element.cuh — the element types behind convlab's DTypes, on the GPU.
//
// The harness keeps f16 and bf16 tensors as raw 16-bit patterns (uint16_t on
// the host); on the device the very same bytes are read as __half and
// __nv_bfloat16. Kernels load through to_float() and store through
// from_float<Element>(), which rounds to nearest-even exactly as the host's
// float_to_half / float_to_bf16 do, so fp32 arithmetic sits in between.
//
// A variant's run() picks its kernel's element type from the problem's DType
// with visit_dtype, naming the element types it is compiled for:
//
//   gpu::visit_dtype<float, __half>(p.dtype, [&](auto tag) {
//     using Element = typename decltype(tag)::type;   // float or __half here
//     my_kernel<Element><<<grid, block>>>(static_cast<const Element*>(a.x), ...);
//   });
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

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

// The DType whose tensors a kernel reads as Element.
template <class Element> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<__half>() { return DType::f16; }
template <> constexpr DType dtype_of<__nv_bfloat16>() { return DType::bf16; }

// Calls f(ElementTag<T>{}) with T the device type of `dtype`, T one of
// `Elements`: the element types the caller's kernels are compiled for, and the
// only ones instantiated. Any other dtype throws; a variant's supports() keeps
// those away from run() in the first place.
template <class... Elements, class F> void visit_dtype(DType dtype, F&& f) {
  static_assert(sizeof...(Elements) > 0, "name the element types the kernels are compiled for");
  const auto visit_if_match = [&](auto tag) {
    if (dtype != dtype_of<typename decltype(tag)::type>()) return false;
    f(tag);
    return true;
  };
  if (!(visit_if_match(ElementTag<Elements>{}) || ...))
    throw std::invalid_argument(std::string("visit_dtype: no kernel compiled for ") + dtype_name(dtype));
}

}  // namespace convlab::gpu
