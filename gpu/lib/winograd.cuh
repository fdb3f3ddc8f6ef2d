// gpu/lib/winograd.cuh — lesson 05's GPU Winograd convolution F(m×m, 3×3),
// shared by gpu/conv2d/05a_winograd_f2x2_3x3.cu (m = 2) and
// 05b_winograd_f4x4_3x3.cu (m = 4). Header-only, registers nothing.
//
// The CPU rungs' four steps (cpu/lib/winograd_cpu.hpp), as four launches on
// the default stream, α = m + 2, e = (ξ, ν) one of the α² points:
//
//   1. transform_filters   U[e][c][k] = (G g_kc Gᵀ)[e]            one thread per (c, k)
//   2. transform_inputs    V[e][t][c] = (Bᵀ d_tc B)[e]            one thread per (tile t, channel c)
//   3. α² GEMMs, one launch M[e] = V[e] · U[e]  [tiles × C]·[C × K]  lesson 03's SGEMM, blockIdx.z = e
//   4. transform_outputs   y[tile t, k] = (Aᵀ M[:, t, k] A)        one thread per (tile t, channel k)
//
// Transform code: the matrices come from the CPU's header
// (cpu/lib/winograd_transforms.hpp), read at compile time: static_for
// hands each loop index as a type, so T::BT[i][k] is a constant expression,
// `if constexpr` drops the zero terms and ±1 become plain adds. The loops
// below read like the matrix products they are; the compiled code is the
// hand-expanded transform.
//
// Thread mapping and memory: consecutive threads take consecutive channels
// of one tile, so every load of x (NHWC) and every store of V (c innermost)
// is coalesced, and likewise k for M and y. Neighbouring tiles overlap by two
// rows/columns of x; the overlap is re-read from L2, not DRAM.
//
// Edge duties: input pixels outside the image (padding, the overhang of the
// last tile row/column) are read as 0; outputs at p ≥ P or q ≥ Q are not
// stored. Every kernel is a grid-stride loop over int64 indices, so any
// tiles · C fits; the GEMM counts rows in int and its grid's y dimension is
// 16-bit: supports() keeps tiles ≤ 65535 · 128.
#pragma once

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "ops/conv2d.hpp"
#include "cpu/lib/winograd_transforms.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/sgemm_double_buffered.cuh"

