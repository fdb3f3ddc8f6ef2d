// cpu/lib/winograd_cpu.hpp — lesson 05's CPU Winograd convolution,
// F(m×m, 3×3) for m = 2 and 4, shared by rungs 05a (m = 2) and 07 (m = 4).
// Header-only, registers nothing; the rung files say what each m costs.
//
// The algorithm in four steps (α = m + 2, e = (ξ, ν) runs over the α² points):
//
//   1. filter transform, once per run:  U[e][c][k] = (G g_kc Gᵀ)[ξ][ν]          g_kc = w[k, :, :, c]
//   2. input transform, per tile:       V[e][t][c] = (Bᵀ d_tc B)[ξ][ν]          d_tc = α×α patch of x, channel c
//   3. α² independent GEMMs:            M[e][t][k] = Σ_c V[e][t][c] · U[e][c][k]  (the only multiplies that scale with C·K)
//   4. output transform, per tile:      y[tile t, k] = Aᵀ M[:, t, k] A             m×m outputs
//
// Step 3 is where the convolution's reduction over channels happens: for a
// fixed point e it is a plain GEMM [tiles × C] · [C × K]. Those GEMMs are
// lesson 03's (cpu_gemm::gemm_packed — packing, 6×16 AVX2 micro-kernel,
// called, not copied). Everything else is element-wise over channels, and
// NHWC puts channels innermost, so every transform is a handful of vector
// adds over C contiguous floats (the compiler vectorises the c loops).
//
//   plain form (what the steps compute, per tile t and output channel k):
//     for ξ, ν:  M[ξ][ν] = Σ_c (Bᵀ d_tc B)[ξ][ν] · (G g_kc Gᵀ)[ξ][ν]
//     Y_tk = Aᵀ M A
//   Σ_c commutes with Aᵀ · A (both linear), which is what lets the reduction
//   over c be done in the transformed domain, as GEMMs, before one inverse transform.
//
// Tiles: output rows p ∈ [th·m, th·m + m), columns q likewise; tiles_h =
// ⌈P/m⌉, tiles_w = ⌈Q/m⌉. The input patch of a tile starts at row th·m − pad
// and is read as zero outside the image (padding, and the overhang of edge
// tiles); the output transform writes only rows < P and columns < Q. So any
// H, W and pad work; the price of an edge tile is wasted work on the
// overhang, not a special path.
//
// Work order: tiles are cut into slabs of `slab_tiles(p)` tiles. A thread
// takes a slab, transforms its inputs into V (α² × slab × C floats), runs the
// α² GEMMs into M (α² × slab × K), inverse-transforms M into y, and takes the
// next slab: V and M of one slab stay in that core's L2 between the steps,
// and no tensor the size of the whole problem is ever written but U.
//
// Workspace: U (α²·C·K floats, and its packed panels) + per thread: V slab, M slab and one
// single-thread GEMM workspace (packed B panel + packed A block), for
// omp_get_max_threads() threads as counted when the case is built.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ops/conv2d.hpp"
#include "cpu/lib/threads.hpp"
#include "cpu/lib/winograd_transforms.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab::winograd_cpu {

using cpu_gemm::kAlignFloats;
using cpu_gemm::kMR;
using cpu_gemm::round_up;

inline constexpr std::size_t kSlabBytes = std::size_t(512) << 10;
inline constexpr int kChannelBlock = 16;  // channels transformed together: two AVX2 / one AVX-512 vector
static_assert(kSlabBytes <= cpu_gemm::kL2Bytes / 2,
              "V and M of a slab share the L2 with the GEMM's packed A block and B panel");
static_assert(kChannelBlock % 8 == 0, "a channel block should be whole AVX2 vectors");

using cpu::thread_count;

template <int m> struct Geometry {
  static constexpr int alpha = m + 2, points = alpha * alpha;
  int tiles_h, tiles_w;
  int64_t tiles;
  explicit Geometry(const ConvProblem& p)
      : tiles_h((p.P() + m - 1) / m), tiles_w((p.Q() + m - 1) / m), tiles(int64_t(p.N) * tiles_h * tiles_w) {}
};

// Tiles per slab: as many as fit kSlabBytes, a multiple of the micro-kernel's
// MR rows (so only the last slab has a partial row panel), at least MR.
template <int m> int64_t slab_tiles(const ConvProblem& p) {
  const int64_t bytes_per_tile = int64_t(Geometry<m>::points) * (p.C + p.K) * int64_t(sizeof(float));
  const int64_t fit = std::max<int64_t>(kMR, int64_t(kSlabBytes) / bytes_per_tile / kMR * kMR);
  return std::min(fit, int64_t(round_up(std::size_t(Geometry<m>(p).tiles), kMR)));
}

