// gpu/lib/mbconv_fused.cuh — the fused MBConv tile kernel of lesson 11, one
// template for every stage of the three fused plans (11b two-pass recompute,
// 11c two-pass store, 11d single pass without SE). Header-only, registers
// nothing; each rung launches the stages of its plan. The tile geometry and
// its index maps (host code, tested on the host) are in gpu/lib/mbconv_tile.hpp.
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
//   store            pass 1 of 11c: the sums and D itself -> dbuf (the problem's 16-bit type), 16-byte stores
//   project          pass 2 of 11b, and 11d's single pass (gate == nullptr): D (⊙ g) -> Y; y = Y + bp (+ x)
//   project_stored   pass 2 of 11c: D read back from dbuf (cp.async) instead of recomputed; the gate
//                    folded into per-image weights diag(g_n)·Wp (gated_weights: a plain GEMM over D),
//                    or, where those weights outweigh the image's D, applied to D's fragments
//
// The pipeline of one chunk (every global read is a 16-byte cp.async issued
// one chunk ahead, into the other half of a double buffer):
//
//   wait for chunk c's copies; barrier ─┬─ issue chunk c+1's copies (We, Wp, dw slice, biases, gate, D or E)
//                                      ├─ expand (mma) -> E                       barrier
//                                      ├─ depthwise (FMA) -> D, sums              barrier
//                                      └─ project (mma) -> Y; or sums/D out
//   (project_stored: wait; barrier; issue c+1; project. One barrier a chunk.)
//
// The 1x1 layers are warp mma.sync m16n8k16 (f16/bf16 in, fp32 accumulate)
// with ldmatrix fragments: A (x tile, D) row-major [pixel][k], B (We, Wp
// chunks) in their global layout [k][n] through ldmatrix .trans. Every shared
// row is an odd number of 16-byte units long, so the eight rows an ldmatrix
// phase reads fall in eight different bank groups. The depthwise gives each
// thread one channel pair and a run of kRun output pixels of one row: it
// loads each E pair of the run's input window once per kernel row into
// registers and reuses it for every tap that needs it (a sliding window), so
// a pixel costs K²·2 FMAs and about K·stride/kRun·K shared loads, with no
// integer division in the pixel loop. SiLU is x / (1 + 2^(−x·log2 e)) on the
// SFU (two MUFU ops), relative error ~1e−6. The per-tile sums are reduced in
// a fixed order (no atomics): the result is deterministic.
//
// Limits (tile_fits()): the Y accumulators, ceil(rows·Q/16)·ceil(C_out/8)
// m16n8 tiles, are at most kWarps·kMaxAccTiles; the shared tiles fit the
// opt-in shared memory of the device (227 KB on H200). The 16-byte copies
// need C, C_out and hidden multiples of 8 and 16-byte aligned tensors
// (Tile::vec); other sizes take a plain-load path with the same layout.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_epilogue.cuh"
#include "gpu/lib/mbconv_tile.hpp"
#include "gpu/lib/mma.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

// The sizes every fused stage takes (each stage picks its own tile height).
inline bool fused_support(const MBConvProblem& p) {
  if (!((p.dtype == DType::f16 || p.dtype == DType::bf16) && p.hidden() <= 12000 && p.N <= kMaxGridYZ &&
        p.input_pixels() * p.C < 9.0e15))
    return false;
  for (Stage s : {Stage::sums, Stage::store, Stage::project, Stage::project_stored})
    if (choose_tile(p, s).rows == 0) return false;
  return true;
}

// ---- device helpers ---------------------------------------------------------------------
template <class Element> __device__ __forceinline__ float2 unpack_pair(uint32_t bits) {
  if constexpr (std::is_same_v<Element, __half>) return __half22float2(*reinterpret_cast<const __half2*>(&bits));
  else return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
}
template <class Element> __device__ __forceinline__ float2 load_pair(const Element* p) {
  return unpack_pair<Element>(*reinterpret_cast<const uint32_t*>(p));
}

