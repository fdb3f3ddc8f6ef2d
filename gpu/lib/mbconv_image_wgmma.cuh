// gpu/lib/mbconv_image_wgmma.cuh — the kernel of lesson 11's one-kernel MBConv on Hopper's warpgroup
// MMA, shared by its two rungs: 11g (gpu/mbconv/11g_fused_image_wgmma.cu: one CTA per image) and 11j
// (gpu/mbconv/11j_fused_image_cluster.cu: a cluster of CTAs per image, one band of output rows each).
// Each rung's file carries the idea, the cost and the contract; this file the code and its layout's
// names (gpu/lib/mbconv_image_wgmma_layout.hpp).
//
// Per CTA, three warpgroups:
//   warpgroup 0     E = φ(X·We[:, chunk] + be), one 64-channel chunk ahead of the depthwise: wgmma
//                   m64n64k16 per m tile (1, or 2 for a band of up to 128 pixels), We by TMA (or
//                   cp.async) two chunks ahead, E handed over through mbarriers (full / empty)
//   warpgroups 1-2  D = φ(dw(E) + bd) into D's K-major panels; channel sums; FC1's share
//   all             the SE (with kSplit, the bands' FC1 partials read from every CTA of the cluster
//                   through distributed shared memory, in one fixed order, so that every CTA
//                   computes the same gate), D *= g, then Y = D·Wp + bp (+ x) with Wp streamed in
//                   stages of 64 rows
#pragma once

#include "gpu/lib/hopper/cluster.cuh"               // cluster_sync, map_shared_to_rank, ld_shared_cluster_f32, ClusterLaunch
#include "gpu/lib/hopper/mbarrier.cuh"              // mbarrier_init, mbarrier_arrive, mbarrier_wait
#include "gpu/lib/hopper/tma.cuh"                   // tma_load_2d, cached_tma_tile_2d
#include "gpu/lib/mbconv_fused.cuh"                 // activate_pair, load_pair, unpack_pair
#include "gpu/lib/mbconv_image_se.cuh"
#include "gpu/lib/mbconv_image_wgmma_layout.hpp"
#include "gpu/lib/phase_stamps.cuh"
#include "gpu/lib/wgmma.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv::image_wgmma {

using gpu::hopper::mbarrier_arrive;
using gpu::hopper::mbarrier_arrive_expect_tx;
using gpu::hopper::mbarrier_init;
using gpu::hopper::mbarrier_wait;
using gpu::hopper::tma_load_2d;

inline constexpr int kThreads = kWgImageThreads;
// Between the roles only mbarriers: E's slots change hands through full[s] (the expand's 128
// threads arrive, the depthwise waits) and empty[s] (the depthwise's 256 arrive, the expand waits);
// chunk c uses slot c % slots in round c / slots. (racecheck does not order accesses by named
// barriers of part of the CTA: with bar.arrive/bar.sync hand-overs it reported races.)

struct WgParams {
  int H, W, C, hidden, cr, C_out, P, Q, stride;
  bool has_se, residual, vec_x, vec_we, vec_wp, vec_w1, vec_w2, pairs_y;
  bool tma_we, tma_wp;  // We's chunks and Wp's stages by TMA (rows a multiple of 8 elements, 16-byte aligned)
  bool fc1_in_loop;     // the SE's first layer inside the chunk loop (Cr ≤ kWgLoopFc1Max)
  bool pairs_w1;        // W1's two columns of a lane in one 4-byte load (Cr even, W1 4-byte aligned)
  bool pairs_dw;        // a lane's depthwise taps and bias in 4-byte loads (dw_w, dw_b 4-byte aligned)
  bool pairs_be;        // the expand's bias in 4-byte loads (hidden even, be 4-byte aligned)
  WgImageLayout l;
  unsigned long long* stamps;  // CONVLAB_PHASE_STAMPS: the phases' %globaltimer stamps (else null)
  unsigned long long* trace;   // CONVLAB_CHUNK_TRACE: the chunk loop's steps, SM clock (else null)
};

// The phase stamps (gpu/lib/phase_stamps.cuh): entry, then the end of each phase below.
inline constexpr int kStampKinds = 8;
inline const std::vector<std::string> kWgPhases = {"setup", "chunk loop", "loop barrier", "SE: z", "SE: FC2", "SE: gate sweep",
                                          "project"};
// The chunk trace (CONVLAB_CHUNK_TRACE, gpu/lib/phase_stamps.cuh): thread 0 stamps the expand's
// steps of each chunk, thread 128 the depthwise's, and thread 0 the project's steps of each Wp
// stage (a stage is 64 hidden rows, as a chunk is 64 hidden channels: stage kk is "chunk" kk);
// each name is the step that ends at its stamp.
enum TraceStep : int {
  kExpandTop, kWeLanded, kWgmmaIssued, kWgmmaDone, kWgSynced, kSlotEmpty, kFullArrived,
  kDwTop, kTapsReady, kSlotFull, kSegmentsDone, kEmptyArrived, kFc1Done,
  kProjectTop, kProjectSynced, kProjectLanded, kProjectRetired, kTraceSteps
};
inline const std::vector<std::vector<std::string>> kWgTraceRoles = {
    {"expand, thread 0", "We landed", "12 wgmma issued, be loads", "wgmma done", "warpgroup synced, We issued",
     "E slot empty", "bias, phi, E stored, full arrived"},
    {"depthwise, thread 128", "taps unpacked, next taps issued", "E slot full", "row segments done",
     "sums shuffled, empty arrived", "FC1 share"},
    {"project, thread 0 (a Wp stage)", "stage barrier passed, a stage asked for", "stage landed",
     "wgmma issued and retired"}};

// A 16-byte piece of a row-major global matrix (row `src`, columns col .. col + 7, of which those
// below `valid` exist) into shared memory at `dst`: one cp.async (vec: 16-byte aligned rows, valid
// a multiple of 8), else eight element loads and one 16-byte store. Past `valid` it is zero.
template <class Element>
__device__ __forceinline__ void copy_piece(uint32_t dst, const Element* src, int col, int valid, bool vec) {
  if (vec) {
    const bool in = col < valid;
    cp_async_16(dst, in ? src + col : src, in);
    return;
  }
  uint32_t words[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float lo = col + 2 * i < valid ? to_float(src[col + 2 * i]) : 0.0f;
    const float hi = col + 2 * i + 1 < valid ? to_float(src[col + 2 * i + 1]) : 0.0f;
    words[i] = pack_pair<Element>(lo, hi);
  }
  st_shared_16(dst, words);
}