namespace convlab::gpu::winograd {

using convlab::winograd::Transform;

// ---- tunables ----------------------------------------------------------------------
inline constexpr int kThreads = 256;                     // per transform block
inline constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // grid-stride beyond this many blocks
inline constexpr std::size_t kAlignFloats = 64;          // every workspace region starts 256-byte aligned
static_assert(kThreads % 32 == 0, "whole warps, so a warp's channels are consecutive");
static_assert(kAlignFloats % 4 == 0, "the SGEMM's float4 path needs 16-byte aligned operands");

// A loop index known at compile time: Index<I>::value in constant
// expressions, and an int (on host and device) everywhere else.
template <int I> struct Index {
  static constexpr int value = I;
  __host__ __device__ constexpr operator int() const { return I; }
};
// Calls f(Index<0>{}), …, f(Index<N − 1>{}): a fully unrolled loop whose
// index is a compile-time constant inside the body.
template <int N, class F> __device__ __forceinline__ void static_for(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (f(Index<I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

// The tile grid of a problem: tiles_h × tiles_w tiles of m × m outputs per image.
struct TileGrid {
  int H, W, C, K, P, Q, pad, tiles_h, tiles_w;
  int64_t tiles;  // N · tiles_h · tiles_w
};

template <int m> TileGrid tile_grid(const ConvProblem& p) {
  TileGrid g{p.H, p.W, p.C, p.K, p.P(), p.Q(), p.pad, (p.P() + m - 1) / m, (p.Q() + m - 1) / m, 0};
  g.tiles = int64_t(p.N) * g.tiles_h * g.tiles_w;
  return g;
}

inline std::size_t round_up(std::size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

// Workspace: [U: α²·C·K | V: α²·tiles·C | M: α²·tiles·K] floats.
template <int m> struct WorkspaceLayout {
  std::size_t u, v, mm;  // float offsets
  std::size_t total;     // floats
  explicit WorkspaceLayout(const ConvProblem& p) {
    constexpr std::size_t points = (m + 2) * (m + 2);
    const std::size_t tiles = std::size_t(tile_grid<m>(p).tiles);
    u = 0;
    v = u + round_up(points * p.C * p.K);
    mm = v + round_up(points * tiles * p.C);
    total = mm + round_up(points * tiles * p.K);
  }
};
template <int m> std::size_t workspace_bytes(const ConvProblem& p) {
  return WorkspaceLayout<m>(p).total * sizeof(float);
}

template <int m> bool supports(const ConvProblem& p) {
  if (!(p.dtype == DType::f32 || p.dtype == DType::f16)) return false;
  if (p.R != 3 || p.S != 3 || p.stride != 1 || p.groups != 1) return false;
  const int64_t tiles = tile_grid<m>(p).tiles;
  return tiles <= INT_MAX && ceil_div<int64_t>(tiles, double_buffered::kBlockM) <= kMaxGridYZ;
}

inline unsigned blocks_for(int64_t items) {
  return unsigned(std::min(ceil_div<int64_t>(items, kThreads), kMaxBlocks));
}

// ---- step 1: U = G g Gᵀ ------------------------------------------------------------------
// Kernel contract: w [K,3,3,C] KRSC Element; u [α²][C][K] fp32. Thread i
// handles (c, k) = (i / K, i % K): k fastest, so the 16 (or 36) stores of a
// warp are coalesced; the 9 loads are strided by 9·C, but w is read once.
template <int m, class Element>
__global__ void __launch_bounds__(kThreads)
    transform_filters(int C, int K, const Element* __restrict__ w, float* __restrict__ u) {
  using T = Transform<m>;
  constexpr int alpha = T::alpha;
  const int64_t total = int64_t(C) * K;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int k = int(i % K), c = int(i / K);
    float g[3][3];
    static_for<3>([&](auto r) {
      static_for<3>([&](auto s) { g[r][s] = to_float(w[((int64_t(k) * 3 + r) * 3 + s) * C + c]); });
    });
    float gg[alpha][3];  // G g
    static_for<alpha>([&](auto i2) {
      static_for<3>([&](auto s) {
        float acc = 0.f;
        static_for<3>([&](auto r) {
          constexpr int num = T::G_num[decltype(i2)::value][decltype(r)::value];
          if constexpr (num != 0) acc += (float(num) / float(T::G_den)) * g[r][s];
        });
        gg[i2][s] = acc;
      });
    });
    static_for<alpha>([&](auto i2) {  // (G g) Gᵀ
      static_for<alpha>([&](auto j) {
        float acc = 0.f;
        static_for<3>([&](auto s) {
          constexpr int num = T::G_num[decltype(j)::value][decltype(s)::value];
          if constexpr (num != 0) acc += gg[i2][s] * (float(num) / float(T::G_den));
        });
        u[(int64_t(i2 * alpha + j) * C + c) * K + k] = acc;
      });
    });
  }
}

// out = L · in, L an integer table of the transform (rows × inner), in inner × cols.
template <int rows, int inner, int cols, class Table>
__device__ __forceinline__ void left_multiply(const float (&in)[inner][cols], float (&out)[rows][cols]) {
  static_for<rows>([&](auto i) {
    static_for<cols>([&](auto j) {
      float acc = 0.f;
      static_for<inner>([&](auto k) {
        constexpr int coef = Table::at(decltype(i)::value, decltype(k)::value);
        if constexpr (coef == 1) acc += in[k][j];
        else if constexpr (coef == -1) acc -= in[k][j];
        else if constexpr (coef != 0) acc += float(coef) * in[k][j];
      });
      out[i][j] = acc;
    });
  });
}
// out = in · Lᵀ:  out[j][i] = Σ_k in[j][k] · L[i][k]  (the right multiplication by B or A)
template <int rows, int inner, int cols, class Table>
__device__ __forceinline__ void right_multiply_by_transpose(const float (&in)[cols][inner], float (&out)[cols][rows]) {
  static_for<cols>([&](auto j) {
    static_for<rows>([&](auto i) {
      float acc = 0.f;
      static_for<inner>([&](auto k) {
        constexpr int coef = Table::at(decltype(i)::value, decltype(k)::value);
        if constexpr (coef == 1) acc += in[j][k];
        else if constexpr (coef == -1) acc -= in[j][k];
        else if constexpr (coef != 0) acc += float(coef) * in[j][k];
      });
      out[j][i] = acc;
    });
  });
}
template <int m> struct BTable {
  __host__ __device__ static constexpr int at(int i, int k) { return Transform<m>::BT[i][k]; }
};
template <int m> struct ATable {
  __host__ __device__ static constexpr int at(int i, int k) { return Transform<m>::AT[i][k]; }
};

// ---- step 2: V = Bᵀ d B --------------------------------------------------------------------
// Kernel contract: x [N,H,W,C] NHWC Element; v [α²][tiles][C] fp32. Thread i
// handles (tile t, channel c) = (i / C, i % C); tile t = (n·tiles_h + th)·tiles_w + tw
// reads rows th·m − pad … + α − 1 and columns tw·m − pad … + α − 1 of image n,
// 0 outside the image.
template <int m, class Element>
__global__ void __launch_bounds__(kThreads)
    transform_inputs(TileGrid tg, const Element* __restrict__ x, float* __restrict__ v) {
  constexpr int alpha = m + 2;
  const int64_t total = tg.tiles * tg.C;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int c = int(i % tg.C);
    const int64_t t = i / tg.C;
    const int tw = int(t % tg.tiles_w), th = int(t / tg.tiles_w % tg.tiles_h);
    const int64_t n = t / tg.tiles_w / tg.tiles_h;
    const int h0 = th * m - tg.pad, w0 = tw * m - tg.pad;
    float d[alpha][alpha];
    static_for<alpha>([&](auto a) {
      static_for<alpha>([&](auto b) {
        const int h = h0 + a, wc = w0 + b;
        const bool inside = h >= 0 && h < tg.H && wc >= 0 && wc < tg.W;
        d[a][b] = inside ? to_float(x[((n * tg.H + h) * tg.W + wc) * tg.C + c]) : 0.f;
      });
    });
    float bd[alpha][alpha], vt[alpha][alpha];
    left_multiply<alpha, alpha, alpha, BTable<m>>(d, bd);                // Bᵀ d
    right_multiply_by_transpose<alpha, alpha, alpha, BTable<m>>(bd, vt);  // (Bᵀ d) B
    static_for<alpha>([&](auto a) {
      static_for<alpha>([&](auto b) { v[(int64_t(a * alpha + b) * tg.tiles + t) * tg.C + c] = vt[a][b]; });
    });
  }
}

// ---- step 4: y = Aᵀ M A ----------------------------------------------------------------------
// Kernel contract: mm [α²][tiles][K] fp32; y [N,P,Q,K] NHWC Element. Thread i
// handles (tile t, output channel k) = (i / K, i % K) and stores the m × m
// outputs of the tile that lie inside [P, Q].
template <int m, class Element>
__global__ void __launch_bounds__(kThreads)
    transform_outputs(TileGrid tg, const float* __restrict__ mm, Element* __restrict__ y) {
  constexpr int alpha = m + 2;
  const int64_t total = tg.tiles * tg.K;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int k = int(i % tg.K);
    const int64_t t = i / tg.K;
    const int tw = int(t % tg.tiles_w), th = int(t / tg.tiles_w % tg.tiles_h);
    const int64_t n = t / tg.tiles_w / tg.tiles_h;
    float mt[alpha][alpha];
    static_for<alpha>([&](auto a) {
      static_for<alpha>([&](auto b) { mt[a][b] = mm[(int64_t(a * alpha + b) * tg.tiles + t) * tg.K + k]; });
    });
    float am[m][alpha], yt[m][m];
    left_multiply<m, alpha, alpha, ATable<m>>(mt, am);            // Aᵀ M
    right_multiply_by_transpose<m, alpha, m, ATable<m>>(am, yt);  // (Aᵀ M) A
    static_for<m>([&](auto r) {
      const int p = th * m + r;
      static_for<m>([&](auto s) {
        const int q = tw * m + s;
        if (p < tg.P && q < tg.Q) y[((n * tg.P + p) * tg.Q + q) * tg.K + k] = from_float<Element>(yt[r][s]);
      });
    });
  }
}

// ---- the whole convolution -----------------------------------------------------------------
template <int m> void run(const ConvProblem& p, const Args<ConvProblem>& a, const char* id) {
  constexpr int points = (m + 2) * (m + 2);
  float* ws = static_cast<float*>(a.workspace);
  if (!ws) throw std::runtime_error(std::string(id) + ": missing workspace");
  const WorkspaceLayout<m> layout(p);
  float* u = ws + layout.u;    // U [α²][C][K]
  float* v = ws + layout.v;    // V [α²][tiles][C]
  float* mm = ws + layout.mm;  // M [α²][tiles][K]
  const TileGrid tg = tile_grid<m>(p);
  visit_dtype<float, __half>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    const auto* x = static_cast<const Element*>(a.x);  // [N, H, W, C]  NHWC
    const auto* w = static_cast<const Element*>(a.w);  // [K, 3, 3, C]  KRSC
    auto* y = static_cast<Element*>(a.y);              // [N, P, Q, K]  NHWC

    transform_filters<m, Element><<<blocks_for(int64_t(p.C) * p.K), kThreads>>>(p.C, p.K, w, u);
    check_launch("winograd transform_filters");
    transform_inputs<m, Element><<<blocks_for(tg.tiles * p.C), kThreads>>>(tg, x, v);
    check_launch("winograd transform_inputs");
    // α² GEMMs in one launch: M[e] [tiles × K] = V[e] [tiles × C] · U[e] [C × K].
    double_buffered::launch_batched(points, int(tg.tiles), p.K, p.C, v, tg.tiles * p.C, u, int64_t(p.C) * p.K, mm,
                                    tg.tiles * p.K);
    transform_outputs<m, Element><<<blocks_for(tg.tiles * p.K), kThreads>>>(tg, mm, y);
    check_launch("winograd transform_outputs");
  });
}

}  // namespace convlab::gpu::winograd
