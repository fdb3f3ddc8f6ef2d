// gpu/lib/convfirst_layer_by_layer.cuh — the ConvFirst block as a sequence of
// layers on the GPU (Fig. 7a), for the suite's own layer-by-layer rung (10a)
// and the vendor baseline (cudnn): both call registered conv2d and gemm rungs
// by name and add the same element-wise passes between them. Header-only,
// registers nothing.
//
//   t  = conv(x)                                [N·H·W, C]      a conv2d rung (grouped, pad 1)
//   t  = t + conv_b                             bias pass
//   (stride 2) t' = blurpool(t), s = blurpool(x)
//   h  = gemm(t or t', U);  h = φ(h + a)        [N·P·Q, hidden] the hidden tensor, in DRAM
//   y  = gemm(h, V)                             [N·P·Q, C_out]
//   y += b + x  |  b + s  |  b + bsc + gemm(s, Wsc)              one pass, the shortcut
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/conv2d.hpp"
#include "ops/convfirst.hpp"
#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_epilogue.cuh"

namespace convlab::gpu::convfirst {

// ---- element-wise kernels -----------------------------------------------------------------

// out[n, p, q, c] = Σ_{i,j<3} [1 2 1]_i [1 2 1]_j / 16 · in[n, 2p+i−1, 2q+j−1, c], zero outside
// the image. One thread per output element, fp32 sums, one rounding.
template <class Element>
__global__ void blurpool_kernel(int N, int H, int W, int C, const Element* __restrict__ in, Element* __restrict__ out) {
  const int P = (H - 1) / 2 + 1, Q = (W - 1) / 2 + 1;
  const int64_t count = int64_t(N) * P * Q * C;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int c = int(i % C);
    const int64_t pixel = i / C;
    const int q = int(pixel % Q), p = int((pixel / Q) % P), n = int(pixel / (int64_t(P) * Q));
    float acc = 0.0f;
    for (int r = 0; r < 3; ++r) {
      const int h = 2 * p + r - 1;
      if (h < 0 || h >= H) continue;
      for (int s = 0; s < 3; ++s) {
        const int w = 2 * q + s - 1;
        if (w < 0 || w >= W) continue;
        const float tap = float((r == 1 ? 2 : 1) * (s == 1 ? 2 : 1)) / 16.0f;
        acc += tap * to_float(in[((int64_t(n) * H + h) * W + w) * C + c]);
      }
    }
    out[i] = from_float<Element>(acc);
  }
}

// y[i, c] += b1[c] + (b2 ? b2[c] : 0) + add[i, c], rows × cols dense, fp32 sum, one rounding.
template <class Element>
__global__ void shortcut_kernel(int64_t rows, int cols, Element* __restrict__ y, const Element* __restrict__ b1,
                                const Element* __restrict__ b2, const Element* __restrict__ add) {
  const int64_t count = rows * cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const int c = int(i % cols);
    float v = to_float(y[i]) + to_float(b1[c]) + to_float(add[i]);
    if (b2) v += to_float(b2[c]);
    y[i] = from_float<Element>(v);
  }
}

inline unsigned elementwise_blocks(int64_t items) {
  constexpr int64_t kMaxBlocks = 132 * 16;  // a full H200 at 256 threads per block
  return unsigned(std::max<int64_t>(1, std::min(ceil_div<int64_t>(items, 256), kMaxBlocks)));
}

// ---- the rungs it calls ----------------------------------------------------------------------

// The first of `names` (device gpu) that is registered and supports p.
template <class P> const Variant<P>& first_supporting(const std::vector<std::string>& names, const P& p,
                                                      const char* op) {
  for (const std::string& name : names) {
    const Variant<P>* v = find_variant<P>(Device::gpu, name);
    if (v && (!v->supports || v->supports(p))) return *v;
  }
  throw Unsupported(std::string("convfirst: no registered ") + op + " rung takes " + OpTraits<P>::spec(p));
}


inline ConvProblem conv_layer(const ConvFirstProblem& p) {
  ConvProblem c;
  c.N = p.N, c.H = p.H, c.W = p.W, c.C = p.C, c.K = p.C, c.R = 3, c.S = 3, c.stride = 1, c.pad = 1;
  c.groups = p.groups(), c.dtype = p.dtype;
  return c;
}

// Which rungs a plan uses: conv2d names in order of preference, gemm names likewise.
struct Rungs {
  std::vector<std::string> conv, gemm;
};

struct Layers {
  const Variant<ConvProblem>* conv;
  const Variant<GemmProblem>* gemm_expand;
  const Variant<GemmProblem>* gemm_project;
  const Variant<GemmProblem>* gemm_shortcut;  // projection only
  ConvProblem conv_p;
  GemmProblem expand, project, shortcut;
  // Workspace, in elements of the problem's type then bytes:
  //   [ t: N·H·W·C | t': N·P·Q·C | s: N·P·Q·C | h: N·P·Q·hidden | sc: N·P·Q·C_out | rung scratch ]
  std::size_t t, tp, s, h, sc, scratch, elem;