// wgmma's matrix descriptors for this kernel's 128-byte-swizzled tiles (gpu/lib/wgmma.cuh, §9.7.15
// of the PTX ISA): K-major (A, the 16 k of a row contiguous, k0 a multiple of 16, panels of 64 k
// panel_bytes apart) and MN-major (B, 64 n of a k row contiguous, the next 64 n lbo bytes on).
__device__ __forceinline__ uint64_t k_major(uint32_t tile, int k0, uint32_t panel_bytes) {
  return wgmma_descriptor(tile + (k0 / 64) * panel_bytes + 2 * (k0 % 64), 16, 1024, WgmmaSwizzle::b128);
}
__device__ __forceinline__ uint64_t mn_major(uint32_t tile, int k0, uint32_t lbo) {
  return wgmma_descriptor(tile + k0 * 128, lbo, 1024, WgmmaSwizzle::b128);
}

// The Wp pieces this thread copies into every stage: stage rows kWgProjectK × nb·8 pieces of 16
// bytes, piece i = tid + 384·m; where each lands in a stage (MN-major, panels of 64 output
// channels) and which row and column of Wp it is, worked out once per CTA, not per stage.
inline constexpr int kWpPieces = (kWgProjectK * kWgMaxNBlocks * 8 + kThreads - 1) / kThreads;
struct WpPieces {
  int n = 0;
  int row[kWpPieces], col[kWpPieces];
  uint32_t dst[kWpPieces];
  __device__ explicit WpPieces(const WgImageLayout& l) {
    const int pieces = l.nb * 8;
#pragma unroll
    for (int m = 0; m < kWpPieces; ++m) {
      const int i = int(threadIdx.x) + kThreads * m, r = i / pieces;
      row[m] = r, col[m] = 8 * (i - r * pieces), dst[m] = uint32_t(sw128_offset(r, col[m], l.wp_panel));
      if (i < kWgProjectK * pieces) n = m + 1;
    }
  }
};

// Wp rows kk·kWgProjectK .. + kWgProjectK (zero past hidden) -> stage kk % stages at wps_at (zero
// past C_out); every thread issues its pieces and commits one cp.async group (an empty one past
// the last stage).
template <class Element>
__device__ __forceinline__ void issue_wp_stage(const WgParams& prm, const WpPieces& pc, uint32_t wps_at,
                                               const Element* __restrict__ wp, int kk, int stages) {
  const WgImageLayout& l = prm.l;
  if (kk < l.hidden_p / kWgProjectK) {
    const int k0 = kk * kWgProjectK;
    const uint32_t stage = wps_at + uint32_t((kk % stages) * l.wp_stage);
#pragma unroll
    for (int m = 0; m < kWpPieces; ++m)
      if (m < pc.n) {
        const int row = k0 + pc.row[m];
        const bool in = row < prm.hidden;
        copy_piece(stage + pc.dst[m], wp + std::ptrdiff_t(in ? row : 0) * prm.C_out, pc.col[m], in ? prm.C_out : 0,
                   prm.vec_wp);
      }
  }
  cp_async_commit();
}

// The same stage by TMA: thread 0 asks for its nb boxes of kWgProjectK × 64 (zeros past hidden and
// C_out) and the stage's mbarrier (at wp_full + 8·(kk % stages)) counts their bytes.
__device__ __forceinline__ void issue_wp_stage_tma(const WgParams& prm, uint32_t wps_at, const CUtensorMap* wp_map,
                                                   uint32_t wp_full, int kk, int stages) {
  const WgImageLayout& l = prm.l;
  if (threadIdx.x != 0 || kk >= l.hidden_p / kWgProjectK) return;
  const uint32_t stage = wps_at + uint32_t((kk % stages) * l.wp_stage), bar = wp_full + 8 * (kk % stages);
  mbarrier_arrive_expect_tx(bar, uint32_t(l.wp_stage));
  for (int b = 0; b < l.nb; ++b) tma_load_2d(stage + uint32_t(b * l.wp_panel), wp_map, bar, 64 * b, kk * kWgProjectK);
}