template <int m> GemmProblem slab_gemm(const ConvProblem& p) {  // one point's GEMM: [slab × C] · [C × K]
  return {int(slab_tiles<m>(p)), p.K, p.C, DType::f32};
}

// U packed once per run into lesson 03's B micro-panels (one panel set per
// point), when each point's GEMM is a single depth slice and column panel —
// then the α² GEMMs of a slab repack nothing but V. Otherwise each GEMM
// packs its own B (cpu_gemm::gemm_packed).
inline bool prepacked_u(const ConvProblem& p) { return p.C <= cpu_gemm::kKC && p.K <= cpu_gemm::kNC; }
inline std::size_t packed_u_floats_per_point(const ConvProblem& p) {
  return round_up(std::size_t(p.C) * round_up(std::size_t(p.K), cpu_gemm::kNR), kAlignFloats);
}

template <int m> std::size_t u_floats(const ConvProblem& p) {  // U, then (prepacked) its packed panels
  const std::size_t plain = round_up(std::size_t(Geometry<m>::points) * p.C * p.K, kAlignFloats);
  return plain + (prepacked_u(p) ? Geometry<m>::points * packed_u_floats_per_point(p) : 0);
}
template <int m> std::size_t per_thread_floats(const ConvProblem& p) {
  const std::size_t s = std::size_t(slab_tiles<m>(p)), e = Geometry<m>::points;
  return round_up(e * s * p.C, kAlignFloats) + round_up(e * s * p.K, kAlignFloats) +
         cpu_gemm::packed_workspace_bytes(slab_gemm<m>(p), 1) / sizeof(float);
}
template <int m> std::size_t workspace_bytes(const ConvProblem& p) {
  return (u_floats<m>(p) + std::size_t(thread_count()) * per_thread_floats<m>(p)) * sizeof(float);
}

// 3×3, stride 1, one group, fp32; the GEMMs count in int.
template <int m> bool supports(const ConvProblem& p) {
  return p.dtype == DType::f32 && p.R == 3 && p.S == 3 && p.stride == 1 && p.groups == 1 &&
         int64_t(Geometry<m>::points) * p.C * p.K < (int64_t(1) << 31) &&
         Geometry<m>(p).tiles < (int64_t(1) << 31);
}

// ---- step 1: U = G g Gᵀ for every (k, c) ---------------------------------------
// Plain loops: K·C small transforms, once per run (K·C·(α·9 + α²·3) MACs — for
// C = K = 64 and m = 2 under 0.1% of the GEMMs' work).
template <int m> void transform_filters(const ConvProblem& p, const float* w, float* u) {
  constexpr int alpha = m + 2;
  const int C = p.C, K = p.K;
#pragma omp parallel for schedule(static)
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < C; ++c) {
      float g[3][3];                       // w[k, r, s, c]  (KRSC)
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s) g[r][s] = w[((int64_t(k) * 3 + r) * 3 + s) * C + c];
      float gg[alpha][3];                  // G g
      for (int i = 0; i < alpha; ++i)
        for (int s = 0; s < 3; ++s) {
          float acc = 0.f;
          for (int r = 0; r < 3; ++r) acc += winograd::g_entry<m>(i, r) * g[r][s];
          gg[i][s] = acc;
        }
      for (int i = 0; i < alpha; ++i)      // (G g) Gᵀ, stored at U[(i·α + j)][c][k]
        for (int j = 0; j < alpha; ++j) {
          float acc = 0.f;
          for (int s = 0; s < 3; ++s) acc += gg[i][s] * winograd::g_entry<m>(j, s);
          u[(int64_t(i * alpha + j) * C + c) * K + k] = acc;
        }
    }
}

// ---- steps 2 and 4: the per-tile transforms, over a block of channels ------------
// Each takes α×α (or m×α) arrays of kChannelBlock floats; the loops over the
// matrix entries are fully unrolled, so every coefficient is a compile-time
// constant: zero terms vanish (the `continue`), ±1 become adds. What remains
// is vector adds (and, for m = 4, a few multiplies by 2, 4, 5, 8) over c.
// `out[i][j] = Σ_k L[i][k] · in[k][j]` is one left multiplication; the 2-D
// transform is it applied twice, the second time to the transpose.
template <int rows, int inner, int cols, class Coef>
inline void left_multiply(const Coef& L, const float (&in)[inner][cols][kChannelBlock],
                          float (&out)[rows][cols][kChannelBlock]) {
#pragma GCC unroll 8
  for (int i = 0; i < rows; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < cols; ++j) {
      float acc[kChannelBlock] = {};
#pragma GCC unroll 8
      for (int k = 0; k < inner; ++k) {
        const float coef = float(L[i][k]);
        if (L[i][k] == 0) continue;
#pragma omp simd
        for (int c = 0; c < kChannelBlock; ++c) acc[c] += coef * in[k][j][c];
      }
#pragma omp simd
      for (int c = 0; c < kChannelBlock; ++c) out[i][j][c] = acc[c];
    }
}

