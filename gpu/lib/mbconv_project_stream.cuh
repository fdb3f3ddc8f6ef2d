// gpu/lib/mbconv_project_stream.cuh — pass 2 of lesson 11's store plan as a stream of warp
// tasks: each warp reads 16 rows of D straight from dbuf into its mma fragments, with no shared
// staging of D and no barrier between tasks. The store plan's mma.sync pass 2 (11c, 11e) wherever
// the whole Wp fits a CTA, and in 11c where one column part of it does (stream_tile_fits,
// mbconv_tile.hpp); mbconv_project.cuh's persistent GEMM takes the other shapes.
//
//   plain loop:  for row m: for o: y[m][o] = bp[o] (+ x[m][o]) + Σ_j d[m][j] · g[image(m)][j] · Wp[j][o]
//   here:        Wp staged once per CTA, its rows in stream order (stream_channel, mbconv_tile.hpp),
//                all its columns or one part's (below);
//                warp task: rows m0 .. m0 + 15 (of any images) × one column part of nt n8 tiles
//                (StreamTile: C_out > 48 in parts), for each group of kGroup chunks:
//                  lane 4·g + t loads 16 bytes of D for rows m0 + g and m0 + g + 8 (channels 8t .. 8t + 7
//                  of the chunk), all the group's loads first; then per chunk: the same 16 bytes of the
//                  rows' images' gates (L1 hits), A = D ⊙ g (packed 16-bit multiplies, the gate rounded to
//                  16 bits like D, as mbconv_project.cuh does), two k16 steps of Y += A · Wp (mma.sync
//                  m16n8k16, B by ldmatrix .trans from the staged rows);
//                y = Y + bp (+ x), a lane's two adjacent columns as one 32-bit store.
//
// Three forms, one kernel (the template flags kCtaPart and kMinCtas; the last two are 11c's, not 11e's):
//   whole Wp   where Wp (parts·nt·8 columns) and bp fit kSharedTwoCtas (≈ 110 KB:
//              C = 80 @ 14² and below). Every CTA stages all of Wp; warp w of CTA b takes tasks
//              b·kWarps + w, + gridDim·kWarps, ..., task = (row tile task / parts, part task %
//              parts): the parts of a row tile are neighbouring warps, which read its D from DRAM
//              once and from L1 or L2 after.
//   cta_part   (launch_project_stream<E, true>, run_store_plan's kStreamCtaPart: 11c) where Wp
//              does not fit but one part does (C = 112 @ 14²:
//              3 parts of 40 columns, 53 KB a CTA; hidden 1152 at C_out 192: 5 parts of 5 n8
//              tiles, the part's nt cut from 6 until it fits). CTA b stages the nt·8 columns of part
//              b % parts from col0 = 8·nt·(b % parts) and makes that part of row tiles (b / parts)·
//              kWarps + w, stepping by (gridDim / parts)·kWarps (stream_walk); the grid is a
//              multiple of parts within one wave, so a row tile's parts are CTAs side by side in
//              blockIdx, resident at once: D from DRAM once, from L2 for the other parts. Y's column
//              o is staged column o − col0.
//   three CTAs (launch_project_stream's kThree: 11c) the cta_part kernel built for three CTAs an
//              SM (__launch_bounds__(kThreads, 3): 80 registers, 8–28 bytes of spill outside the
//              chunk loop), parts cut to fit 75 KB (stream_tile_three), where stream_three_pays: the
//              part as wide as the two-CTA tile's, nt ≤ 5. 24 warps an SM instead of 16: at C = 80
//              @ 14² every warp makes one task instead of a third making two.
//
// The idea: with N = C_out ≤ 80 the GEMM is a stream (D is most of its bytes) whose floor is DRAM,
// and what a stream needs is bytes in flight. The persistent GEMM stages D through a cp.async ring
// with a barrier per stage; here each warp keeps its own: a group's loads (4 chunks × 16 rows × 64
// bytes = 4 KB a warp) are issued back to back, and 16 warps an SM keep up to 64 KB in flight with
// no CTA-wide wait (2 KB a warp where more than 3 n8 tiles of accumulators take the registers:
// kGroup = 2). Past C_out 80 (cta_part) the parts multiply D's reads, but all but one come from L2.
//
// Cost per task (16 rows, one part): per chunk 4 16-byte loads, 8 f16x2 multiplies, 2 k16 steps of
// ⌈nt/2⌉ ldmatrix and nt mma; the epilogue ≈ 2·nt·(bias, residual, pack, store); the same in both
// forms (one fast_quotient and a multiply-add a task). DRAM: D once (each part after the first
// re-reads it from L1 or L2: whole Wp, neighbouring warps; cta_part, neighbouring CTAs), the gates
// (L1 and L2 hits after the first warp of an image), x and y once; Wp once per CTA (cta_part: one
// part's columns, so all of Wp once per `parts` CTAs).
// Contract: as mbconv_project_kernel (dbuf as pass 1 writes it, gate16 [N][dbuf_live(hidden)] zero
// padded, Wp rows of ldw = C_out rounded up to 8, 16-byte aligned: project_weights); shapes where
// stream_tile_fits (whole Wp unless cta_part is allowed); a cta_part grid a multiple of parts
// (stream_grid; any grid for whole Wp).
// Tunables: kStreamGroup (chunks a warp has in flight), kStreamMaxNT (n8 tiles a part; ptxas: no
// spills up to 6 at 128 registers, 12–36 bytes from 7 to 10), both in mbconv_tile.hpp; the cuts
// between the forms are kSharedTwoCtas, kSharedThreeCtas and stream_three_pays.
// Run: build/convlab run mbconv/gpu/11c_fused_store --shape N=128,H=56,C=24,dtype=f16 (whole Wp);
//      ... --shape N=128,H=14,C=112,dtype=f16 (cta_part).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/hopper/dependent_launch.cuh"
#include "gpu/lib/mbconv_fused.cuh"    // unpack_pair, ldmatrix_x2_trans
#include "gpu/lib/mbconv_project.cuh"  // mul_pair, ProjectWeights
#include "gpu/lib/mbconv_tile.hpp"
#include "gpu/lib/mma.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

