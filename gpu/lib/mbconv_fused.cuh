// gpu/lib/mbconv_fused.cuh — the fused MBConv tile kernel of lesson 11, one
// template for every stage of the three fused plans (11b two-pass recompute,
// 11c two-pass store, 11d single pass without SE). Header-only, registers
// nothing; each rung launches the stages of its plan.
//
// A CTA owns one tile: image n, output rows [p0, p0 + rows), all Q columns
// (rows·Q output pixels), and the input rows that tile's depthwise reads
// (its halo: (rows − 1)·stride + K rows, clipped to the image). It walks the
// hidden channels in chunks of kChunk = 32:
//
//   plain loops (ref::mbconv_block)             one chunk c0..c0+31 here
//     e = φ(x·We + be)   whole image             E[in_pixels, 32] = φ(X_tile·We[:, c0:] + be)   mma.sync, smem
//     d = φ(dw(e) + bd)  whole image             D[pixels, 32]    = φ(dw(E) + bd)               FMA, smem
//     sums, gate                                  (stage sums/store: per-tile channel sums of D)
//     y = (d ⊙ g)·Wp + bp + x                     Y[pixels, C_out] += (D ⊙ g)·Wp[c0:, :]         mma.sync, registers
//
// Stages (what the kernel does with D):
//   sums             pass 1 of 11b: D's channel sums for this tile -> partial[n, tile, :]; nothing else stored
//   store            pass 1 of 11c: the sums and D itself -> dbuf (the problem's 16-bit type)
//   project          pass 2 of 11b, and 11d's single pass (gate == nullptr): D (⊙ g) -> Y; y = Y + bp (+ x)
//   project_stored   pass 2 of 11c: D read back from dbuf instead of recomputed
//
// The 1x1 layers are warp mma.sync m16n8k16 (f16/bf16 in, fp32 accumulate,
// gpu/lib/mma.cuh's fragment maps) on padded shared tiles whose rows are
// ≡ 8 bytes mod 128 apart... precisely, (ld/2) ≡ 4 (mod 8) words: the eight
// rows of a fragment hit eight different bank groups. The depthwise is FMA
// on channel pairs (32-bit shared loads), a thread's channel pair fixed for
// the whole chunk so its K·K weight pairs sit in registers. The per-tile sums
// are reduced in a fixed order (no atomics): the result is deterministic.
//
// Limits (fits()): the Y accumulators, ceil(rows·Q/16)·ceil(C_out/8) m16n8
// tiles, are at most kWarps·kMaxAccTiles; the shared tiles fit the opt-in
// shared memory of the device (227 KB on H200).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_epilogue.cuh"
#include "gpu/lib/mma.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

// ---- tunables ------------------------------------------------------------------------
inline constexpr int kThreads = 256;       // 8 warps
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kChunk = 32;          // hidden channels per step: 2 k16 steps of the project, 4 n8 tiles of the expand
inline constexpr int kMaxAccTiles = 16;    // m16n8 Y tiles per warp: 64 fp32 registers
inline constexpr int kTargetPixels = 256;  // output pixels a tile aims at (halo recompute (rows−1+K)/rows falls as it grows)
inline constexpr int kPairs = kChunk / 2;  // channel pairs of a chunk: the depthwise threads' inner index
inline constexpr int kPixelGroups = kThreads / kPairs;
static_assert(kChunk == 32, "the expand epilogue writes 4 n8 tiles and the project reads 2 k16 steps");
static_assert(kThreads % kPairs == 0, "every thread owns one channel pair of a chunk");
inline constexpr std::size_t kMaxShared = 227 * 1024;  // H200 opt-in shared memory per block

enum class Stage { sums, store, project, project_stored };

// The tile geometry, computed on the host and passed by value.
struct Tile {
  int N, H, W, C, hidden, P, Q, C_out, stride, pad;
  int rows, tiles;             // output rows per tile, tiles per image
  int in_rows;                 // input rows a tile holds at most
  int m_in, m_out;             // in_rows·W and rows·Q, rounded up to 16
  int c_pad, cout_pad;         // C to 16, C_out to 8
  int ldx, lde, ldd, ldwe, ldwp;  // shared row strides, elements
  bool expand, residual;
  FfnActivation act;
  std::size_t x_off, e_off, d_off, we_off, wp_off, red_off, bytes;  // shared layout, bytes
  __host__ __device__ int acc_tiles() const { return (m_out / 16) * (cout_pad / 8); }
};