// The project of the CTA's pixels: Y[rows, C_out] = D·Wp + bp (+ x), D the gated depthwise output
// in shared memory (K-major panels, kMT m64 tiles), Wp streamed in kStages stages of kWgProjectK
// rows into the room at wps_at (stages 0 .. kStages - 2 already issued: kStages - 1 ahead). The
// tasks (n64 block t / kMT, m tile t % kMT) go round the warpgroups: warpgroup w takes tasks w,
// w + 3, ... (kTasks of them; one past the last task repeats the last). xo and yo point at the
// CTA's first output pixel in x (the residual) and y. All 384 threads. Every stage's wgmma group
// is drained before the next stage (lessons/11-mbconv/NOTES.md has what leaving one in flight
// measured).
template <class Element, int kTasks, int kStages, int kMT, bool kTrace>
__device__ __forceinline__ void project(const WgParams& prm, const WpPieces& pc, uint32_t ds_at, uint32_t wps_at,
                                        int rows, const Element* xo, const Element* __restrict__ wp,
                                        const Element* __restrict__ bp, Element* __restrict__ yo, const CUtensorMap* wp_map,
                                        uint32_t wp_full) {
  const WgImageLayout& l = prm.l;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, wg = tid / 128, g = lane / 4, tq = lane % 4;
  const int k_stages = l.hidden_p / kWgProjectK, tasks = l.nb * kMT;
  int blk[kTasks], mtile[kTasks];
#pragma unroll
  for (int b = 0; b < kTasks; ++b) {
    const int t = min(wg + 3 * b, tasks - 1);
    blk[b] = t / kMT, mtile[b] = t % kMT;
  }
  float acc[kTasks][32];
#pragma unroll
  for (int b = 0; b < kTasks; ++b)
#pragma unroll
    for (int i = 0; i < 32; ++i) acc[b][i] = 0.0f;
  // Step e of stage kk (the trace instantiation only; thread 0).
  const auto step = [&](int kk, int e) {
    if constexpr (kTrace)
      if (tid == 0) chunk_stamp(prm.trace, l.chunks, kTraceSteps, kk, e);
  };
  for (int kk = 0; kk < k_stages; ++kk) {
    step(kk, kProjectTop);
    if (!prm.tma_wp) cp_async_wait<kStages - 2>();
    fence_proxy_async_shared();  // this thread's Wp pieces (and, at kk = 0, its gated D) seen by wgmma
    __syncthreads();             // (cp.async: stage kk whole); every warpgroup is done reading stage kk - 1
    if (prm.tma_wp) {
      // wp_refill_stage(kk, kStages, false): stage kk − 1's slot is free, the ring runs S − 1 ahead
      issue_wp_stage_tma(prm, wps_at, wp_map, wp_full, kk + kStages - 1, kStages);
      step(kk, kProjectSynced);
      mbarrier_wait(wp_full + 8 * (kk % kStages), (kk / kStages) & 1);  // stage kk landed
    } else {
      issue_wp_stage(prm, pc, wps_at, wp, kk + kStages - 1, kStages);
      step(kk, kProjectSynced);
    }
    step(kk, kProjectLanded);
    const uint32_t stage = wps_at + uint32_t((kk % kStages) * l.wp_stage);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kWgProjectK; ks += 16) {
      const uint64_t a = k_major(ds_at, kk * kWgProjectK + ks, uint32_t(l.d_panel));
#pragma unroll
      for (int b = 0; b < kTasks; ++b) {
        const uint64_t at = kMT == 1 ? a : wgmma_advance(a, uint32_t(mtile[b]) * 64 * 128);  // m tile: 64 rows on
        wgmma_m64nNk16_ss_mn_major_b<Element, 64>(acc[b], at, mn_major(stage + blk[b] * l.wp_panel, ks, l.wp_panel), true);
      }
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    fence_operands(acc);
    step(kk, kProjectRetired);
  }
  cp_async_wait<0>();

  // The epilogue of a task: its bias and residual loads all issued first (one round trip to L2),
  // then the adds and the stores. Loaded between the stores, each load would wait for the one
  // before it: x may alias y for all the compiler knows, so it keeps them in program order.
  const int row0 = 16 * (warp % 4) + g;
#pragma unroll
  for (int b = 0; b < kTasks; ++b) {
    if (wg + 3 * b >= tasks) continue;  // a repeated task
    float add[8][2][2];                 // [j][h][column]: bp, plus x's pixel with the residual
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int col = 64 * blk[b] + 8 * j + 2 * tq;
      const bool one = col < prm.C_out, two = col + 1 < prm.C_out;
      const float bp0 = one ? to_float(__ldg(bp + col)) : 0.0f, bp1 = two ? to_float(__ldg(bp + col + 1)) : 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = 64 * mtile[b] + row0 + 8 * h;
        const Element* xr = xo + std::ptrdiff_t(row) * prm.C + col;
        const bool res = prm.residual && row < rows;  // stride 1 and C = C_out: y's pixel is x's
        add[j][h][0] = bp0 + (res && one ? to_float(__ldg(xr)) : 0.0f);
        add[j][h][1] = bp1 + (res && two ? to_float(__ldg(xr + 1)) : 0.0f);
      }
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int col = 64 * blk[b] + 8 * j + 2 * tq;
      if (col >= prm.C_out) continue;
      const bool two = col + 1 < prm.C_out;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = 64 * mtile[b] + row0 + 8 * h;
        if (row >= rows) continue;
        const float v0 = acc[b][4 * j + 2 * h] + add[j][h][0], v1 = acc[b][4 * j + 2 * h + 1] + add[j][h][1];
        Element* out = yo + std::ptrdiff_t(row) * prm.C_out + col;
        if (two && prm.pairs_y) *reinterpret_cast<uint32_t*>(out) = pack_pair<Element>(v0, v1);
        else {
          out[0] = from_float<Element>(v0);
          if (two) out[1] = from_float<Element>(v1);
        }
      }
    }
  }
}

// The depthwise of one output row segment (up to kSeg pixels q0 .. q0 + kSeg − 1 of a row, stride
// S) for a lane's channel pair: the segment's input window, row r of the taps at a time, each E pair
// loaded and converted once and added into every output of the segment that one of its taps
// reaches (up to K of them). e points at the pair's channels of the segment's top-left tap, E's rows
// ep pixels apart; span: the window's valid columns ((nq − 1)·S + K; the rest of the unrolled window
// reads nothing). wk: channel 0's K² taps, then channel 1's.
template <int K, int S, int kSeg, class Element>
__device__ __forceinline__ void dw_segment(const Element* e, int ep, int span, const float (&wk)[2 * K * K],
                                           float (&a0)[kSeg], float (&a1)[kSeg]) {
  constexpr int kWindow = (kSeg - 1) * S + K;
#pragma unroll
  for (int r = 0; r < K; ++r) {
    const Element* row = e + r * ep * kWgLde;
#pragma unroll
    for (int j = 0; j < kWindow; ++j) {
      const float2 v = j < span ? load_pair(row + j * kWgLde) : make_float2(0.0f, 0.0f);
#pragma unroll
      for (int o = 0; o < kSeg; ++o) {
        const int t = j - o * S;  // the tap column that takes input column j to output o
        if (t >= 0 && t < K) {
          a0[o] = fmaf(v.x, wk[r * K + t], a0[o]);
          a1[o] = fmaf(v.y, wk[K * K + r * K + t], a1[o]);
        }
      }
    }
  }
}