// One warp task of the stream: rows 16·tile .. + 15 (of any images; those outside [m_begin, t.m)
// skipped) × the n_live ≤ kNT n8 tiles of staged columns from s0 (Y's columns from col0), Y's
// columns from col_end on not stored. b_lane: the lane's ldmatrix address in the staged Wp;
// b_step: one k16 step of staged rows (bytes); chunk_step: one chunk of dbuf (elements); bs: the
// staged bp. kCoherent (11k): dbuf was written
// by other CTAs of the running kernel (before a cluster barrier), so it is read through L2
// (ld.global.cg), not the read-only path, and gate16 is a copy in shared memory whose row 0 is
// image image0's (so the gates of each chunk are a shared-memory load, not an L2 round trip).
template <class Element, int kNT, bool kCoherent>
__device__ __forceinline__ void stream_task(const StreamTile& t, int n_live, int tile, int s0, int col0, int col_end,
                                            int m_begin, int image0, uint32_t b_lane, uint32_t b_step, std::ptrdiff_t chunk_step,
                                            const Element* bs, const Element* dbuf, const Element* gate16,
                                            const Element* __restrict__ x, Element* __restrict__ y) {
  // Chunks a warp loads before it multiplies them: fewer where the accumulators take the registers.
  constexpr int kGroup = kNT <= 3 ? kStreamGroup : kStreamGroup / 2;
  const int lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  const auto load = [](const Element* p) {
    return kCoherent ? __ldcg(reinterpret_cast<const uint4*>(p)) : __ldg(reinterpret_cast<const uint4*>(p));
  };
  const auto load_gate = [](const Element* p) {
    if constexpr (kCoherent) return *reinterpret_cast<const uint4*>(p);
    else return __ldg(reinterpret_cast<const uint4*>(p));
  };
  const int m_lo = 16 * tile + g, m_hi = m_lo + 8;
  // rows outside [m_begin, t.m): no load, no store (row 0's addresses)
  const bool in_lo = m_lo >= m_begin && m_lo < t.m, in_hi = m_hi >= m_begin && m_hi < t.m;
  const Element* d_lo = dbuf + stream_d_offset(t, in_lo ? m_lo : 0, tq);
  const Element* d_hi = dbuf + stream_d_offset(t, in_hi ? m_hi : 0, tq);
  const std::ptrdiff_t q0 = std::ptrdiff_t(image0) * t.d_live;
  const Element* q_lo = gate16 + (stream_gate_offset(t, in_lo ? m_lo : m_begin, tq) - q0);
  const Element* q_hi = gate16 + (stream_gate_offset(t, in_hi ? m_hi : m_begin, tq) - q0);
  float acc[kNT][4];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
  const uint32_t b_part = b_lane + uint32_t(s0) * 2;

  // d_lo, d_hi, q_lo, q_hi step on by a group of chunks; within it, constant offsets.
  for (int c0 = 0; c0 < t.chunks; c0 += kGroup) {
    uint4 a_lo[kGroup], a_hi[kGroup];
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {  // every D load of the group before any use
      const int c = c0 + i;
      const bool live = stream_piece_live(t, c, tq);
      a_lo[i] = live && in_lo ? load(d_lo + i * chunk_step) : zero;
      a_hi[i] = live && in_hi ? load(d_hi + i * chunk_step) : zero;
    }
#pragma unroll
    for (int i = 0; i < kGroup; ++i) {
      const int c = c0 + i;
      if (c >= t.chunks) break;
      const bool live = stream_piece_live(t, c, tq);  // the gates: L1 hits after the image's first task
      const uint4 gl = live ? load_gate(q_lo + kChunk * i) : zero, gh = live ? load_gate(q_hi + kChunk * i) : zero;
      const uint32_t lo[4] = {mul_pair<Element>(a_lo[i].x, gl.x), mul_pair<Element>(a_lo[i].y, gl.y),
                              mul_pair<Element>(a_lo[i].z, gl.z), mul_pair<Element>(a_lo[i].w, gl.w)};
      const uint32_t hi[4] = {mul_pair<Element>(a_hi[i].x, gh.x), mul_pair<Element>(a_hi[i].y, gh.y),
                              mul_pair<Element>(a_hi[i].z, gh.z), mul_pair<Element>(a_hi[i].w, gh.w)};
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        // mma_a_coord: register bit 0 the row half (g, g + 8), bit 1 the k half.
        const uint32_t a[4] = {lo[stream_piece_register(s, 0)], hi[stream_piece_register(s, 1)],
                               lo[stream_piece_register(s, 2)], hi[stream_piece_register(s, 3)]};
        const uint32_t b_rows = b_part + uint32_t(2 * (c0 + i) + s) * b_step;
#pragma unroll
        for (int np = 0; np < kNT / 2; ++np) {  // two n8 tiles per ldmatrix .x4 .trans
          if (2 * np + 1 < n_live) {
            uint32_t bq[4];
            ldmatrix_x4_trans(bq, b_rows + 32u * np);
            const uint32_t b0[2] = {bq[0], bq[1]}, b1[2] = {bq[2], bq[3]};
            mma_m16n8k16<Element>(acc[2 * np], a, b0);
            mma_m16n8k16<Element>(acc[2 * np + 1], a, b1);
          } else if (2 * np < n_live) {  // an odd n_live below kNT: its last tile alone
            uint32_t bb[2];
            ldmatrix_x2_trans(bb, b_rows + 32u * np);
            mma_m16n8k16<Element>(acc[2 * np], a, bb);
          }
        }
        if constexpr (kNT % 2 == 1) {  // the last n8 tile alone (.x2: lanes 0-15's addresses)
          if (kNT - 1 < n_live) {
            uint32_t bb[2];
            ldmatrix_x2_trans(bb, b_rows + 32u * (kNT / 2));
            mma_m16n8k16<Element>(acc[kNT - 1], a, bb);
          }
        }
      }
    }
    d_lo += kGroup * chunk_step, d_hi += kGroup * chunk_step, q_lo += kGroup * kChunk, q_hi += kGroup * kChunk;
  }

  // y = Y + bp (+ x): c0, c1 row m_lo, c2, c3 row m_hi; columns col0 + 8·nt + 2t, + 1 (the rows'
  // addresses once, the columns as constant offsets), bp's staged at s0 + 8·nt + 2t.
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int m = half ? m_hi : m_lo;
    if (half ? !in_hi : !in_lo) continue;
    Element* y_row = y + std::ptrdiff_t(m) * t.c_out + col0 + 2 * tq;
    const Element* x_row = x + std::ptrdiff_t(m) * t.c + col0 + 2 * tq;  // residual: stride 1, C_out == C
    const Element* b_row = bs + s0 + 2 * tq;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const int o = col0 + 8 * nt + 2 * tq;
      if (nt >= n_live || o >= col_end) continue;
      const float2 b = unpack_pair<Element>(*reinterpret_cast<const uint32_t*>(b_row + 8 * nt));  // 0 past C_out
      float lo = acc[nt][2 * half] + b.x, hi = acc[nt][2 * half + 1] + b.y;
      if (t.pairs) {  // C_out even: o + 1 < C_out, both addresses 4-byte aligned
        if (t.residual) {
          const float2 v = unpack_pair<Element>(*reinterpret_cast<const uint32_t*>(x_row + 8 * nt));
          lo += v.x, hi += v.y;
        }
        *reinterpret_cast<uint32_t*>(y_row + 8 * nt) = pack_pair<Element>(lo, hi);
      } else {
        if (t.residual) lo += to_float(x_row[8 * nt]);
        y_row[8 * nt] = from_float<Element>(lo);
        if (o + 1 < col_end) {
          if (t.residual) hi += to_float(x_row[8 * nt + 1]);
          y_row[8 * nt + 1] = from_float<Element>(hi);
        }
      }
    }
  }
}