inline Tile tile_for(const MBConvProblem& p, int rows) {
  Tile t{};
  t.N = p.N, t.H = p.H, t.W = p.W, t.C = p.C, t.hidden = p.hidden(), t.P = p.P(), t.Q = p.Q(), t.C_out = p.C_out;
  t.stride = p.stride, t.pad = p.kernel / 2, t.expand = p.has_expand(), t.residual = p.has_residual(), t.act = p.activation;
  t.rows = rows;
  t.tiles = (t.P + rows - 1) / rows;
  t.in_rows = std::min(p.H, (rows - 1) * p.stride + p.kernel);
  const auto up = [](int v, int m) { return (v + m - 1) / m * m; };
  t.m_in = up(t.in_rows * p.W, 16);
  t.m_out = up(rows * t.Q, 16);
  t.c_pad = up(p.C, 16);
  t.cout_pad = up(p.C_out, 8);
  t.ldx = t.c_pad + 8, t.lde = kChunk + 8, t.ldd = kChunk + 8, t.ldwe = t.c_pad + 8, t.ldwp = kChunk + 8;
  const std::size_t e = 2;  // 16-bit elements
  std::size_t off = 0;
  const auto take = [&](std::size_t bytes) { const std::size_t at = off; off = (off + bytes + 15) / 16 * 16; return at; };
  t.x_off = take(t.expand ? std::size_t(t.m_in) * t.ldx * e : 0);
  t.e_off = take(std::size_t(t.m_in) * t.lde * e);
  t.d_off = take(std::size_t(t.m_out) * t.ldd * e);
  t.we_off = take(t.expand ? std::size_t(kChunk) * t.ldwe * e : 0);
  t.wp_off = take(std::size_t(t.cout_pad) * t.ldwp * e);
  t.red_off = take(std::size_t(kPixelGroups) * kChunk * sizeof(float));
  t.bytes = off;
  return t;
}

inline bool tile_fits(const Tile& t) { return t.acc_tiles() <= kWarps * kMaxAccTiles && t.bytes <= kMaxShared; }

// The largest tile (in whole output rows, at most kTargetPixels pixels, at
// least one row) that fits; rows == 0 when even one row does not.
inline Tile choose_tile(const MBConvProblem& p) {
  int rows = std::max(1, std::min(p.P(), kTargetPixels / std::max(1, p.Q())));
  for (; rows >= 1; --rows) {
    const Tile t = tile_for(p, rows);
    if (tile_fits(t)) return t;
  }
  Tile none{};
  none.rows = 0;
  return none;
}

inline bool fused_support(const MBConvProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && p.hidden() <= 12000 && p.N <= kMaxGridYZ &&
         p.input_pixels() * p.C < 9.0e15 && choose_tile(p).rows > 0;
}

// ---- device helpers ---------------------------------------------------------------------
template <class Element> __device__ __forceinline__ float2 load_pair(const Element* p) {
  if constexpr (std::is_same_v<Element, __half>) return __half22float2(*reinterpret_cast<const __half2*>(p));
  else return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}
__device__ __forceinline__ uint32_t load_u32(const void* p) { return *reinterpret_cast<const uint32_t*>(p); }