// Grid: N CTAs (one per image), or with kSplit N clusters of l.split CTAs (cluster c = image c,
// CTA rank k its band of output rows, wg_band); 384 threads, l.bytes of dynamic shared memory.
// kSeg: the depthwise's output row segment (8, or 16 for the bands of 14-pixel rows).
template <class Element, int K, bool kRelu, bool kTrace, bool kSplit, int kSeg>
__global__ void __launch_bounds__(kThreads, 1)
    mbconv_image_wgmma_kernel(const __grid_constant__ CUtensorMap we_map, const __grid_constant__ CUtensorMap wp_map,
                              WgParams prm, const Element* __restrict__ x, const Element* __restrict__ we,
                              const Element* __restrict__ be, const Element* __restrict__ dw,
                              const Element* __restrict__ bd, const Element* __restrict__ w1,
                              const Element* __restrict__ b1, const Element* __restrict__ w2,
                              const Element* __restrict__ b2, const Element* __restrict__ wp,
                              const Element* __restrict__ bp, Element* __restrict__ y) {
  extern __shared__ unsigned char smem_raw[];
  constexpr int kMT = kSplit ? 2 : 1;  // m64 tiles of the expand's and the project's M
  const WgImageLayout& l = prm.l;
  // Dynamic shared memory is only 16-byte aligned for sure; the swizzle atoms must start on 1024.
  const uint32_t raw = shared_address(smem_raw), base = (raw + 1023u) & ~1023u;
  unsigned char* smem = smem_raw + (base - raw);
  const uint32_t ds_at = base + uint32_t(l.ds), xs_at = base + uint32_t(l.xs), wes_at = base + uint32_t(l.wes);
  Element* es = reinterpret_cast<Element*>(smem + l.es);
  float* pooled = reinterpret_cast<float*>(smem + l.pooled);
  float* red = reinterpret_cast<float*>(smem + l.red);
  float* z = reinterpret_cast<float*>(smem + l.z);
  short* erow = reinterpret_cast<short*>(smem + l.rows);  // the expand's rows in bordered E (-1: past the image)
  short* tap0 = erow + 64 * kMT;                           // each output pixel's top-left tap in E
  const uint32_t bars = base + uint32_t(l.bars);
  const auto full = [&](int slot) { return bars + 8 * (kWgBarEFull + slot); };
  const auto empty = [&](int slot) { return bars + 8 * (kWgBarEEmpty + slot); };
  const auto we_full = [&](int slot) { return bars + 8 * (kWgBarWe + slot); };
  const uint32_t wgbar = bars + 8 * kWgBarExpand, wp_full = bars + 8 * kWgBarWp;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, wg = tid / 128, g = lane / 4, tq = lane % 4;
  const int HW = l.HW, PQ = l.PQ, hidden = prm.hidden, chunks = l.chunks, slots = l.e_slots;
  // This CTA's image and band: output rows p0 .. p0 + band.rows − 1, input rows band.ih0 .. ih1 − 1;
  // px_in and px_out pixels; the bordered E starts at input row e_top.
  const int rank = kSplit ? gpu::hopper::cluster_cta_rank() : 0, n = kSplit ? int(blockIdx.x) / l.split : int(blockIdx.x);
  const WgBand band = kSplit ? wg_band(prm.P, prm.H, K, prm.stride, l.split, rank) : WgBand{0, prm.P, 0, prm.H};
  const int px_in = kSplit ? (band.ih1 - band.ih0) * prm.W : HW, px_out = kSplit ? band.rows * prm.Q : PQ;
  const int e_top = band.p0 * prm.stride - l.pad;
  const Element* xn = x + (std::ptrdiff_t(n) * HW + std::ptrdiff_t(band.ih0) * prm.W) * prm.C;  // the band's first input row
  const std::size_t e_elems = l.e_slot / 2;  // one E slot, in elements
  // With FC1 in the chunk loop, thread 128 + o makes z[o] after it: b1[o] is loaded now.
  const int z_out = tid - 128;
  const float b1v = prm.fc1_in_loop && z_out >= 0 && z_out < prm.cr ? to_float(b1[z_out]) : 0.0f;

  if (tid == 0) phase_stamp(prm.stamps, 0, kStampKinds);
  // Step `e` of chunk c (the trace instantiation only; threads 0 and 128).
  const auto step = [&](int c, int e) {
    if constexpr (kTrace)
      if (tid % 128 == 0 && wg < 2) chunk_stamp(prm.trace, chunks, kTraceSteps, c, e);
  };
  // ---- x (all threads), E's zero borders, the row tables; We chunks 0 and 1 (warpgroup 0) -------
  const int x_pieces = l.cp / 8;
  for (int i = tid; i < l.rx * x_pieces; i += kThreads) {
    const int r = i / x_pieces, col = 8 * (i - r * x_pieces);
    copy_piece(xs_at + uint32_t(sw128_offset(r, col, l.x_panel)), xn + std::ptrdiff_t(min(r, px_in - 1)) * prm.C, col,
               r < px_in ? prm.C : 0, prm.vec_x);
  }
  cp_async_commit();
  for (std::size_t i = tid; i < slots * e_elems / 8; i += kThreads) reinterpret_cast<uint4*>(es)[i] = make_uint4(0, 0, 0, 0);
  for (int r = tid; r < 64 * kMT; r += kThreads) {
    const int ih = r / prm.W;  // the band's input row
    erow[r] = short(r < px_in ? (band.ih0 + ih - e_top) * l.ep + r - ih * prm.W + l.pad : -1);
  }
  for (int pix = tid; pix < px_out; pix += kThreads) {
    const int p = pix / prm.Q, q = pix - p * prm.Q;
    tap0[pix] = short(p * prm.stride * l.ep + q * prm.stride);
  }
  // We[:, chunk c] -> slot c % 2: row k (k < C) of 64 channels, MN-major; warpgroup 0's threads only.
  // Thread t copies the 16-byte piece t % 8 of rows t / 8, t / 8 + 16, ...: its column, and the
  // swizzle's XOR (rows 16 apart share k % 8), are the same in every row and chunk.
  const int we_k = tid / 8, we_col = 8 * (tid % 8);
  const uint32_t we_off = uint32_t(we_k * 128 + 16 * ((tid % 8) ^ (we_k % 8)));
  const auto issue_we = [&](int c) {
    if (prm.tma_we) {  // thread 0: boxes of we_box k rows × 64 channels (zeros past C and hidden)
      if (tid == 0 && c < chunks) {
        const uint32_t bar = we_full(c % 2), dst = wes_at + uint32_t((c % 2) * l.we_slot);
        mbarrier_arrive_expect_tx(bar, uint32_t(l.we_slot));
        for (int k0 = 0; k0 < l.cp; k0 += l.we_box) tma_load_2d(dst + uint32_t(k0 * 128), &we_map, bar, c * kWgChunk, k0);
      }
      return;
    }
    if (c < chunks) {
      const int h0 = c * kWgChunk;
      uint32_t dst = wes_at + uint32_t((c % 2) * l.we_slot) + we_off;
      const Element* src = we + std::ptrdiff_t(we_k) * hidden + h0;
      for (int k = we_k; k < l.cp; k += 16, dst += 16 * 128, src += std::ptrdiff_t(16) * hidden)
        copy_piece(dst, k < prm.C ? src : we, we_col, k < prm.C ? hidden - h0 : 0, prm.vec_we);
    }
    cp_async_commit();
  };
  // Warpgroup 0's own barrier (an mbarrier of 128 arrivals: every thread arrives, then waits for the
  // phase), between its cp.async and its wgmma.
  uint32_t wg_phase = 0;
  const auto wg_sync = [&] {
    mbarrier_arrive(wgbar);
    mbarrier_wait(wgbar, wg_phase);
    wg_phase ^= 1u;
  };
  if (tid == 0) {
    for (int s = 0; s < 2; ++s) mbarrier_init(full(s), 128), mbarrier_init(empty(s), kThreads - 128);
    mbarrier_init(wgbar, 128);
    for (int s = 0; s < 2; ++s) mbarrier_init(we_full(s), 1);
    for (int s = 0; s < kWgWpBars; ++s) mbarrier_init(wp_full + 8 * s, 1);
    gpu::hopper::fence_mbarrier_init();
    if (prm.tma_we) gpu::hopper::tma_prefetch_descriptor(&we_map);
    if (prm.tma_wp) gpu::hopper::tma_prefetch_descriptor(&wp_map);
  }
  if (wg == 0) issue_we(0), issue_we(1);
  if (wg == 0 && !prm.tma_we) cp_async_wait<1>();  // x and We chunk 0 (chunk 1 may still fly)
  else cp_async_wait<0>();
  fence_proxy_async_shared();  // what cp.async and st.shared wrote, visible to wgmma
  __syncthreads();
  if (tid == 0) phase_stamp(prm.stamps, 1, kStampKinds);

  if (wg == 0) {
    // ---- warpgroup 0: E = φ(X·We[:, chunk] + be), one chunk ahead of the depthwise ------------------
    // be of this thread's columns 8j + 2tq, + 1 of the next chunk (packed pairs), loaded a chunk ahead.
    uint32_t be_next[8];
    const unsigned short* be16 = reinterpret_cast<const unsigned short*>(be);
    const auto fetch_be = [&](int c) {
      const int h0 = c * kWgChunk + 2 * tq;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int h = h0 + 8 * j;
        if (prm.pairs_be) {  // h even, hidden even: both or neither exist
          be_next[j] = c < chunks && h < hidden ? __ldg(reinterpret_cast<const unsigned*>(be16 + h)) : 0u;
        } else {
          const uint32_t lo = c < chunks && h < hidden ? __ldg(be16 + h) : 0u;
          const uint32_t hi = c < chunks && h + 1 < hidden ? __ldg(be16 + h + 1) : 0u;
          be_next[j] = lo | hi << 16;
        }
      }
    };
    fetch_be(0);
    // The descriptors of k step 0, built once: x's (the same every chunk) and each We slot's. A k
    // step adds 32 bytes to x's address inside a 64-column panel (the next panel: x_panel − 96
    // on) and 16 rows of 128 bytes to We's (gpu/lib/wgmma.cuh, wgmma_advance).
    const uint64_t x_desc = k_major(xs_at, 0, l.x_panel);
    const uint64_t we_desc0 = mn_major(wes_at, 0, l.we_slot), we_desc1 = mn_major(wes_at + uint32_t(l.we_slot), 0, l.we_slot);
    const uint32_t x_next_panel = uint32_t(l.x_panel) - 96;
    for (int c = 0; c < chunks; ++c) {
      const int slot = c % slots;
      step(c, kExpandTop);
      if (prm.tma_we) {
        mbarrier_wait(we_full(c % 2), (c / 2) & 1);  // We chunk c landed
      } else if (c > 0) {
        cp_async_wait<1>();
        fence_proxy_async_shared();
        wg_sync();  // We chunk c landed, from every thread of the warpgroup
      }
      step(c, kWeLanded);
      float acc[kMT][32];
      uint64_t a = x_desc, b = c % 2 ? we_desc1 : we_desc0;
      wgmma_fence();
#pragma unroll
      for (int m = 0; m < kMT; ++m)  // m tile m: x's rows 64m on
        wgmma_m64n64k16_ss_mn_major_b_overwrite<Element>(acc[m], wgmma_advance(a, uint32_t(m) * 64 * 128), b);
      for (int k0 = 16; k0 < l.cp; k0 += 16) {
        a = wgmma_advance(a, k0 % 64 == 0 ? x_next_panel : 32u);
        b = wgmma_advance(b, 16 * 128);
#pragma unroll
        for (int m = 0; m < kMT; ++m)
          wgmma_m64nNk16_ss_mn_major_b<Element, 64>(acc[m], wgmma_advance(a, uint32_t(m) * 64 * 128), b, true);
      }
      wgmma_commit_group();
      uint32_t bias[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) bias[j] = be_next[j];
      fetch_be(c + 1);
      int at[kMT][2];  // the bordered E rows of this thread's expand rows
#pragma unroll
      for (int m = 0; m < kMT; ++m) at[m][0] = erow[64 * m + 16 * warp + g], at[m][1] = erow[64 * m + 16 * warp + g + 8];
      step(c, kWgmmaIssued);
      wgmma_wait_group<0>();
      fence_operands(acc);
      step(c, kWgmmaDone);
      wg_sync();  // every warp's wgmma done reading the We slot
      issue_we(c + 2);
      step(c, kWgSynced);
      if (c >= slots) mbarrier_wait(empty(slot), (c / slots - 1) & 1);  // the depthwise is done with chunk c - slots
      step(c, kSlotEmpty);
      // The thread's two rows, each whole under one branch (a row past the image stores nothing).
      Element* e = es + slot * e_elems;
#pragma unroll
      for (int m = 0; m < kMT; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (at[m][h] < 0) continue;
          uint32_t* row = reinterpret_cast<uint32_t*>(e + at[m][h] * kWgLde + 2 * tq);
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float2 bj = unpack_pair<Element>(bias[j]);
            row[4 * j] = activate_pair<Element, kRelu>(acc[m][4 * j + 2 * h] + bj.x, acc[m][4 * j + 2 * h + 1] + bj.y);
          }
        }
      mbarrier_arrive(full(slot));
      step(c, kFullArrived);
    }
    cp_async_wait<0>();

  } else {
    // ---- warpgroups 1-2: D = φ(dw(E) + bd) -> D's panel c; channel sums -> pooled -------------------
    // Warp v owns channels 8v .. 8v + 7 of every chunk; its lane (pg, cq) the pair 8v + 2cq over the
    // output row segments pg, pg + 8, ... (a segment: up to kSeg pixels of one output row). A load
    // reads eight segments' 16 bytes (no bank conflict where the eight start on different rows at
    // stride 1: E's odd pitch), and a pair's sum over the pixels is three shuffles within the warp.
    constexpr int kTaps = K * K;
    const int v = warp - 4, pg = lane / 4, cq = lane % 4;
    const int segs = (prm.Q + kSeg - 1) / kSeg, items = band.rows * segs;
    // The lane's taps and bias for chunk c + 1, loaded during chunk c: channel 8v + 2cq's K² 16-bit
    // taps then its neighbour's, two a word (dw_w is [hidden][K²]: the pair's 2K² are contiguous and
    // start at an even element), then the bias pair.
    uint32_t next[kTaps + 1];
    const auto fetch = [&](int c) {
      const int ch = c * kWgChunk + 8 * v + 2 * cq;
      const unsigned short* d16 = reinterpret_cast<const unsigned short*>(dw);
      const unsigned short* b16 = reinterpret_cast<const unsigned short*>(bd);
      if (prm.pairs_dw && c < chunks && ch + 1 < hidden) {
        const unsigned* w = reinterpret_cast<const unsigned*>(d16 + std::ptrdiff_t(ch) * kTaps);
#pragma unroll
        for (int i = 0; i < kTaps; ++i) next[i] = __ldg(w + i);
        next[kTaps] = __ldg(reinterpret_cast<const unsigned*>(b16 + ch));
        return;
      }
      const auto tap = [&](int i) -> uint32_t {  // element i of the pair's 2K² taps, zero past hidden
        const int chi = ch + (i >= kTaps);
        return c < chunks && chi < hidden ? __ldg(d16 + std::ptrdiff_t(ch) * kTaps + i) : 0u;
      };
#pragma unroll
      for (int i = 0; i < kTaps; ++i) next[i] = tap(2 * i) | tap(2 * i + 1) << 16;
      next[kTaps] = (c < chunks && ch < hidden ? uint32_t(__ldg(b16 + ch)) : 0u) |
                    (c < chunks && ch + 1 < hidden ? uint32_t(__ldg(b16 + ch + 1)) : 0u) << 16;
    };
    fetch(0);
    // FC1's share (prm.fc1_in_loop): this lane's partial outputs 2·lane, 2·lane + 1, and the warp's
    // eight W1 rows of the chunk at hand (the next chunk's are loaded when this one's are used).
    float zp[2] = {0.0f, 0.0f};
    uint32_t w1_rows[8];
    if (prm.fc1_in_loop) fc1_rows(w1_rows, w1, prm.cr, hidden, 8 * v, prm.pairs_w1);
    for (int c = 0; c < chunks; ++c) {
      const int slot = c % slots, ch = c * kWgChunk + 8 * v + 2 * cq;  // this lane's two channels
      step(c, kDwTop);
      float wk[2 * kTaps];
#pragma unroll
      for (int i = 0; i < kTaps; ++i) {
        const float2 f = unpack_pair<Element>(next[i]);
        wk[2 * i] = f.x, wk[2 * i + 1] = f.y;
      }
      const float2 bdp = unpack_pair<Element>(next[kTaps]);
      fetch(c + 1);
      step(c, kTapsReady);
      mbarrier_wait(full(slot), (c / slots) & 1);  // E of chunk c is in its slot
      step(c, kSlotFull);
      const Element* e = es + slot * e_elems + 8 * v + 2 * cq;
      const uint32_t d_at = ds_at + uint32_t(c * l.d_panel) + 4 * cq;
      float sum0 = 0.0f, sum1 = 0.0f;
      for (int item = pg; item < items; item += 8) {
        const int p = item / segs, q0 = (item - p * segs) * kSeg, nq = min(kSeg, prm.Q - q0), pix0 = p * prm.Q + q0;
        float a0[kSeg], a1[kSeg];
#pragma unroll
        for (int o = 0; o < kSeg; ++o) a0[o] = bdp.x, a1[o] = bdp.y;
        const Element* at = e + tap0[pix0] * kWgLde;
        if (prm.stride == 1) dw_segment<K, 1, kSeg>(at, l.ep, nq - 1 + K, wk, a0, a1);
        else dw_segment<K, 2, kSeg>(at, l.ep, 2 * (nq - 1) + K, wk, a0, a1);
#pragma unroll
        for (int o = 0; o < kSeg; ++o) {
          if (o >= nq) break;
          const int pix = pix0 + o;
          const uint32_t d = activate_pair<Element, kRelu>(a0[o], a1[o]);
          // channels 8v + 2cq, + 1 of the panel: 16-byte unit v, swizzled by the pixel's row
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(d_at + pix * 128 + 16 * (v ^ (pix % 8))), "r"(d) : "memory");
          const float2 df = unpack_pair<Element>(d);
          sum0 += df.x, sum1 += df.y;
        }
      }
      step(c, kSegmentsDone);
#pragma unroll
      for (int off = 4; off < 32; off *= 2) {
        sum0 += __shfl_xor_sync(0xffffffffu, sum0, off);
        sum1 += __shfl_xor_sync(0xffffffffu, sum1, off);
      }
      // The sums of every channel of hidden_p, the padding's 0 too: the gate sweep reads pooled there.
      if (pg == 0) pooled[ch] = sum0, pooled[ch + 1] = sum1;
      mbarrier_arrive(empty(slot));
      step(c, kEmptyArrived);
      if (prm.fc1_in_loop) {
        fc1_add<Element>(zp, w1_rows, sum0, sum1);
        if (c + 1 < chunks) fc1_rows(w1_rows, w1, prm.cr, hidden, (c + 1) * kWgChunk + 8 * v, prm.pairs_w1);
      }
      step(c, kFc1Done);
    }
    if (prm.fc1_in_loop) red[v * kWgLoopFc1Max + 2 * lane] = zp[0], red[v * kWgLoopFc1Max + 2 * lane + 1] = zp[1];
    if (tid == 128) phase_stamp(prm.stamps, 2, kStampKinds);
  }
  fence_proxy_async_shared();  // the generic accesses to x and E, ordered before the TMA writes over them
  __syncthreads();  // pooled whole; x, We and E are dead: their room takes the Wp stages
  if (tid == 0) phase_stamp(prm.stamps, 3, kStampKinds);

  // ---- the project's first stages go out now, under the SE ------------------------------------
  const int stages = l.wp_stages();
  const WpPieces pc(l);
  for (int kk = 0; kk < stages - 1; ++kk) {
    if (prm.tma_wp) issue_wp_stage_tma(prm, xs_at, &wp_map, wp_full, kk, stages);
    else issue_wp_stage(prm, pc, xs_at, wp, kk, stages);
  }

  // ---- the SE, then D *= g over every 16-byte unit of D's panels ------------------------------
  if (prm.has_se) {
    if (prm.fc1_in_loop) {  // z from the depthwise warps' partials, added in warp order
      if constexpr (kSplit) {
        // Every CTA of the cluster adds all bands' partials in the same order (rank, then warp), so
        // that each computes the same z and gate for the whole image.
        gpu::hopper::cluster_sync();  // the peers' partials in their red
        if (z_out >= 0 && z_out < prm.cr) {
          const uint32_t mine = shared_address(red + z_out);
          float sum = 0.0f;
          for (int r = 0; r < l.split; ++r) {
            const uint32_t at = gpu::hopper::map_shared_to_rank(mine, r);
#pragma unroll
            for (int w = 0; w < kWgDwWarps; ++w) sum += gpu::hopper::ld_shared_cluster_f32(at + 4 * w * kWgLoopFc1Max);
          }
          z[z_out] = act_f<kRelu>(sum * (1.0f / float(PQ)) + b1v);
        }
        gpu::hopper::cluster_arrive_relaxed();  // done with the peers' shared memory (waited for at the end)
      } else if (z_out >= 0 && z_out < prm.cr) {
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < kWgDwWarps; ++w) sum += red[w * kWgLoopFc1Max + z_out];
        z[z_out] = act_f<kRelu>(sum * (1.0f / float(PQ)) + b1v);
      }
      __syncthreads();
      if (tid == 0) phase_stamp(prm.stamps, 4, kStampKinds);
      image_se_fc2<kThreads, Element>(pooled, z, hidden, prm.cr, w2, b2, prm.vec_w2);
    } else {
      image_se_gate<kThreads, Element, kRelu>(pooled, red, z, hidden, prm.cr, PQ, w1, b1, w2, b2, prm.vec_w1,
                                              prm.vec_w2);
    }
    if (tid == 0) phase_stamp(prm.stamps, 5, kStampKinds);
    // Units tid, tid + 384, ... of D's chunks · P·Q · 8 16-byte units, walked as (chunk, unit of
    // the panel) by additions.
    const int panel_units = px_out * 8;
    for (int c = 0, rest = tid;; rest += kThreads) {
      while (rest >= panel_units) rest -= panel_units, ++c;
      if (c >= chunks) break;
      const int r = rest / 8, u = rest % 8;
      const int h = c * kWgChunk + 8 * (u ^ (r % 8));  // the unit's first channel (a multiple of 8)
      uint4* at = reinterpret_cast<uint4*>(smem + l.ds + c * l.d_panel + r * 128 + 16 * u);
      uint4 d = *at;
      const float4 g0 = *reinterpret_cast<const float4*>(&pooled[h]), g1 = *reinterpret_cast<const float4*>(&pooled[h + 4]);
      const float gate[8] = {g0.x, g0.y, g0.z, g0.w, g1.x, g1.y, g1.z, g1.w};
      uint32_t* w = reinterpret_cast<uint32_t*>(&d);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 f = unpack_pair<Element>(w[k]);
        w[k] = pack_pair<Element>(f.x * gate[2 * k], f.y * gate[2 * k + 1]);
      }
      *at = d;
    }
  }

  if (tid == 0) phase_stamp(prm.stamps, 6, kStampKinds);
  // ---- the project: Y = D·Wp + bp (+ x); warpgroup w owns n64 blocks w and w + 3 -----------------
  // Every warpgroup issues the same wgmma count (a warpgroup short of a block repeats its last one
  // and stores nothing from it): a wgmma under a branch on a run-time value makes ptxas serialize
  // them all (C7520).
  // The output pixels start at output row p0; with the residual (stride 1, C = C_out) x's pixel is y's.
  const std::ptrdiff_t out0 = std::ptrdiff_t(n) * PQ + std::ptrdiff_t(band.p0) * prm.Q;
  const Element* xo = x + (prm.residual ? out0 * prm.C : 0);
  Element* yo = y + out0 * prm.C_out;
  // project() takes its tasks per warpgroup and its ring depth as template values (its accumulators
  // and ring indices are arrays and constants); the layout's run-time choice picks one of the
  // instantiations below: 11g two tasks with a short ring, or one task with a ring of 3 or 2; 11j
  // one or two tasks with a ring of 4 where it fits, else 2.
  const auto run_project = [&](auto tasks, auto ring) {
    constexpr int kRing = decltype(ring)::value;
    project<Element, decltype(tasks)::value, kRing, kMT, kTrace>(
        prm, pc, ds_at, xs_at, px_out, xo, wp, bp, yo, &wp_map, wp_full);
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  if constexpr (kSplit) {
    using Ring = std::integral_constant<int, kWgProjectStagesSplit>;
    using Short = std::integral_constant<int, kWgProjectStages>;
    if (l.tasks_per_warpgroup() > 1) stages == Ring::value ? run_project(Two{}, Ring{}) : run_project(Two{}, Short{});
    else stages == Ring::value ? run_project(One{}, Ring{}) : run_project(One{}, Short{});
  } else {
    if (l.tasks_per_warpgroup() > 1) run_project(Two{}, std::integral_constant<int, kWgProjectStages>{});
    else if (stages == kWgProjectStagesDeep) run_project(One{}, std::integral_constant<int, kWgProjectStagesDeep>{});
    else run_project(One{}, std::integral_constant<int, kWgProjectStages>{});
  }
  if (tid == 0) phase_stamp(prm.stamps, 7, kStampKinds);
  if constexpr (kSplit)
    if (prm.has_se) gpu::hopper::cluster_wait();  // the peers are done reading this CTA's red
}