// Two 8x8 b16 matrices, each transposed: lanes 0-15 pass row addresses (lane
// 8·m + r: row r of matrix m). Register m of lane 4·g + t holds elements
// (2t, g) and (2t+1, g) of matrix m — on a row-major [k][n] tile whose rows
// k0..k0+15 the lanes 0-15 address, exactly the mma B fragment b0, b1 of the
// n8 block (mma_b_coord: k = 2t + h + 8·m, n = g).
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(row_address)
               : "memory");
}

// SiLU / ReLU, branch-free: SiLU is v · 1/(1 + 2^(−v·log2 e)) on the SFU with
// the flush-to-zero forms of ex2 and rcp (two MUFU ops and three FMA-pipe
// ops; relative error ~1e−6 against the plain loop's v / (1 + exp(−v))).
// The non-ftz __expf and __fdividef add a range test and two branches per
// element (lessons/11-mbconv/NOTES.md, the SASS profile). For v → −∞,
// 2^(+large) = +inf and rcp(inf) = 0: the result is −0, as the plain loop's.
// Both activations are computed and one is selected: no branch on `act`.
__device__ __forceinline__ float fast_activate(FfnActivation act, float v) {
  float p, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(p) : "f"(v * -1.4426950408889634f));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + p));
  return act == FfnActivation::relu ? fmaxf(v, 0.0f) : v * r;
}

// dst[r][c] = src[r·ld_src + c] for r < valid_rows, c < valid_cols, else 0,
// over rows × cols (cols a multiple of 8). vec: one 16-byte cp.async per 8
// elements (src rows 16-byte aligned, valid_cols a multiple of 8); otherwise
// plain 2-byte loads and stores (visible after the next barrier either way).
template <class Element>
__device__ __forceinline__ void stage_tile(Element* dst, int ld_dst, const Element* src, std::ptrdiff_t ld_src,
                                           int rows, int cols, int valid_rows, int valid_cols, bool vec) {
  if (vec) {
    const int per_row = cols / 8;
    for (int i = threadIdx.x; i < rows * per_row; i += kThreads) {
      const int r = i / per_row, c = (i - r * per_row) * 8;
      const bool in = r < valid_rows && c < valid_cols;
      cp_async_16(shared_address(dst + r * ld_dst + c), in ? src + r * ld_src + c : src, in);
    }
  } else {
    for (int i = threadIdx.x; i < rows * cols; i += kThreads) {
      const int r = i / cols, c = i - r * cols;
      dst[r * ld_dst + c] = (r < valid_rows && c < valid_cols) ? src[r * ld_src + c] : from_float<Element>(0.0f);
    }
  }
}

// ---- the kernel ---------------------------------------------------------------------------
//   x [N, H, W, C], we [C, hidden], be [hidden], dw [hidden, K, K], bd [hidden],
//   gate [N, hidden] fp32 (project; nullptr = no SE), wp [hidden, C_out] (project_stored: [N, hidden, C_out],
//   image n's at n·t.wp_image_stride), bp [C_out],
//   y [N, P, Q, C_out], partial [N, tiles, hidden] fp32 (sums/store), dbuf [N, P, Q, hidden] (store/project_stored).
// Grid (tiles, N), kThreads threads, t.bytes of dynamic shared memory (layout: tile_for).
// CTAs per SM the register budget is cut for: 2 (16 warps) where the depthwise
// run and the Y accumulators share the registers; 3 for project_stored, which
// only waits on its copies and projects (more copies in flight per SM).
template <Stage kStage> inline constexpr int kMinCtasPerSm = kStage == Stage::project_stored ? 3 : 2;