// dbuf [N][chunks][P·Q][32], gate16 [N][d_live], wp [hidden][ldw], bp [C_out], x [N·P·Q][C],
// y [N·P·Q][C_out]. kThreads threads, t.bytes of dynamic shared memory; any grid for whole Wp, a
// multiple of t.parts for cta_part (warps stride over the tasks). kCtaPart: t.cta_part's form.
template <class Element, int kNT, bool kCtaPart, int kMinCtas = 2>
__global__ void __launch_bounds__(kThreads, kMinCtas) mbconv_project_stream_kernel(
    StreamTile t, const Element* __restrict__ dbuf, const Element* __restrict__ gate16,
    const Element* __restrict__ wp, const Element* __restrict__ bp, const Element* __restrict__ x,
    Element* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char shared[];
  Element* wb = reinterpret_cast<Element*>(shared);  // [chunks·32][ldb]: row 32c + 16s + k is Wp row 32c + stream_channel(s, k)
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  // cta_part: the warp's walk (stream_walk), and Y's column of the first staged one (its part's
  // first); whole Wp stages from column 0 and walks the tasks in the loop below.
  [[maybe_unused]] StreamWalk w;
  if constexpr (kCtaPart) w = stream_walk(t, int(blockIdx.x), int(gridDim.x), warp);
  const int cta_col0 = kCtaPart ? w.col0 : 0;

  // Wp and bp are not written by the kernels this one depends on: staged before the wait, t.cols
  // columns from cta_col0 (zeros past C_out), Wp's rows in stream order; 16-byte cp.async copies,
  // all in flight at once (up to 110 KB a CTA: one round trip, not one per copy a thread makes).
  const int units = t.cols / 8;
  for (int i = tid; i < t.chunks * kChunk * units; i += kThreads) {
    const int r = i / units, u = i - r * units, j = stream_staged_row(r), col = cta_col0 + 8 * u;
    const bool in = j < t.hidden && col < t.ldw;
    cp_async_16(shared_address(wb + r * t.ldb + 8 * u), in ? wp + std::ptrdiff_t(j) * t.ldw + col : wp, in);
  }
  cp_async_commit();
  Element* bs = reinterpret_cast<Element*>(shared + t.wb_bytes);  // [cols]: Y's columns from cta_col0
  for (int i = tid; i < t.cols; i += kThreads)
    bs[i] = cta_col0 + i < t.c_out ? bp[cta_col0 + i] : from_float<Element>(0.0f);
  cp_async_wait<0>();
  __syncthreads();
  hopper::wait_for_prerequisite_grid();  // the store plan: the gate kernel (and, through it, pass 1), or pass 1 with the gate in its tail

  const uint32_t b_lane = shared_address(wb) + uint32_t(((lane % 16) * t.ldb + 8 * (lane / 16)) * 2);
  const uint32_t b_step = 16u * uint32_t(t.ldb) * 2;  // one k16 step of staged rows, bytes
  const std::ptrdiff_t chunk_step = std::ptrdiff_t(t.pq) * kChunk;
  // The warp's tasks, first, first + step, ... < end: whole Wp, b·kWarps + w, + gridDim·kWarps, ...
  // < t.tasks, task = (row tile task / parts, part task % parts); cta_part, stream_walk's (÷ 1: the
  // task is the row tile, of this CTA's part).
  const unsigned first = kCtaPart ? unsigned(w.first) : blockIdx.x * kWarps + warp;
  const unsigned step = kCtaPart ? unsigned(w.step) : gridDim.x * kWarps;
  const int end = kCtaPart ? w.end : t.tasks, per = kCtaPart ? w.per : t.parts;
  const FastDiv div = kCtaPart ? w.div : t.parts_div;
  for (int task = int(first); task < end; task += step) {
    // The row tile and the part's first column: staged (s0) and of Y (col0 = cta_col0 + s0).
    const int tile = fast_quotient(div, task), s0 = 8 * kNT * (task - tile * per), col0 = cta_col0 + s0;
    stream_task<Element, kNT, false>(t, kNT, tile, s0, col0, t.c_out, 0, 0, b_lane, b_step, chunk_step, bs, dbuf, gate16,
                                     x, y);
  }
}