// out = in · Lᵀ, i.e. out[j][i] = Σ_k in[j][k] · L[i][k]: the right multiplication
// by B (= (Bᵀ)ᵀ) or A (= (Aᵀ)ᵀ) with the same integer table.
template <int rows, int inner, int cols, class Coef>
inline void right_multiply_by_transpose(const Coef& L, const float (&in)[cols][inner][kChannelBlock],
                                     float (&out)[cols][rows][kChannelBlock]) {
#pragma GCC unroll 8
  for (int j = 0; j < cols; ++j)
#pragma GCC unroll 8
    for (int i = 0; i < rows; ++i) {
      float acc[kChannelBlock] = {};
#pragma GCC unroll 8
      for (int k = 0; k < inner; ++k) {
        const float coef = float(L[i][k]);
        if (L[i][k] == 0) continue;
#pragma omp simd
        for (int c = 0; c < kChannelBlock; ++c) acc[c] += coef * in[j][k][c];
      }
#pragma omp simd
      for (int c = 0; c < kChannelBlock; ++c) out[j][i][c] = acc[c];
    }
}

// One channel block in and out of the transforms' local arrays. The whole
// block (C a multiple of 16, the common case) is one straight vector copy; a
// last partial block copies `count` floats and zero-fills the rest; a null
// source (outside the image) is all zeros.
inline void copy_block(const float* src, int count, float (&dst)[kChannelBlock]) {
  if (src && count == kChannelBlock) {
#pragma omp simd
    for (int c = 0; c < kChannelBlock; ++c) dst[c] = src[c];
    return;
  }
  for (int c = 0; c < kChannelBlock; ++c) dst[c] = src && c < count ? src[c] : 0.f;
}
inline void store_block(const float (&src)[kChannelBlock], int count, float* dst) {
  if (count == kChannelBlock) {
#pragma omp simd
    for (int c = 0; c < kChannelBlock; ++c) dst[c] = src[c];
    return;
  }
  for (int c = 0; c < count; ++c) dst[c] = src[c];
}

// Step 2 for tiles [t0, t0 + count): V[e][t − t0][c] = (Bᵀ d B)[e], d read from x with zeros outside.
template <int m>
void transform_inputs(const ConvProblem& p, const Geometry<m>& geo, const float* x, int64_t t0, int count,
                      float* v) {
  constexpr int alpha = m + 2;
  using T = winograd::Transform<m>;
  const int C = p.C;
  for (int s = 0; s < count; ++s) {
    const int64_t t = t0 + s;
    const int n = int(t / (int64_t(geo.tiles_h) * geo.tiles_w));
    const int th = int(t / geo.tiles_w % geo.tiles_h), tw = int(t % geo.tiles_w);
    const int h0 = th * m - p.pad, w0 = tw * m - p.pad;
    for (int c0 = 0; c0 < C; c0 += kChannelBlock) {
      const int cb = std::min(kChannelBlock, C - c0);
      float d[alpha][alpha][kChannelBlock];
      for (int i = 0; i < alpha; ++i)
        for (int j = 0; j < alpha; ++j) {
          const int h = h0 + i, wc = w0 + j;
          const bool inside = h >= 0 && h < p.H && wc >= 0 && wc < p.W;
          // x[n, h, wc, c0…] NHWC; formed only inside the image (h or wc < 0 would point before x)
          const float* src = inside ? x + ((int64_t(n) * p.H + h) * p.W + wc) * C + c0 : nullptr;
          copy_block(src, cb, d[i][j]);
        }
      float bd[alpha][alpha][kChannelBlock], v_tile[alpha][alpha][kChannelBlock];
      left_multiply<alpha, alpha, alpha>(T::BT, d, bd);                // Bᵀ d
      right_multiply_by_transpose<alpha, alpha, alpha>(T::BT, bd, v_tile);  // (Bᵀ d) B
      for (int i = 0; i < alpha; ++i)
        for (int j = 0; j < alpha; ++j) {
          store_block(v_tile[i][j], cb, v + (int64_t(i * alpha + j) * count + s) * C + c0);  // V[e][s][c0…]
        }
    }
  }
}