template <class Element, Stage kStage, int K, int kStride>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm<kStage>) mbconv_tile_kernel(
    Tile t, const Element* __restrict__ x, const Element* __restrict__ we, const Element* __restrict__ be,
    const Element* __restrict__ dw, const Element* __restrict__ bd, const float* __restrict__ gate,
    const Element* __restrict__ wp, const Element* __restrict__ bp, Element* __restrict__ y, float* __restrict__ partial,
    Element* __restrict__ dbuf) {
  constexpr bool kProject = kStage == Stage::project || kStage == Stage::project_stored;
  constexpr bool kSums = kStage == Stage::sums || kStage == Stage::store;
  constexpr bool kMakeD = kStage != Stage::project_stored;
  constexpr int kTaps = K * K;
  constexpr int kWindow = (kRun - 1) * kStride + K;  // input columns a run of kRun outputs reads per kernel row
  extern __shared__ __align__(16) unsigned char shared[];
  Element* xs = reinterpret_cast<Element*>(shared + t.x_off);  // [m_in][ldx]           x tile (expand)
  float* red = reinterpret_cast<float*>(shared + t.red_off);   // [kPixelGroups][32]    sums reduction
  const auto es = [&](int b) { return reinterpret_cast<Element*>(shared + t.e_off + b * t.e_bytes); };     // [m_in][lde]
  const auto ds = [&](int b) { return reinterpret_cast<Element*>(shared + t.d_off + b * t.d_bytes); };     // [m_out][ldd]
  const auto wes = [&](int b) { return reinterpret_cast<Element*>(shared + t.we_off + b * t.we_bytes); };  // [c_pad][ldwe]
  const auto wps = [&](int b) { return reinterpret_cast<Element*>(shared + t.wp_off + b * t.wp_bytes); };  // [32][ldwp]
  const auto dws = [&](int b) { return reinterpret_cast<Element*>(shared + t.dw_off + b * t.dw_bytes); };  // [32][K²]
  const auto vs = [&](int b) { return reinterpret_cast<float*>(shared + t.v_off + b * t.v_bytes); };       // be, bd, g: [3][32]
  float* dwf = reinterpret_cast<float*>(shared + t.dwf_off);  // [K²][32]              depthwise weights, fp32

  const int tile = blockIdx.x / t.splits, part = blockIdx.x % t.splits, n = blockIdx.y;
  // A CTA's share of its tile (t.splits CTAs per tile, neighbours in blockIdx.x so they meet in L2):
  // sums/store make hidden chunks part, part + splits, ...; project_stored makes output
  // columns [o0, o0 + t.cout_split) over every chunk; the other stages: everything.
  const int c_first = kSums ? part * kChunk : 0, c_step = kSums ? t.splits * kChunk : kChunk;
  const int o0 = kStage == Stage::project_stored ? part * t.cout_split : 0;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int p0 = tile * t.rows, p1 = min(t.P, p0 + t.rows), out_pixels = (p1 - p0) * t.Q;
  const int h0 = max(0, p0 * kStride - t.pad), h1 = min(t.H, (p1 - 1) * kStride - t.pad + K);
  const int in_pixels = (h1 - h0) * t.W;
  const Element* x_tile = x + (std::ptrdiff_t(n) * t.H + h0) * t.W * t.C;  // in_pixels consecutive pixels
  const std::ptrdiff_t first_out = (std::ptrdiff_t(n) * t.P + p0) * t.Q;     // this tile's first output pixel

  // Chunk c0's operands into buffer b: the weight slices, the biases and the
  // gate (fp32, through registers), and D (project_stored) or E (no expand).
  const auto issue_chunk = [&](int c0, int b) {
    const int cw = min(kChunk, t.hidden - c0);
    if constexpr (kMakeD) {
      if (t.expand) stage_tile(wes(b), t.ldwe, we + c0, t.hidden, t.c_pad, kChunk, t.C, cw, t.vec);
      else stage_tile(es(b), t.lde, x_tile + c0, t.C, t.m_in, kChunk, in_pixels, cw, t.vec);
      stage_tile(dws(b), 0, dw + std::ptrdiff_t(c0) * kTaps, 0, 1, kChunk * kTaps, 1, cw * kTaps, t.vec);
    } else {
      stage_tile(ds(b), t.ldd, dbuf + first_out * t.hidden + c0, t.hidden, t.m_out, kChunk, out_pixels, cw, t.vec);
    }
    if constexpr (kProject)
      stage_tile(wps(b), t.ldwp, wp + n * t.wp_image_stride + std::ptrdiff_t(c0) * t.C_out + o0, t.C_out, kChunk,
                 t.cout_split, cw, min(t.cout_split, t.C_out - o0), t.vec);
    cp_async_commit();
    if (tid < kChunk) {
      const bool live = tid < cw;
      float* v = vs(b);
      v[tid] = live && t.expand ? to_float(be[c0 + tid]) : 0.0f;
      v[kChunk + tid] = live ? to_float(bd[c0 + tid]) : 0.0f;
      v[2 * kChunk + tid] = live && gate ? gate[std::ptrdiff_t(n) * t.hidden + c0 + tid] : 1.0f;
    }
  };

  // Prologue: the x tile (once; zero beyond the tile's pixels and beyond C) and chunk 0.
  if (kMakeD && t.expand) stage_tile(xs, t.ldx, x_tile, t.C, t.m_in, t.c_pad, in_pixels, t.C, t.vec);
  issue_chunk(c_first, 0);

  // Y accumulators: warp w owns m16n8 tiles w, w + 8, ... of the [m_out, cout_pad] output.
  const int n_tiles = t.cout_split / 8, acc_count = (t.m_out / 16) * n_tiles;
  float acc[kMaxAccTiles][4];
#pragma unroll
  for (int i = 0; i < kMaxAccTiles; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

  // Depthwise work items: (run, pair), pair = tid % 16 fixed (kThreads is a multiple of 16).
  const int pair = tid % kPairs, j0 = 2 * pair;
  const int runs_per_row = (t.Q + kRun - 1) / kRun, items = (p1 - p0) * runs_per_row * kPairs;
  if constexpr (kStage == Stage::project)  // D's rows past the tile's pixels: never written below, read by the mma
    for (int i = out_pixels * t.ldd + tid; i < t.m_out * t.ldd; i += kThreads) ds(0)[i] = from_float<Element>(0.0f);

  for (int c0 = c_first, b = 0; c0 < t.hidden; c0 += c_step, b ^= 1) {
    const int cw = min(kChunk, t.hidden - c0);
    cp_async_wait<0>();
    __syncthreads();  // chunk c0's operands are in buffer b; every thread is done with buffer b ^ 1
    if (c0 + c_step < t.hidden) issue_chunk(c0 + c_step, b ^ 1);
    const float* v = vs(b);

    if constexpr (kMakeD) {
      Element* e_s = es(t.expand ? 0 : b);
      {  // the chunk's depthwise weights [j][tap] -> fp32 [tap][j] (read after the next barrier)
        const Element* raw = dws(b);
        for (int i = tid; i < kChunk * kTaps; i += kThreads) {
          const int j = i / kTaps, tap = i - j * kTaps;
          dwf[tap * kChunk + j] = to_float(raw[i]);
        }
      }
      if (!t.expand) __syncthreads();  // (with an expand layer, the barrier after it)
      if (t.expand) {
        // 2a. E = φ(X·We[:, c0:c0+32] + be): A from the x tile, B from the We chunk [c][j] (.trans).
        //     Work unit u = (m tile u / 2, channel half u % 2: 16 channels, two n8 tiles), spread over
        //     the warps, so that a small tile (3 m tiles at 7 × 7) still keeps 6 warps busy.
        const Element* w_s = wes(b);
        for (int u = warp; u < (t.m_in / 16) * 2; u += kWarps) {
          const int mt = u / 2, jh = 16 * (u % 2);
          float e_acc[2][4] = {};
          const bool dead = jh >= cw;  // a last chunk of 16 channels: its upper half is zeros, no mma and no SFU
          for (int k0 = 0; k0 < (dead ? 0 : t.c_pad); k0 += 16) {
            uint32_t a[4], bq[4];
            ldmatrix_x4(a, shared_address(&xs[(mt * 16 + lane % 16) * t.ldx + k0 + 8 * (lane / 16)]));
            ldmatrix_x4_trans(bq, shared_address(&w_s[(k0 + lane % 16) * t.ldwe + jh + 8 * (lane / 16)]));
            const uint32_t b_lo[2] = {bq[0], bq[1]}, b_hi[2] = {bq[2], bq[3]};  // channels jh..jh+7, jh+8..jh+15
            mma_m16n8k16<Element>(e_acc[0], a, b_lo);
            mma_m16n8k16<Element>(e_acc[1], a, b_hi);
          }
#pragma unroll
          for (int nt = 0; nt < 2; ++nt)
#pragma unroll
            for (int half = 0; half < 2; ++half) {  // c0, c1: row g; c2, c3: row g + 8; columns 2t, 2t+1
              const MatrixCoord m = mma_c_coord(lane, 2 * half);
              const int j = jh + nt * 8 + m.col;  // channels j, j+1 (zero weights and bias beyond cw: φ(0) = 0)
              const float lo = dead ? 0.0f : fast_activate(t.act, e_acc[nt][2 * half] + v[j]);
              const float hi = dead ? 0.0f : fast_activate(t.act, e_acc[nt][2 * half + 1] + v[j + 1]);
              *reinterpret_cast<uint32_t*>(&e_s[(mt * 16 + m.row) * t.lde + j]) = pack_pair<Element>(lo, hi);
            }
        }
        __syncthreads();  // E complete
      }

      // 2b. D = φ(dw(E) + bd) (⊙ g). Item (run, pair): output row orow, columns q0..q0+kRun−1, channels j0, j0+1.
      //     plain loop:  for q in run: for r, s: d[q] += w[r][s] · e[h(r)][q·stride + s − pad]
      //     here:        for r: win[u] = e[h(r)][q0·stride − pad + u], u < kWindow (0 outside the image);
      //                         for s: for i: d[i] += w[r][s] · win[i·stride + s]
      const float b0 = v[kChunk + j0], b1 = v[kChunk + j0 + 1];
      const float g0 = kStage == Stage::project ? v[2 * kChunk + j0] : 1.0f;
      const float g1 = kStage == Stage::project ? v[2 * kChunk + j0 + 1] : 1.0f;
      float s0 = 0.0f, s1 = 0.0f;
      Element* d_s = ds(0);
      for (int item = tid; item < items; item += kThreads) {
        const DwRun run = dw_run(item / kPairs, runs_per_row);
        const int op = p0 + run.row;
        const int w0 = run.q0 * kStride - t.pad;                  // the window's first input column
        const bool interior = w0 >= 0 && w0 + kWindow <= t.W;     // no column of the window outside the image
        float d0[kRun], d1[kRun];
#pragma unroll
        for (int i = 0; i < kRun; ++i) d0[i] = b0, d1[i] = b1;
#pragma unroll
        for (int r = 0; r < K; ++r) {
          const int h = op * kStride + r - t.pad;
          if (h < 0 || h >= t.H) continue;  // zero padding of e (h0 <= h < h1 for every h inside the image)
          const Element* e_row = e_s + (h - h0) * t.W * t.lde + j0;
          float2 win[kWindow];
          if (interior) {  // most runs (dw_run pairs the two edge runs of a row in one warp)
#pragma unroll
            for (int u = 0; u < kWindow; ++u) win[u] = load_pair(e_row + (w0 + u) * t.lde);
          } else {
#pragma unroll
            for (int u = 0; u < kWindow; ++u) {
              const int w = w0 + u;
              win[u] = (w >= 0 && w < t.W) ? load_pair(e_row + w * t.lde) : make_float2(0.0f, 0.0f);
            }
          }
#pragma unroll
          for (int s = 0; s < K; ++s) {
            const float2 wt = *reinterpret_cast<const float2*>(&dwf[(r * K + s) * kChunk + j0]);  // channels j0, j0+1
#pragma unroll
            for (int i = 0; i < kRun; ++i) {
              d0[i] = fmaf(wt.x, win[i * kStride + s].x, d0[i]);
              d1[i] = fmaf(wt.y, win[i * kStride + s].y, d1[i]);
            }
          }
        }
#pragma unroll
        for (int i = 0; i < kRun; ++i) {
          const int q = run.q0 + i;
          if (q >= t.Q) break;
          const float a0 = fast_activate(t.act, d0[i]), a1 = fast_activate(t.act, d1[i]);
          if constexpr (kSums) s0 += a0, s1 += a1;
          if constexpr (kStage != Stage::sums)
            *reinterpret_cast<uint32_t*>(&d_s[(run.row * t.Q + q) * t.ldd + j0]) = pack_pair<Element>(a0 * g0, a1 * g1);
        }
      }
      if constexpr (kSums) {
        red[(tid / kPairs) * kChunk + j0] = s0;
        red[(tid / kPairs) * kChunk + j0 + 1] = s1;
      }
      __syncthreads();  // D (and the partial sums) complete
      if constexpr (kSums) {
        // The tile's channel sums: the 16 pixel groups' partials added in group order.
        if (tid < cw) {
          float s = 0.0f;
          for (int g = 0; g < kPixelGroups; ++g) s += red[g * kChunk + tid];
          partial[(std::ptrdiff_t(n) * t.tiles + tile) * t.hidden + c0 + tid] = s;
        }
      }
      if constexpr (kStage == Stage::store) {
        // D -> dbuf: 16 bytes (8 channels of one pixel) per store when aligned.
        Element* out = dbuf + first_out * t.hidden + c0;
        if (t.vec) {
          const int per_pixel = cw / 8;
          for (int i = tid; i < out_pixels * per_pixel; i += kThreads) {
            const int pix = i / per_pixel, c = (i - pix * per_pixel) * 8;
            *reinterpret_cast<uint4*>(out + pix * std::ptrdiff_t(t.hidden) + c) =
                *reinterpret_cast<const uint4*>(&d_s[pix * t.ldd + c]);
          }
        } else {
          for (int i = tid; i < out_pixels * cw; i += kThreads) {
            const int pix = i / cw, c = i - pix * cw;
            out[pix * std::ptrdiff_t(t.hidden) + c] = d_s[pix * t.ldd + c];
          }
        }
      }
    }

    if constexpr (kProject) {
      // 3. Y += (D ⊙ g)·Wp[c0:c0+32, :]: A from D [pixel][j], B from the Wp chunk [j][o] (.trans).
      const Element* d_s = ds(kMakeD ? 0 : b);
      const Element* w_s = wps(b);
#pragma unroll
      for (int i = 0; i < kMaxAccTiles; ++i) {
        const int at = warp + kWarps * i;
        if (at >= acc_count) break;
        const int mt = at / n_tiles, nt = at - mt * n_tiles;
#pragma unroll
        for (int k0 = 0; k0 < kChunk; k0 += 16) {
          uint32_t a[4], bb[2];
          ldmatrix_x4(a, shared_address(&d_s[(mt * 16 + lane % 16) * t.ldd + k0 + 8 * (lane / 16)]));
          ldmatrix_x2_trans(bb, shared_address(&w_s[(k0 + lane % 16) * t.ldwp + nt * 8]));
          if (kStage == Stage::project_stored && gate) {
            // ⊙ g on the fragment (when the gate is not folded into the weights): register r holds
            // channels k0 + 2t (+1) + 8·(r / 2), rounded once.
#pragma unroll
            for (int r = 0; r < 4; ++r) {
              const int j = k0 + 2 * (lane % 4) + 8 * (r / 2);
              const float2 dv = unpack_pair<Element>(a[r]);
              a[r] = pack_pair<Element>(dv.x * v[2 * kChunk + j], dv.y * v[2 * kChunk + j + 1]);
            }
          }
          mma_m16n8k16<Element>(acc[i], a, bb);
        }
      }
    }
  }

  if constexpr (kProject) {
    // 4. y = Y + bp (+ x), stored once: a lane's two adjacent columns as one 32-bit store when C_out is even.
#pragma unroll
    for (int i = 0; i < kMaxAccTiles; ++i) {
      const int at = warp + kWarps * i;
      if (at >= acc_count) break;
      const int mt = at / n_tiles, nt = at - mt * n_tiles;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const MatrixCoord m = mma_c_coord(lane, 2 * half);
        const int pix = mt * 16 + m.row, o = o0 + nt * 8 + m.col;
        if (pix >= out_pixels || o >= t.C_out) continue;
        const std::ptrdiff_t at_y = (first_out + pix) * t.C_out + o;
        const std::ptrdiff_t at_x = (first_out + pix) * t.C + o;  // residual: stride 1, C_out == C, same pixel
        float lo = acc[i][2 * half] + to_float(bp[o]);
        if (t.pairs) {  // o + 1 < C_out too (C_out even, o even)
          float hi = acc[i][2 * half + 1] + to_float(bp[o + 1]);
          if (t.residual) {
            const float2 r = load_pair(x + at_x);
            lo += r.x, hi += r.y;
          }
          *reinterpret_cast<uint32_t*>(y + at_y) = pack_pair<Element>(lo, hi);
        } else {
          if (t.residual) lo += to_float(x[at_x]);
          y[at_y] = from_float<Element>(lo);
          if (o + 1 < t.C_out) {
            float hi = acc[i][2 * half + 1] + to_float(bp[o + 1]);
            if (t.residual) hi += to_float(x[at_x + 1]);
            y[at_y + 1] = from_float<Element>(hi);
          }
        }
      }
    }
  }
}

