// gpu/conv_pool/07a_layer_by_layer.cu — lesson 07, GPU rung 07a: three kernels, the intermediate in HBM.
//
// What a framework runs when nothing fuses: every layer is its own kernel.
//
//   kernel 1  y_full = conv2d(x, w)                 the suite's implicit-GEMM convs, called through
//                                                   the registry: conv2d/gpu/04b_implicit_gemm_tensor_core
//                                                   (f16) or conv2d/gpu/04a_implicit_gemm (f32)
//   kernel 2  y_full = max(y_full·scale + bias, 0)  in place, 16-byte vectors
//   kernel 3  y      = maxpool2x2(y_full)           16-byte vectors, floor on odd P / Q
//
// y_full [N, P, Q, K] (problem dtype) is this variant's workspace. Traffic
// (ConvPoolProblem::unfused_bytes, the `model_bytes` counter): the fused floor
// plus 4·|y_full| — kernel 1 writes it, kernel 2 reads and writes it, kernel 3
// reads it. Kernels 2 and 3 do ~1 flop per byte: pure bandwidth.
// Run just this: build/convlab run conv_bias_relu_pool/gpu/07a_layer_by_layer --shape N=64,H=112,C=16,K=128,R=3,pad=1,dtype=f16
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ops/conv2d.hpp"
#include "ops/conv_pool.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"

namespace convlab {
namespace {

// ---- tunables ---------------------------------------------------------------------
constexpr int kThreads = 256;                 // per block, both pass kernels
constexpr int64_t kMaxBlocks = 132 * 32;      // grid-stride: enough blocks to fill an H200 many times
constexpr std::size_t kWorkspaceAlign = 256;  // the conv's own workspace (if any) starts aligned

// ---- the conv: a registered conv2d variant -----------------------------------------
const char* conv_name(DType dtype) {
  return dtype == DType::f32 ? "04a_implicit_gemm" : "04b_implicit_gemm_tensor_core";
}

const Variant<ConvProblem>& find_conv_variant(DType dtype) {
  for (const Variant<ConvProblem>& v : Registry<ConvProblem>::variants())
    if (v.device == Device::gpu && v.name == conv_name(dtype)) return v;
  throw std::logic_error(std::string("conv_bias_relu_pool/gpu/07a_layer_by_layer: conv2d/gpu/") + conv_name(dtype) +
                         " is not registered");
}

// Looked up once per dtype (the registry is complete once main runs), so that
// run() does no string search inside the timed region.
const Variant<ConvProblem>& conv_variant(DType dtype) {
  static const Variant<ConvProblem>& f16 = find_conv_variant(DType::f16);
  static const Variant<ConvProblem>& f32 = find_conv_variant(DType::f32);
  return dtype == DType::f32 ? f32 : f16;
}

// ---- 16-byte vectors of elements ----------------------------------------------------
template <class Element> struct alignas(16) Vec {
  static constexpr int kSize = 16 / sizeof(Element);  // 4 floats or 8 halves
  Element v[kSize];
};

// ---- kernel 2: scale, bias, ReLU, in place ------------------------------------------
// Contract: y_full [pixels, K] (NHWC), scale/bias [K]. kVectorized: thread handles
// 16-byte chunks; requires K % Vec::kSize == 0 (a chunk never wraps past channel K−1)
// and a 16-byte aligned y_full. Otherwise element by element. Grid-stride.
template <class Element, bool kVectorized>
__global__ void scale_bias_relu(int64_t count, int K, const Element* __restrict__ scale,
                                const Element* __restrict__ bias, Element* __restrict__ y_full) {
  const int64_t start = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, step = int64_t(gridDim.x) * blockDim.x;
  if constexpr (kVectorized) {
    using V = Vec<Element>;
    V* chunks = reinterpret_cast<V*>(y_full);
    for (int64_t c = start; c < count / V::kSize; c += step) {
      V v = chunks[c];
      const int k0 = int((c * V::kSize) % K);
#pragma unroll
      for (int e = 0; e < V::kSize; ++e)
        v.v[e] = gpu::from_float<Element>(
            fmaxf(gpu::to_float(v.v[e]) * gpu::to_float(scale[k0 + e]) + gpu::to_float(bias[k0 + e]), 0.f));
      chunks[c] = v;
    }
  } else {
    for (int64_t i = start; i < count; i += step) {
      const int k = int(i % K);
      y_full[i] = gpu::from_float<Element>(fmaxf(gpu::to_float(y_full[i]) * gpu::to_float(scale[k]) + gpu::to_float(bias[k]), 0.f));
    }
  }
}

// ---- kernel 3: 2x2 max-pool, stride 2 ----------------------------------------------
// Contract: y_full [N, P, Q, K] → y [N, P/2, Q/2, K], NHWC, floor. One thread per
// (pooled pixel, chunk of channels): kVectorized chunks are 16 bytes (K % kSize == 0,
// both tensors 16-byte aligned), otherwise single channels. Grid-stride.
template <class Element, bool kVectorized>
__global__ void maxpool2x2(int N, int P, int Q, int K, const Element* __restrict__ y_full, Element* __restrict__ y) {
  const int P2 = P / 2, Q2 = Q / 2;
  constexpr int kLanes = kVectorized ? Vec<Element>::kSize : 1;
  const int chunks_per_pixel = K / kLanes;
  const int64_t count = int64_t(N) * P2 * Q2 * chunks_per_pixel;
  const int64_t start = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = start; i < count; i += step) {
    const int k = int(i % chunks_per_pixel) * kLanes;
    const int64_t pooled = i / chunks_per_pixel;  // (n·P2 + pi)·Q2 + qi
    const int qi = int(pooled % Q2), pi = int(pooled / Q2 % P2);
    const int64_t n = pooled / (int64_t(P2) * Q2);
    const int64_t top_left = ((n * P + 2 * pi) * Q + 2 * qi) * K + k;  // y_full[n, 2pi, 2qi, k]
    const int64_t corner[4] = {top_left, top_left + K, top_left + int64_t(Q) * K, top_left + int64_t(Q) * K + K};
    if constexpr (kVectorized) {
      using V = Vec<Element>;
      V best = *reinterpret_cast<const V*>(y_full + corner[0]);
#pragma unroll
      for (int c = 1; c < 4; ++c) {
        const V v = *reinterpret_cast<const V*>(y_full + corner[c]);
#pragma unroll
        for (int e = 0; e < V::kSize; ++e)
          best.v[e] = gpu::from_float<Element>(fmaxf(gpu::to_float(best.v[e]), gpu::to_float(v.v[e])));
      }
      *reinterpret_cast<V*>(y + pooled * K + k) = best;
    } else {
      float best = gpu::to_float(y_full[corner[0]]);
#pragma unroll
      for (int c = 1; c < 4; ++c) best = fmaxf(best, gpu::to_float(y_full[corner[c]]));
      y[pooled * K + k] = gpu::from_float<Element>(best);
    }
  }
}

unsigned blocks_for(int64_t items) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(gpu::ceil_div<int64_t>(items, kThreads), kMaxBlocks)));
}