  Layers(const ConvFirstProblem& p, const Rungs& r) {
    const int pixels = int(p.output_pixels());
    conv_p = conv_layer(p);
    expand = {pixels, p.hidden, p.C, p.dtype};
    project = {pixels, p.C_out, p.hidden, p.dtype};
    shortcut = {pixels, p.C_out, p.C, p.dtype};
    conv = &first_supporting(r.conv, conv_p, "conv2d");
    gemm_expand = &first_supporting(r.gemm, expand, "gemm");
    gemm_project = &first_supporting(r.gemm, project, "gemm");
    gemm_shortcut = p.has_projection() ? &first_supporting(r.gemm, shortcut, "gemm") : nullptr;
    const auto up = [](double n) { return (std::size_t(n) + 127) / 128 * 128; };  // 256-byte alignment at 2 bytes
    elem = dtype_size(p.dtype);
    t = up(p.t_elems());
    tp = s = p.stride == 2 ? up(p.output_pixels() * p.C) : 0;
    h = up(p.hidden_elems());
    sc = p.has_projection() ? up(p.y_elems()) : 0;
    scratch = std::max({workspace_of(*conv, conv_p), workspace_of(*gemm_expand, expand),
                        workspace_of(*gemm_project, project),
                        gemm_shortcut ? workspace_of(*gemm_shortcut, shortcut) : std::size_t(0)});
  }
  std::size_t bytes() const { return (t + tp + s + h + sc) * elem + scratch; }
};

inline bool layers_support(const ConvFirstProblem& p, const Rungs& r) {
  if (p.group_width != 8 || p.output_pixels() > 2147483647.0 || p.input_pixels() * p.C > 9.0e15) return false;
  try {
    Layers l(p, r);
    (void)l;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

inline void run_layers(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a, const Rungs& r) {
  const Layers l(p, r);
  unsigned char* base = static_cast<unsigned char*>(a.workspace);
  void* t = base;
  void* tp = base + l.t * l.elem;
  void* s = base + (l.t + l.tp) * l.elem;
  void* h = base + (l.t + l.tp + l.s) * l.elem;
  void* sc = base + (l.t + l.tp + l.s + l.h) * l.elem;
  void* scratch = base + (l.t + l.tp + l.s + l.h + l.sc) * l.elem;
  const int64_t pixels = int64_t(p.output_pixels());

  l.conv->run(l.conv_p, {a.x, a.conv_w, t, scratch});
  visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    ffn::bias_activate(int64_t(p.input_pixels()), p.C, static_cast<E*>(t), static_cast<const E*>(a.conv_b),
                       FfnActivation::identity);
    if (p.stride == 2) {
      blurpool_kernel<E><<<elementwise_blocks(pixels * p.C), 256>>>(p.N, p.H, p.W, p.C, static_cast<const E*>(t),
                                                                   static_cast<E*>(tp));
      check_launch("convfirst blurpool_kernel");
    }
  });
  l.gemm_expand->run(l.expand, {p.stride == 2 ? tp : t, a.u, h, scratch});
  visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    ffn::bias_activate(pixels, p.hidden, static_cast<E*>(h), static_cast<const E*>(a.a), p.activation);
  });
  l.gemm_project->run(l.project, {h, a.v, a.y, scratch});
  if (p.has_projection()) {
    visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
      using E = typename decltype(tag)::type;
      blurpool_kernel<E><<<elementwise_blocks(pixels * p.C), 256>>>(p.N, p.H, p.W, p.C, static_cast<const E*>(a.x),
                                                                   static_cast<E*>(s));
      check_launch("convfirst blurpool_kernel");
    });
    l.gemm_shortcut->run(l.shortcut, {s, a.shortcut_w, sc, scratch});
  }
  visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* add = static_cast<const E*>(a.x);
    if (p.stride == 2 && !p.has_projection()) {
      blurpool_kernel<E><<<elementwise_blocks(pixels * p.C), 256>>>(p.N, p.H, p.W, p.C, static_cast<const E*>(a.x),
                                                                   static_cast<E*>(s));
      check_launch("convfirst blurpool_kernel");
      add = static_cast<const E*>(s);
    }
    if (p.has_projection()) add = static_cast<const E*>(sc);
    shortcut_kernel<E><<<elementwise_blocks(pixels * p.C_out), 256>>>(
        pixels, p.C_out, static_cast<E*>(a.y), static_cast<const E*>(a.b), static_cast<const E*>(a.shortcut_b), add);
    check_launch("convfirst shortcut_kernel");
  });
}

}  // namespace convlab::gpu::convfirst