// ---- host: the launch -----------------------------------------------------------------------

// Runs the kernel on p: one CTA per image (split 1, kSplit false) or N clusters of `split` CTAs
// (kSplit). rung names the phase stamps' and the chunk trace's report. kSeg3: the depthwise's row
// segment at K = 3 (K = 5 takes 8: its 50 taps and 16-pixel accumulators spill). The caller has
// checked that wgmma runs here and that WgImageLayout(p, split) fits.
template <bool kSplit, int kSeg3 = (kSplit ? 16 : 8)>
void run_image_wgmma(const MBConvProblem& p, const Args<MBConvProblem>& a, int split, const char* rung) {
  WgParams prm{};
  set_image_params(prm, p, a);  // the rungs' shapes all have an expand (their supports)
  prm.l = WgImageLayout(p, split);
  prm.tma_we = p.hidden() % 8 == 0 && aligned_to(a.expand_w, 16);
  prm.tma_wp = p.C_out % 8 == 0 && aligned_to(a.project_w, 16);
  prm.fc1_in_loop = p.has_se() && p.se_channels() <= kWgLoopFc1Max;
  prm.pairs_w1 = p.se_channels() % 2 == 0 && aligned_to(a.se1_w, 4);
  prm.pairs_dw = aligned_to(a.dw_w, 4) && aligned_to(a.dw_b, 4);
  prm.pairs_be = p.hidden() % 2 == 0 && aligned_to(a.expand_b, 4);
  // Unused maps stay zero (the kernel never names them).
  CUtensorMap we_map{}, wp_map{};
  const unsigned ctas = unsigned(p.N) * unsigned(prm.l.split);
  const gpu::PhaseStamps stamps(rung, int(ctas), kWgPhases);
  prm.stamps = stamps.device();
  // The trace has its own instantiation, made for f16 and SiLU only (EfficientNet's blocks).
  const bool trace = gpu::ChunkTrace::requested() && p.dtype == DType::f16 && p.activation == MBConvActivation::silu;
  const gpu::ChunkTrace chunk_trace(rung, trace ? prm.l.chunks : 0, kWgTraceRoles,
                                    {{"full hand-over: E stored -> depthwise sees it", kFullArrived, kSlotFull, 0},
                                     {"empty hand-over: slot freed -> expand sees it", kEmptyArrived, kSlotEmpty,
                                      prm.l.e_slots}});
  prm.trace = chunk_trace.device();
  if (prm.tma_we)
    we_map = gpu::hopper::cached_tma_tile_2d(
        {.base = reinterpret_cast<uint64_t>(a.expand_w), .rows = uint64_t(p.C), .cols = uint64_t(p.hidden()),
         .row_stride_bytes = uint64_t(p.hidden()) * 2, .elem_bytes = 2, .box_rows = prm.l.we_box, .box_cols = 64});
  if (prm.tma_wp)
    wp_map = gpu::hopper::cached_tma_tile_2d(
        {.base = reinterpret_cast<uint64_t>(a.project_w), .rows = uint64_t(p.hidden()), .cols = uint64_t(p.C_out),
         .row_stride_bytes = uint64_t(p.C_out) * 2, .elem_bytes = 2, .box_rows = kWgProjectK, .box_cols = 64});
  visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    const auto go = [&](auto kernel, const char* name) {
      allow_dynamic_shared(kernel, prm.l.bytes, name);
      // Without kSplit a plain launch (no cluster attribute).
      gpu::hopper::ClusterLaunch launcher(kSplit ? unsigned(prm.l.split) : 0u, dim3(kThreads), prm.l.bytes);
      if constexpr (kSplit)  // refused with a DeviceError where the device cannot co-schedule the cluster
        launcher.max_active_clusters(kernel, name);
      launcher.launch(dim3(ctas), kernel, (std::string("launching ") + name).c_str(), we_map, wp_map, prm,
                      static_cast<const E*>(a.x), static_cast<const E*>(a.expand_w),
                      static_cast<const E*>(a.expand_b), static_cast<const E*>(a.dw_w),
                      static_cast<const E*>(a.dw_b), static_cast<const E*>(a.se1_w), static_cast<const E*>(a.se1_b),
                      static_cast<const E*>(a.se2_w), static_cast<const E*>(a.se2_b),
                      static_cast<const E*>(a.project_w), static_cast<const E*>(a.project_b), static_cast<E*>(a.y));
      check_launch(name);
      stamps.report();
      chunk_trace.report();
    };
    const bool relu = p.activation == MBConvActivation::relu;
    if constexpr (std::is_same_v<E, __half>)
      if (trace) {
        if (p.kernel == 3)
          go(mbconv_image_wgmma_kernel<E, 3, false, true, kSplit, kSeg3>, "mbconv_image_wgmma_kernel<k=3, trace>");
        else go(mbconv_image_wgmma_kernel<E, 5, false, true, kSplit, 8>, "mbconv_image_wgmma_kernel<k=5, trace>");
        return;
      }
    if (p.kernel == 3) {
      if (relu) go(mbconv_image_wgmma_kernel<E, 3, true, false, kSplit, kSeg3>, "mbconv_image_wgmma_kernel<k=3>");
      else go(mbconv_image_wgmma_kernel<E, 3, false, false, kSplit, kSeg3>, "mbconv_image_wgmma_kernel<k=3>");
    } else {
      if (relu) go(mbconv_image_wgmma_kernel<E, 5, true, false, kSplit, 8>, "mbconv_image_wgmma_kernel<k=5>");
      else go(mbconv_image_wgmma_kernel<E, 5, false, false, kSplit, 8>, "mbconv_image_wgmma_kernel<k=5>");
    }
  });
}

}  // namespace convlab::gpu::mbconv::image_wgmma