// ---- the kernel ---------------------------------------------------------------------------
//   x [N, H, W, C], we [C, hidden], be [hidden], dw [hidden, K, K], bd [hidden],
//   gate [N, hidden] fp32 (project stages; nullptr = no SE), wp [hidden, C_out], bp [C_out],
//   y [N, P, Q, C_out], partial [N, tiles, hidden] fp32 (sums/store), dbuf [N, P, Q, hidden] (store/project_stored).
template <class Element, Stage kStage, int K>
__global__ void __launch_bounds__(kThreads) mbconv_tile_kernel(
    Tile t, const Element* __restrict__ x, const Element* __restrict__ we, const Element* __restrict__ be,
    const Element* __restrict__ dw, const Element* __restrict__ bd, const float* __restrict__ gate,
    const Element* __restrict__ wp, const Element* __restrict__ bp, Element* __restrict__ y, float* __restrict__ partial,
    Element* __restrict__ dbuf) {
  extern __shared__ __align__(16) unsigned char shared[];
  Element* xs = reinterpret_cast<Element*>(shared + t.x_off);    // [m_in][ldx]     the x tile (expand only)
  Element* es = reinterpret_cast<Element*>(shared + t.e_off);    // [m_in][lde]     E chunk
  Element* ds = reinterpret_cast<Element*>(shared + t.d_off);    // [m_out][ldd]    D chunk (⊙ g)
  Element* wes = reinterpret_cast<Element*>(shared + t.we_off);  // [32][ldwe]      We chunk, transposed (n-major)
  Element* wps = reinterpret_cast<Element*>(shared + t.wp_off);  // [cout_pad][ldwp] Wp chunk, transposed
  float* red = reinterpret_cast<float*>(shared + t.red_off);     // [kPixelGroups][32] sums reduction
  constexpr bool kProject = kStage == Stage::project || kStage == Stage::project_stored;
  constexpr bool kSums = kStage == Stage::sums || kStage == Stage::store;
  constexpr bool kMakeD = kStage != Stage::project_stored;

  const int tile = blockIdx.x, n = blockIdx.y;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int p0 = tile * t.rows, p1 = min(t.P, p0 + t.rows), out_pixels = (p1 - p0) * t.Q;
  const int h0 = max(0, p0 * t.stride - t.pad), h1 = min(t.H, (p1 - 1) * t.stride - t.pad + K);
  const int in_pixels = (h1 - h0) * t.W;
  const Element* x_tile = x + (std::ptrdiff_t(n) * t.H + h0) * t.W * t.C;  // in_pixels consecutive pixels
  const std::ptrdiff_t first_out = (std::ptrdiff_t(n) * t.P + p0) * t.Q;     // this tile's first output pixel

  // 1. The x tile, once (zero beyond the tile's pixels and beyond C).
  if (kMakeD && t.expand) {
    for (int i = tid; i < t.m_in * t.c_pad; i += kThreads) {
      const int r = i / t.c_pad, c = i % t.c_pad;
      xs[r * t.ldx + c] = (r < in_pixels && c < t.C) ? x_tile[std::ptrdiff_t(r) * t.C + c] : from_float<Element>(0.0f);
    }
  }

  // Y accumulators: warp w owns m16n8 tiles w, w + 8, ... of the [m_out, cout_pad] output.
  const int n_tiles = t.cout_pad / 8, acc_count = t.acc_tiles();
  float acc[kMaxAccTiles][4];
#pragma unroll
  for (int i = 0; i < kMaxAccTiles; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

  const int pair = tid % kPairs, group = tid / kPairs;  // depthwise: channels 2·pair, 2·pair+1 of the chunk
  for (int c0 = 0; c0 < t.hidden; c0 += kChunk) {
    const int cw = min(kChunk, t.hidden - c0);
    const int j0 = 2 * pair;
    if (kMakeD) {
      // 2a. E = φ(X·We[:, c0:c0+32] + be): the We chunk transposed into shared memory, then mma.
      if (t.expand) {
        for (int i = tid; i < t.c_pad * kChunk; i += kThreads) {
          const int c = i / kChunk, j = i % kChunk;  // consecutive threads: consecutive j, coalesced reads
          wes[j * t.ldwe + c] = (c < t.C && j < cw) ? we[std::ptrdiff_t(c) * t.hidden + c0 + j] : from_float<Element>(0.0f);
        }
        __syncthreads();
        for (int mt = warp; mt < t.m_in / 16; mt += kWarps) {
          float e_acc[4][4] = {};
          for (int k0 = 0; k0 < t.c_pad; k0 += 16) {
            uint32_t a[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) {
              const MatrixCoord m = mma_a_coord(lane, r, 0);
              a[r] = load_u32(&xs[(mt * 16 + m.row) * t.ldx + k0 + m.col]);
            }
#pragma unroll
            for (int nt = 0; nt < 4; ++nt) {
              uint32_t b[2];
#pragma unroll
              for (int r = 0; r < 2; ++r) {
                const MatrixCoord m = mma_b_coord(lane, r, 0);  // {k, n}
                b[r] = load_u32(&wes[(nt * 8 + m.col) * t.ldwe + k0 + m.row]);
              }
              mma_m16n8k16<Element>(e_acc[nt], a, b);
            }
          }
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const MatrixCoord m = mma_c_coord(lane, i);
              const int j = nt * 8 + m.col;
              const float v = j < cw ? ffn::activate(t.act, e_acc[nt][i] + to_float(be[c0 + j])) : 0.0f;
              es[(mt * 16 + m.row) * t.lde + j] = from_float<Element>(v);
            }
        }
      } else {  // no expand layer: E is x's channels c0.. themselves
        for (int i = tid; i < t.m_in * kChunk; i += kThreads) {
          const int r = i / kChunk, j = i % kChunk;
          es[r * t.lde + j] =
              (r < in_pixels && j < cw) ? x_tile[std::ptrdiff_t(r) * t.C + c0 + j] : from_float<Element>(0.0f);
        }
      }
      __syncthreads();

      // 2b. D = φ(dw(E) + bd) (⊙ g): thread (group, pair) makes channels j0, j0+1 of pixels group, group + 16, ...
      float w0[K * K], w1[K * K], b0 = 0.0f, b1 = 0.0f, g0 = 1.0f, g1 = 1.0f;
      const bool live0 = j0 < cw, live1 = j0 + 1 < cw;
#pragma unroll
      for (int k = 0; k < K * K; ++k) {
        w0[k] = live0 ? to_float(dw[std::ptrdiff_t(c0 + j0) * K * K + k]) : 0.0f;
        w1[k] = live1 ? to_float(dw[std::ptrdiff_t(c0 + j0 + 1) * K * K + k]) : 0.0f;
      }
      if (live0) b0 = to_float(bd[c0 + j0]);
      if (live1) b1 = to_float(bd[c0 + j0 + 1]);
      if (kProject && gate) {
        if (live0) g0 = gate[std::ptrdiff_t(n) * t.hidden + c0 + j0];
        if (live1) g1 = gate[std::ptrdiff_t(n) * t.hidden + c0 + j0 + 1];
      }
      float s0 = 0.0f, s1 = 0.0f;
      for (int pix = group; pix < t.m_out; pix += kPixelGroups) {
        float v0 = 0.0f, v1 = 0.0f;
        if (pix < out_pixels) {
          const int op = p0 + pix / t.Q, q = pix % t.Q;
          v0 = b0, v1 = b1;
#pragma unroll
          for (int r = 0; r < K; ++r) {
            const int h = op * t.stride + r - t.pad;
            if (h < h0 || h >= h1) continue;  // outside the image: zero padding of e
#pragma unroll
            for (int s = 0; s < K; ++s) {
              const int w = q * t.stride + s - t.pad;
              if (w < 0 || w >= t.W) continue;
              const float2 e = load_pair(&es[((h - h0) * t.W + w) * t.lde + j0]);
              v0 += w0[r * K + s] * e.x;
              v1 += w1[r * K + s] * e.y;
            }
          }
          v0 = live0 ? ffn::activate(t.act, v0) : 0.0f;
          v1 = live1 ? ffn::activate(t.act, v1) : 0.0f;
          if constexpr (kSums) s0 += v0, s1 += v1;
          if constexpr (kStage == Stage::store) {
            Element* out = dbuf + (first_out + pix) * t.hidden + c0 + j0;
            if (live0) out[0] = from_float<Element>(v0);
            if (live1) out[1] = from_float<Element>(v1);
          }
        }
        if constexpr (kProject) *reinterpret_cast<uint32_t*>(&ds[pix * t.ldd + j0]) = pack_pair<Element>(v0 * g0, v1 * g1);
      }
      if constexpr (kSums) {
        // The tile's channel sums: the 16 pixel groups' partials added in group order.
        red[group * kChunk + j0] = s0;
        red[group * kChunk + j0 + 1] = s1;
        __syncthreads();
        if (tid < cw) {
          float s = 0.0f;
          for (int g = 0; g < kPixelGroups; ++g) s += red[g * kChunk + tid];
          partial[(std::ptrdiff_t(n) * t.tiles + tile) * t.hidden + c0 + tid] = s;
        }
      }
    } else {
      // 2'. (project_stored) D read back from dbuf, ⊙ g.
      const float g0 = gate ? gate[std::ptrdiff_t(n) * t.hidden + c0 + min(j0, cw - 1)] : 1.0f;
      const float g1 = gate ? gate[std::ptrdiff_t(n) * t.hidden + c0 + min(j0 + 1, cw - 1)] : 1.0f;
      for (int pix = group; pix < t.m_out; pix += kPixelGroups) {
        float v0 = 0.0f, v1 = 0.0f;
        if (pix < out_pixels) {
          const Element* in = dbuf + (first_out + pix) * t.hidden + c0 + j0;
          if (j0 < cw) v0 = to_float(in[0]) * g0;
          if (j0 + 1 < cw) v1 = to_float(in[1]) * g1;
        }
        *reinterpret_cast<uint32_t*>(&ds[pix * t.ldd + j0]) = pack_pair<Element>(v0, v1);
      }
    }

    if constexpr (kProject) {
      // 3. Y += D·Wp[c0:c0+32, :]: the Wp chunk transposed into shared memory, then mma on the owned tiles.
      for (int i = tid; i < kChunk * t.cout_pad; i += kThreads) {
        const int j = i / t.cout_pad, o = i % t.cout_pad;  // consecutive threads: consecutive o, coalesced
        wps[o * t.ldwp + j] = (j < cw && o < t.C_out) ? wp[std::ptrdiff_t(c0 + j) * t.C_out + o] : from_float<Element>(0.0f);
      }
      __syncthreads();
#pragma unroll
      for (int i = 0; i < kMaxAccTiles; ++i) {
        const int at = warp + kWarps * i;
        if (at >= acc_count) break;
        const int mt = at / n_tiles, nt = at % n_tiles;
#pragma unroll
        for (int k0 = 0; k0 < kChunk; k0 += 16) {
          uint32_t a[4], b[2];
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const MatrixCoord m = mma_a_coord(lane, r, 0);
            a[r] = load_u32(&ds[(mt * 16 + m.row) * t.ldd + k0 + m.col]);
          }
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const MatrixCoord m = mma_b_coord(lane, r, 0);
            b[r] = load_u32(&wps[(nt * 8 + m.col) * t.ldwp + k0 + m.row]);
          }
          mma_m16n8k16<Element>(acc[i], a, b);
        }
      }
    }
    __syncthreads();  // the next chunk overwrites es, ds, wes, wps, red
  }

  if constexpr (kProject) {
    // 4. y = Y + bp (+ x), stored once.
#pragma unroll
    for (int i = 0; i < kMaxAccTiles; ++i) {
      const int at = warp + kWarps * i;
      if (at >= acc_count) break;
      const int mt = at / n_tiles, nt = at % n_tiles;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const MatrixCoord m = mma_c_coord(lane, k);
        const int pix = mt * 16 + m.row, o = nt * 8 + m.col;
        if (pix >= out_pixels || o >= t.C_out) continue;
        float v = acc[i][k] + to_float(bp[o]);
        if (t.residual) v += to_float(x[(first_out + pix) * t.C + o]);  // stride 1, C_out == C: same pixel index
        y[(first_out + pix) * t.C_out + o] = from_float<Element>(v);
      }
    }
  }
}

// ---- launcher --------------------------------------------------------------------------------
template <class Element, Stage kStage>
void launch_stage(const MBConvProblem& p, const Tile& t, const Args<MBConvProblem>& a, const float* gate, float* partial,
                  void* dbuf) {
  const auto go = [&](auto kernel, const char* name) {
    allow_dynamic_shared(kernel, t.bytes, name);
    kernel<<<dim3(unsigned(t.tiles), unsigned(p.N)), kThreads, t.bytes>>>(
        t, static_cast<const Element*>(a.x), static_cast<const Element*>(a.expand_w),
        static_cast<const Element*>(a.expand_b), static_cast<const Element*>(a.dw_w),
        static_cast<const Element*>(a.dw_b), gate, static_cast<const Element*>(a.project_w),
        static_cast<const Element*>(a.project_b), static_cast<Element*>(a.y), partial, static_cast<Element*>(dbuf));
    check_launch(name);
  };
  if (p.kernel == 3) go(mbconv_tile_kernel<Element, kStage, 3>, "mbconv_tile_kernel<k=3>");
  else go(mbconv_tile_kernel<Element, kStage, 5>, "mbconv_tile_kernel<k=5>");
}

}  // namespace convlab::gpu::mbconv