std::size_t full_bytes(const ConvPoolProblem& p) {
  const std::size_t b = std::size_t(p.full_elems()) * dtype_size(p.dtype);
  return (b + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// Workspace: [ y_full | the conv variant's own workspace, if it has one ].
std::size_t workspace_bytes(const ConvPoolProblem& p) {
  const Variant<ConvProblem>& conv = conv_variant(p.dtype);
  return full_bytes(p) + (conv.workspace_bytes ? conv.workspace_bytes(p.conv()) : 0);
}

bool supports(const ConvPoolProblem& p) {
  if (p.dtype != DType::f32 && p.dtype != DType::f16) return false;
  const Variant<ConvProblem>& conv = conv_variant(p.dtype);
  return !conv.supports || conv.supports(p.conv());  // the passes index with int64, any size
}

double model_bytes(const ConvPoolProblem& p) { return p.unfused_bytes(); }

void run(const ConvPoolProblem& p, const Args<ConvPoolProblem>& a) {
  const ConvProblem c = p.conv();
  void* y_full = a.workspace;  // [N, P, Q, K] NHWC, problem dtype: the intermediate in HBM
  void* conv_workspace = static_cast<char*>(a.workspace) + full_bytes(p);
  conv_variant(p.dtype).run(c, Args<ConvProblem>{a.x, a.w, y_full, conv_workspace});  // kernel 1

  gpu::visit_dtype<float, __half>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    auto* full = static_cast<Element*>(y_full);
    auto* y = static_cast<Element*>(a.y);
    const auto* scale = static_cast<const Element*>(a.scale);
    const auto* bias = static_cast<const Element*>(a.bias);
    const int64_t count = int64_t(p.full_elems());
    const bool vectorized = p.K % Vec<Element>::kSize == 0 && gpu::aligned_16(full) && gpu::aligned_16(y);
    const int lanes = vectorized ? Vec<Element>::kSize : 1;
    const int64_t pool_items = int64_t(p.N) * p.P2() * p.Q2() * (p.K / lanes);
    if (vectorized) {
      scale_bias_relu<Element, true><<<blocks_for(count / lanes), kThreads>>>(count, p.K, scale, bias, full);
      gpu::check_launch("scale_bias_relu");
      maxpool2x2<Element, true><<<blocks_for(pool_items), kThreads>>>(p.N, c.P(), c.Q(), p.K, full, y);
      gpu::check_launch("maxpool2x2");
    } else {
      scale_bias_relu<Element, false><<<blocks_for(count), kThreads>>>(count, p.K, scale, bias, full);
      gpu::check_launch("scale_bias_relu");
      maxpool2x2<Element, false><<<blocks_for(pool_items), kThreads>>>(p.N, c.P(), c.Q(), p.K, full, y);
      gpu::check_launch("maxpool2x2");
    }
  });
}

const Register<ConvPoolProblem> reg{{
    .name = "07a_layer_by_layer",
    .device = Device::gpu,
    .lesson = 7,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "conv2d/gpu/04b_implicit_gemm_tensor_core (f16) or 04a_implicit_gemm (f32), then a scale/bias/ReLU kernel, then a 2x2 max-pool kernel; "
            "y_full crosses HBM 4 times",
    .model_bytes = model_bytes,
}};

}  // namespace
}  // namespace convlab