// Step 4 for tiles [t0, t0 + count): y tile = Aᵀ M A, written where it lies inside [P, Q].
template <int m>
void transform_outputs(const ConvProblem& p, const Geometry<m>& geo, const float* mm, int64_t t0, int count,
                       float* y) {
  constexpr int alpha = m + 2;
  using T = winograd::Transform<m>;
  const int K = p.K, P = p.P(), Q = p.Q();
  for (int s = 0; s < count; ++s) {
    const int64_t t = t0 + s;
    const int n = int(t / (int64_t(geo.tiles_h) * geo.tiles_w));
    const int th = int(t / geo.tiles_w % geo.tiles_h), tw = int(t % geo.tiles_w);
    for (int k0 = 0; k0 < K; k0 += kChannelBlock) {
      const int kb = std::min(kChannelBlock, K - k0);
      float mt[alpha][alpha][kChannelBlock];
      for (int i = 0; i < alpha; ++i)
        for (int j = 0; j < alpha; ++j) {
          copy_block(mm + (int64_t(i * alpha + j) * count + s) * K + k0, kb, mt[i][j]);  // M[e][s][k0…]
        }
      float am[m][alpha][kChannelBlock], yt[m][m][kChannelBlock];
      left_multiply<m, alpha, alpha>(T::AT, mt, am);            // Aᵀ M      (m × α)
      right_multiply_by_transpose<m, alpha, m>(T::AT, am, yt);  // (Aᵀ M) A  (m × m)
      for (int i = 0; i < m; ++i) {
        const int pp = th * m + i;
        if (pp >= P) break;
        for (int j = 0; j < m; ++j) {
          const int q = tw * m + j;
          if (q >= Q) break;
          store_block(yt[i][j], kb, y + ((int64_t(n) * P + pp) * Q + q) * K + k0);  // y[n, p, q, k0…]  NHWC
        }
      }
    }
  }
}

// ---- the whole convolution ---------------------------------------------------------
template <int m> void run(const ConvProblem& p, const Args<ConvProblem>& a, const char* id) {
  constexpr int points = Geometry<m>::points;
  const float* x = static_cast<const float*>(a.x);  // [N, H, W, C]  NHWC
  const float* w = static_cast<const float*>(a.w);  // [K, 3, 3, C]  KRSC
  float* y = static_cast<float*>(a.y);              // [N, P, Q, K]  NHWC
  float* ws = static_cast<float*>(a.workspace);     // [U | thread 0: V, M, GEMM | thread 1: ...]
  if (!ws) throw std::runtime_error(std::string(id) + ": missing workspace");
  const Geometry<m> geo(p);
  const int64_t slab = slab_tiles<m>(p);
  const int64_t slabs = (geo.tiles + slab - 1) / slab;
  const int threads = thread_count();  // as many as the workspace was sized for
  const cpu_gemm::MicroKernel kernel = cpu_gemm::selected_micro_kernel().kernel;

  float* u = ws;  // U [α²][C][K]
  transform_filters<m>(p, w, u);
  const bool prepacked = prepacked_u(p);
  float* up = u + round_up(std::size_t(points) * p.C * p.K, kAlignFloats);  // packed U, per point
  if (prepacked) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int e = 0; e < points; ++e)
      cpu_gemm::pack_b(p.C, p.K, u + int64_t(e) * p.C * p.K, p.K, up + e * packed_u_floats_per_point(p));
  }

#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t b = 0; b < slabs; ++b) {
    float* mine = ws + u_floats<m>(p) + std::size_t(omp_get_thread_num()) * per_thread_floats<m>(p);
    float* v = mine;                                                          // V [α²][count][C]
    float* mm = v + round_up(std::size_t(points) * slab * p.C, kAlignFloats);  // M [α²][count][K]
    void* gemm_ws = mm + round_up(std::size_t(points) * slab * p.K, kAlignFloats);
    const int64_t t0 = b * slab;
    const int count = int(std::min(slab, geo.tiles - t0));
    transform_inputs<m>(p, geo, x, t0, count, v);
    for (int e = 0; e < points; ++e) {  // step 3: M[e] = V[e] · U[e], lesson 03's one-thread GEMM
      const float* v_e = v + int64_t(e) * count * p.C;
      float* m_e = mm + int64_t(e) * count * p.K;
      if (!prepacked) {
        cpu_gemm::gemm_packed({count, p.K, p.C, DType::f32}, v_e, u + int64_t(e) * p.C * p.K, m_e, gemm_ws, kernel);
        continue;
      }
      // Prepacked U: gemm_packed's loop 3 alone (one depth slice, one column
      // panel): pack a row block of V, run the macro-kernel on U's panels.
      float* ap = static_cast<float*>(gemm_ws) + cpu_gemm::packed_b_floats(slab_gemm<m>(p));  // packed A block
      for (int ic = 0; ic < count; ic += cpu_gemm::kMC) {
        const int mc = std::min(cpu_gemm::kMC, count - ic);
        cpu_gemm::pack_a(mc, p.C, v_e + int64_t(ic) * p.C, p.C, ap);
        cpu_gemm::macro_kernel(mc, p.K, p.C, ap, up + e * packed_u_floats_per_point(p), m_e + int64_t(ic) * p.K, p.K,
                               /*accumulate=*/false, kernel);
      }
    }
    transform_outputs<m>(p, geo, mm, t0, count, y);
  }
}

}  // namespace convlab::winograd_cpu