// Pass 2 as the stream, where stream_tile_fits (the caller checks; else launch_project). Grid
// (stream_grid): the resident CTAs of one wave, or fewer where the tasks are fewer; cta_part, a
// multiple of parts. kCtaPart: allow the cta_part form (stream_tile_for's allow_cta_part) and
// instantiate its kernels (11c); without it only the whole-Wp form's kernels (11e). kThree: the
// three-CTA form where stream_three_pays (11c).
template <class Element, bool kCtaPart = false, bool kThree = false>
void launch_project_stream(const MBConvProblem& p, const Args<MBConvProblem>& a, const void* dbuf, const void* gate16,
                           const ProjectWeights<Element>& w, bool dependent) {
  StreamTile t = stream_tile_for(p, w.ldw, kCtaPart);
  const StreamTile three = kThree ? stream_tile_three(p, w.ldw) : StreamTile{};
  const bool use_three = kThree && stream_tile_fits(t) && stream_three_pays(t, three);
  if (use_three) t = three;
  if (!stream_tile_fits(t)) throw std::invalid_argument("mbconv: internal: pass 2's stream does not fit this shape");
  t.pairs = p.C_out % 2 == 0 && aligned_to(a.y, 4) && aligned_to(a.x, 4);
  const auto go = [&](auto kernel, const char* name) {
    allow_dynamic_shared(kernel, t.bytes, name);
    const int ctas = stream_grid(t, resident_blocks(kernel, kThreads, t.bytes));
    hopper::launch_kernel(dependent, kernel, dim3(unsigned(ctas)), dim3(kThreads), t.bytes, name, t,
                          static_cast<const Element*>(dbuf), static_cast<const Element*>(gate16), w.wp,
                          static_cast<const Element*>(a.project_b), static_cast<const Element*>(a.x),
                          static_cast<Element*>(a.y));
  };
  static_assert(kStreamMaxNT == 6, "one instantiation per n8-tile count up to kStreamMaxNT");
  // One kernel per n8-tile count a part (C_out ≤ 8·nt·parts), for the form (cta_part, CTAs an SM).
  const auto by_nt = [&](auto cta_part, auto min_ctas) {
    constexpr bool kPart = decltype(cta_part)::value;
    constexpr int kCtas = decltype(min_ctas)::value;
    const char* name = kCtas == 3 ? "mbconv_project_stream_kernel (cta_part, three CTAs)"
                       : kPart    ? "mbconv_project_stream_kernel (cta_part)"
                                  : "mbconv_project_stream_kernel";
    switch (t.nt) {
      case 1: go(mbconv_project_stream_kernel<Element, 1, kPart, kCtas>, name); break;
      case 2: go(mbconv_project_stream_kernel<Element, 2, kPart, kCtas>, name); break;
      case 3: go(mbconv_project_stream_kernel<Element, 3, kPart, kCtas>, name); break;
      case 4: go(mbconv_project_stream_kernel<Element, 4, kPart, kCtas>, name); break;
      case 5: go(mbconv_project_stream_kernel<Element, 5, kPart, kCtas>, name); break;
      default: go(mbconv_project_stream_kernel<Element, 6, kPart, kCtas>, name); break;
    }
  };
  using Two = std::integral_constant<int, 2>;
  if constexpr (kThree)
    if (use_three) return by_nt(std::true_type{}, std::integral_constant<int, 3>{});
  if constexpr (kCtaPart) {
    if (t.cta_part) by_nt(std::true_type{}, Two{});
    else by_nt(std::false_type{}, Two{});
  } else {
    by_nt(std::false_type{}, Two{});
  }
}

}  // namespace convlab::gpu::mbconv
