// gpu/lib/mbconv_layers.cuh — the MBConv block's SE gate kernel (shared by every
// GPU MBConv rung) and the block as a sequence of layers, for the suite's own
// layer-by-layer rung (11a) and the vendor baseline (cudnn): both call
// registered gemm and conv2d rungs by name and add the same passes between them.
// Header-only, registers nothing.
//
//   e  = gemm(x, We);  e = φ(e + be)                 [N·H·W, hidden]   (absent when expand == 1)
//   d  = depthwise(e); d = φ(d + bd)                 [N·P·Q, hidden]   a conv2d rung, groups = hidden
//   s  = Σ_pixels d  per image                       [N, hidden]       pool_kernel (fp32)
//   g  = sigmoid(ψ(s/PQ·W1 + b1)·W2 + b2)            [N, hidden]       se_gate_kernel (fp32)
//   d *= g                                           one pass
//   y  = gemm(d, Wp);  y += bp (+ x)                 [N·P·Q, C_out]    one pass
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_epilogue.cuh"
#include "gpu/lib/hopper/dependent_launch.cuh"
#include "gpu/lib/mbconv_tile.hpp"  // se_gate_threads, se_gate_shared_bytes
#include "ops/conv2d.hpp"
#include "ops/gemm.hpp"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

// ---- the SE gate ------------------------------------------------------------------------
//
// One block per image n. partial holds `parts` rows of channel sums per image,
// [N, parts, hidden] fp32 (the fused rungs write one row per tile, the layer
// rungs one per image); they are added in row order (deterministic), then
//   m = sum / (P·Q),  z = ψ(m·W1 + b1) [Cr],  gate = sigmoid(z·W2 + b2) [hidden], fp32.
// The FCs are tiny (2·hidden·Cr MACs an image) and their weights are L2 hits, so
// the kernel's time is load latency times the length of each thread's chain of
// dependent loads. Both FCs therefore read 8 weights per load (16 bytes, along
// the weight's rows) and split the reduction dimension over as many threads as
// the block has to spare:
//   FC1, W1 [hidden][Cr]: task (u, jj) makes outputs 8u .. 8u + 7 over inputs
//        j = jj, jj + T, ... (T = kBlockThreads / ⌈Cr/8⌉ row groups), then the T partials of
//        each output are added in group order;
//   FC2, W2 [Cr][hidden]: task (v, rr) makes channels 8v .. 8v + 7 over
//        r = rr, rr + R, ..., then the R partials are added in order.
// The block has kBlockThreads threads, se_gate_threads(hidden, Cr) (mbconv_tile.hpp): 256 where
// every chain is short at 256 (hidden 144, Cr 6: 1 load each), 512 where it is not (hidden 1152,
// Cr 48: 14 loads for FC1 and 16 for FC2 at 512, twice that at 256).
// gate (optional): fp32, [N, hidden]. gate16 (optional): the gate in the
// problem's 16-bit type, rows of ld16 ≥ hidden elements, channels
// hidden .. ld16 − 1 zero — what 11c's pass 2 copies beside D with 16-byte copies.
// vec1, vec2: W1's and W2's rows are whole 16-byte pieces (Cr, hidden multiples of 8, aligned).
// Block: kBlockThreads threads. Dynamic shared memory: se_gate_shared_bytes(p).
// se_gate<Element, true> launches it as a programmatic dependent of the kernel before it
// (gpu/lib/hopper/dependent_launch.cuh): it waits for that kernel's sums inside.
// Eight consecutive weights of a row of `len`, from column col (zeros past the row's end);
// vec: one 16-byte load (two for fp32).
template <class Element>
__device__ __forceinline__ void load_eight(const Element* row, int col, int len, bool vec, float (&w)[8]) {
  if constexpr (sizeof(Element) == 4) {
    if (vec) {
      const float4 lo = *reinterpret_cast<const float4*>(row + col), hi = *reinterpret_cast<const float4*>(row + col + 4);
      w[0] = lo.x, w[1] = lo.y, w[2] = lo.z, w[3] = lo.w, w[4] = hi.x, w[5] = hi.y, w[6] = hi.z, w[7] = hi.w;
      return;
    }
  } else if (vec) {
    const uint4 q = *reinterpret_cast<const uint4*>(row + col);
    const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float2 f;
      if constexpr (std::is_same_v<Element, __half>) f = __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
      else f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&words[i]));
      w[2 * i] = f.x, w[2 * i + 1] = f.y;
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) w[i] = col + i < len ? to_float(row[col + i]) : 0.0f;
}