// ---- launcher --------------------------------------------------------------------------------
// One stage over the whole batch, on the stage's own tile (choose_tile(p, kStage)).
// wp_images (project_stored): per-image projection weights [N, hidden, C_out]
// from gated_weights, used instead of a.project_w.
template <class Element, Stage kStage>
void launch_stage(const MBConvProblem& p, const Args<MBConvProblem>& a, const float* gate, float* partial, void* dbuf,
                  const void* wp_images = nullptr) {
  Tile t = choose_tile(p, kStage);
  const void* wp = wp_images ? wp_images : a.project_w;
  t.wp_image_stride = wp_images ? std::ptrdiff_t(p.hidden()) * p.C_out : 0;
  t.vec = vector_copies_ok(p, {a.x, a.expand_w, a.dw_w, wp, dbuf});
  t.pairs = p.C_out % 2 == 0 && aligned_to(a.y, 4) && aligned_to(a.x, 4);
  const auto go = [&](auto kernel, const char* name) {
    allow_dynamic_shared(kernel, t.bytes, name);
    split_tile(t, kStage, resident_blocks(kernel, kThreads, t.bytes));
    kernel<<<dim3(unsigned(t.tiles * t.splits), unsigned(p.N)), kThreads, t.bytes>>>(
        t, static_cast<const Element*>(a.x), static_cast<const Element*>(a.expand_w),
        static_cast<const Element*>(a.expand_b), static_cast<const Element*>(a.dw_w),
        static_cast<const Element*>(a.dw_b), gate, static_cast<const Element*>(wp),
        static_cast<const Element*>(a.project_b), static_cast<Element*>(a.y), partial, static_cast<Element*>(dbuf));
    check_launch(name);
  };
  if (p.kernel == 3 && p.stride == 1) go(mbconv_tile_kernel<Element, kStage, 3, 1>, "mbconv_tile_kernel<k=3,s=1>");
  else if (p.kernel == 3) go(mbconv_tile_kernel<Element, kStage, 3, 2>, "mbconv_tile_kernel<k=3,s=2>");
  else if (p.stride == 1) go(mbconv_tile_kernel<Element, kStage, 5, 1>, "mbconv_tile_kernel<k=5,s=1>");
  else go(mbconv_tile_kernel<Element, kStage, 5, 2>, "mbconv_tile_kernel<k=5,s=2>");
}

}  // namespace convlab::gpu::mbconv