// One image's gate, by the kBlockThreads threads of a block (every thread calls it: it has barriers),
// with `shared` (se_gate_red_floats + hidden + cr floats) as its scratch. kCoherent: partial was
// written by other CTAs of the running kernel (lesson 11's 11k, after a cluster barrier), so it is
// read through L2 (ld.global.cg), not the read-only path.
template <class Element, int kBlockThreads, bool kCoherent = false>
__device__ __forceinline__ void se_gate_image(int n, int hidden, int cr, int parts, float inv_pixels, FfnActivation act,
                                              const float* partial, const Element* __restrict__ w1,
                                              const Element* __restrict__ b1, const Element* __restrict__ w2,
                                              const Element* __restrict__ b2, bool vec1, bool vec2, float* gate,
                                              Element* gate16, int ld16, float* shared) {
  float* mean = shared;      // [hidden]
  float* z = mean + hidden;  // [cr]
  float* red = z + cr;       // se_gate_red_floats
  const int tid = threadIdx.x;
  const float* rows = partial + std::ptrdiff_t(n) * parts * hidden;
  for (int j = tid; j < hidden; j += kBlockThreads) {
    float s = 0.0f;
#pragma unroll 4
    for (int t = 0; t < parts; ++t) {
      const float* at = rows + std::ptrdiff_t(t) * hidden + j;
      s += kCoherent ? __ldcg(at) : __ldg(at);
    }
    mean[j] = s * inv_pixels;
  }
  __syncthreads();

  // FC1: z = ψ(m·W1 + b1).
  const int units = (cr + 7) / 8, groups = max(1, kBlockThreads / units);
  for (int task = tid; task < units * groups; task += kBlockThreads) {
    const int u = task % units, jj = task / units;
    float acc[8] = {};
#pragma unroll 4
    for (int j = jj; j < hidden; j += groups) {
      float w[8];
      load_eight(w1 + std::ptrdiff_t(j) * cr, 8 * u, cr, vec1, w);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = fmaf(mean[j], w[i], acc[i]);
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) red[jj * 8 * units + 8 * u + i] = acc[i];
  }
  __syncthreads();
  for (int r = tid; r < cr; r += kBlockThreads) {
    float s = 0.0f;
    for (int jj = 0; jj < groups; ++jj) s += red[jj * 8 * units + r];
    z[r] = ffn::activate(act, s + to_float(b1[r]));
  }
  __syncthreads();

  // FC2: gate = sigmoid(z·W2 + b2), written once per channel.
  const auto finish = [&](int j, float v) {
    const float g = 1.0f / (1.0f + __expf(-(v + to_float(b2[j]))));
    if (gate) gate[std::ptrdiff_t(n) * hidden + j] = g;
    if (gate16) gate16[std::ptrdiff_t(n) * ld16 + j] = from_float<Element>(g);
  };
  const int pieces = (hidden + 7) / 8, splits = max(1, kBlockThreads / pieces);
  for (int task = tid; task < pieces * splits; task += kBlockThreads) {
    const int v = task % pieces, rr = task / pieces;
    float acc[8] = {};
#pragma unroll 4
    for (int r = rr; r < cr; r += splits) {
      float w[8];
      load_eight(w2 + std::ptrdiff_t(r) * hidden, 8 * v, hidden, vec2, w);
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] = fmaf(z[r], w[i], acc[i]);
    }
    if (splits == 1) {
#pragma unroll
      for (int i = 0; i < 8; ++i)
        if (8 * v + i < hidden) finish(8 * v + i, acc[i]);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) red[rr * 8 * pieces + 8 * v + i] = acc[i];
    }
  }
  if (splits > 1) {
    __syncthreads();
    for (int j = tid; j < hidden; j += kBlockThreads) {
      float s = 0.0f;
      for (int rr = 0; rr < splits; ++rr) s += red[rr * 8 * pieces + j];
      finish(j, s);
    }
  }
  if (gate16)
    for (int j = hidden + tid; j < ld16; j += kBlockThreads) gate16[std::ptrdiff_t(n) * ld16 + j] = from_float<Element>(0.0f);
}

template <class Element, int kBlockThreads, bool kDependent>
__global__ void __launch_bounds__(kBlockThreads, 1) se_gate_kernel(int hidden, int cr, int parts, float inv_pixels,
                                                               FfnActivation act, const float* __restrict__ partial,
                                                               const Element* __restrict__ w1,
                                                               const Element* __restrict__ b1,
                                                               const Element* __restrict__ w2,
                                                               const Element* __restrict__ b2, bool vec1, bool vec2,
                                                               float* __restrict__ gate, Element* __restrict__ gate16,
                                                               int ld16) {
  extern __shared__ float se_shared[];
  // As a dependent of pass 1 (the store plan): pass 2 may be scheduled now, and nothing here is
  // read before pass 1 has completed.
  if constexpr (kDependent) {
    hopper::allow_dependent_launch();
    hopper::wait_for_prerequisite_grid();
  }
  se_gate_image<Element, kBlockThreads>(int(blockIdx.x), hidden, cr, parts, inv_pixels, act, partial, w1, b1, w2, b2,
                                        vec1, vec2, gate, gate16, ld16, se_shared);
}

template <class Element, bool kDependent = false>
void se_gate(const MBConvProblem& p, int parts, const float* partial, const void* w1, const void* b1, const void* w2,
             const void* b2, float* gate, void* gate16 = nullptr, int ld16 = 0) {
  const bool vec1 = p.se_channels() % 8 == 0 && aligned_16(w1), vec2 = p.hidden() % 8 == 0 && aligned_16(w2);
  const auto go = [&](auto kernel, int threads) {
    allow_dynamic_shared(kernel, se_gate_shared_bytes(p), "mbconv se_gate_kernel");
    hopper::launch_kernel(kDependent, kernel, dim3(unsigned(p.N)), dim3(unsigned(threads)), se_gate_shared_bytes(p),
                          "mbconv se_gate_kernel", p.hidden(), p.se_channels(), parts,
                          float(1.0 / (double(p.P()) * p.Q())), p.activation, partial,
                          static_cast<const Element*>(w1), static_cast<const Element*>(b1),
                          static_cast<const Element*>(w2), static_cast<const Element*>(b2), vec1, vec2, gate,
                          static_cast<Element*>(gate16), ld16);
  };
  if (se_gate_threads(p.hidden(), p.se_channels()) == kGateThreadsSmall)
    go(se_gate_kernel<Element, kGateThreadsSmall, kDependent>, kGateThreadsSmall);
  else
    go(se_gate_kernel<Element, kGateThreadsLarge, kDependent>, kGateThreadsLarge);
}

// ---- the layer passes ---------------------------------------------------------------------

// sums[n, j] = Σ over image n's pixels of d[n, pixel, j]: one thread per (n, j),
// consecutive threads on consecutive channels (coalesced), fixed order.
template <class Element>
__global__ void pool_kernel(int N, int64_t pixels, int hidden, const Element* __restrict__ d, float* __restrict__ sums) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= int64_t(N) * hidden) return;
  const int n = int(i / hidden), j = int(i % hidden);
  const Element* image = d + int64_t(n) * pixels * hidden + j;
  float s = 0.0f;
  for (int64_t k = 0; k < pixels; ++k) s += to_float(image[k * hidden]);
  sums[i] = s;
}

// d[n, pixel, j] *= gate[n, j].
template <class Element>
__global__ void scale_kernel(int64_t count, int64_t image_elems, int hidden, Element* __restrict__ d,
                             const float* __restrict__ gate) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    d[i] = from_float<Element>(to_float(d[i]) * gate[(i / image_elems) * hidden + i % hidden]);
}

// y[i, o] += bp[o] (+ x[i, o] when x is given: the residual, C_out == C).
template <class Element>
__global__ void bias_residual_kernel(int64_t rows, int cols, Element* __restrict__ y, const Element* __restrict__ bias,
                                     const Element* __restrict__ x) {
  const int64_t count = rows * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    float v = to_float(y[i]) + to_float(bias[i % cols]);
    if (x) v += to_float(x[i]);
    y[i] = from_float<Element>(v);
  }
}

inline unsigned elementwise_blocks(int64_t items) {
  constexpr int64_t kMaxBlocks = 132 * 16;  // a full H200 at 256 threads per block
  return unsigned(std::max<int64_t>(1, std::min(ceil_div<int64_t>(items, 256), kMaxBlocks)));
}

// ---- the rungs it calls ----------------------------------------------------------------------

template <class P> const Variant<P>& first_supporting(const std::vector<std::string>& names, const P& p,
                                                      const char* op) {
  for (const std::string& name : names) {
    const Variant<P>* v = find_variant<P>(Device::gpu, name);
    if (v && (!v->supports || v->supports(p))) return *v;
  }
  throw Unsupported(std::string("mbconv: no registered ") + op + " rung takes " + OpTraits<P>::spec(p));
}


// Which rungs a plan uses: conv2d (depthwise) names in order of preference, gemm names likewise.
struct Rungs {
  std::vector<std::string> conv, gemm;
};

struct Layers {
  const Variant<ConvProblem>* depthwise;
  const Variant<GemmProblem>* gemm_expand;  // nullptr without an expand layer
  const Variant<GemmProblem>* gemm_project;
  ConvProblem dw;
  GemmProblem expand, project;
  // Workspace: [ e (elements) | d (elements) | sums, gates (floats) | rung scratch (bytes) ]
  std::size_t e, d, sums, gates, scratch, elem;

  Layers(const MBConvProblem& p, const Rungs& r) {
    dw.N = p.N, dw.H = p.H, dw.W = p.W, dw.C = p.hidden(), dw.K = p.hidden(), dw.R = p.kernel, dw.S = p.kernel;
    dw.stride = p.stride, dw.pad = p.kernel / 2, dw.groups = p.hidden(), dw.dtype = p.dtype;
    expand = {int(p.input_pixels()), p.hidden(), p.C, p.dtype};
    project = {int(p.output_pixels()), p.C_out, p.hidden(), p.dtype};
    depthwise = &first_supporting(r.conv, dw, "conv2d");
    gemm_expand = p.has_expand() ? &first_supporting(r.gemm, expand, "gemm") : nullptr;
    gemm_project = &first_supporting(r.gemm, project, "gemm");
    const auto up = [](double n) { return (std::size_t(n) + 127) / 128 * 128; };
    elem = dtype_size(p.dtype);
    e = up(p.e_elems());
    d = up(p.d_elems());
    sums = gates = up(p.pooled_elems());
    scratch = std::max({workspace_of(*depthwise, dw), workspace_of(*gemm_project, project),
                        gemm_expand ? workspace_of(*gemm_expand, expand) : std::size_t(0)});
  }
  std::size_t bytes() const { return (e + d) * elem + (sums + gates) * sizeof(float) + scratch; }
};

inline bool layers_support(const MBConvProblem& p, const Rungs& r) {
  if (p.output_pixels() > 2147483647.0 || p.input_pixels() > 2147483647.0 || !se_gate_fits(p)) return false;
  try {
    Layers l(p, r);
    (void)l;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

inline void run_layers(const MBConvProblem& p, const Args<MBConvProblem>& a, const Rungs& r) {
  const Layers l(p, r);
  unsigned char* base = static_cast<unsigned char*>(a.workspace);
  void* e = base;
  void* d = base + l.e * l.elem;
  float* sums = reinterpret_cast<float*>(base + (l.e + l.d) * l.elem);
  float* gates = sums + l.sums;
  void* scratch = gates + l.gates;
  const int64_t out_pixels = int64_t(p.output_pixels()), image_pixels = int64_t(p.P()) * p.Q();
  const int Hd = p.hidden();

  if (p.has_expand()) {
    l.gemm_expand->run(l.expand, {a.x, a.expand_w, e, scratch});
    visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
      using E = typename decltype(tag)::type;
      ffn::bias_activate(int64_t(p.input_pixels()), Hd, static_cast<E*>(e), static_cast<const E*>(a.expand_b),
                         p.activation);
    });
  }
  l.depthwise->run(l.dw, {p.has_expand() ? e : a.x, a.dw_w, d, scratch});
  visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    ffn::bias_activate(out_pixels, Hd, static_cast<E*>(d), static_cast<const E*>(a.dw_b), p.activation);
    if (p.has_se()) {
      pool_kernel<E><<<unsigned(ceil_div<int64_t>(int64_t(p.N) * Hd, 256)), 256>>>(p.N, image_pixels, Hd,
                                                                                static_cast<const E*>(d), sums);
      check_launch("mbconv pool_kernel");
      se_gate<E>(p, 1, sums, a.se1_w, a.se1_b, a.se2_w, a.se2_b, gates);
      scale_kernel<E><<<elementwise_blocks(out_pixels * Hd), 256>>>(out_pixels * Hd, image_pixels * Hd, Hd,
                                                                    static_cast<E*>(d), gates);
      check_launch("mbconv scale_kernel");
    }
  });
  l.gemm_project->run(l.project, {d, a.project_w, a.y, scratch});
  visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    bias_residual_kernel<E><<<elementwise_blocks(out_pixels * p.C_out), 256>>>(
        out_pixels, p.C_out, static_cast<E*>(a.y), static_cast<const E*>(a.project_b),
        p.has_residual() ? static_cast<const E*>(a.x) : nullptr);
    check_launch("mbconv bias_residual_kernel");
  });
}

}  // namespace convlab::gpu::mbconv
