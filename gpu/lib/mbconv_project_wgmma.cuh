// gpu/lib/mbconv_project_wgmma.cuh — pass 2 of lesson 11's store plan on Hopper's warpgroup MMA
// (11h): the same GEMM as gpu/lib/mbconv_project.cuh, Y[N·P·Q, C_out] = (D ⊙ G)·Wp + bp (+ x),
// with each warpgroup's 64 × bn slice of a block made by one wgmma per k16 step.
//
// Why: mbconv_project.cuh's warps each load A fragments with ldmatrix, gate them, then issue
// kMT·4 mma.sync per k16 step and 32 columns, and stream Wp beside D in every stage; its profiles
// (lesson 11's NOTES) show the pass issue- and latency-bound at 14², a third of 11c's time there.
// Here Wp stays in shared memory for the CTA's whole life, and per k16 step a warpgroup issues
// one wgmma over all bn columns, its A (D, gated) from registers.
//
//   plain loop:  for row m (image n, pixel), o: y[m, o] = bp[o] (+ x[m, o]) + Σ_j d[m, j]·g[n, j]·Wp[j, o]
//   here:        Wp[:, n0 .. n0 + bn) -> shared memory once (128-byte-swizzled panels of 64 columns)
//                per block of 128 rows × bn columns (CTA c makes blocks c, c + grid, ...):
//                  for each 64-channel step k (a stages-deep cp.async ring, running on across blocks):
//                    A [128 rows][64 ch] <- dbuf (two 32-channel chunks), 128-byte swizzled
//                    warp: ldmatrix its 16 rows, multiply each register by its rows' gates (L1)
//                    warpgroup w: acc += A[64w .., :] · Wp[k rows]   four wgmma m64nNk16, A from registers
//                  y = acc + bp (+ x)   fp32 sums rounded once
//
// Where it stands: faster than 11c's pass 2 at 14² and 28², slower at 56² and on the e = 1 block
// at 112², where each block is a single step and its set-up and epilogue instructions outweigh its
// four wgmma (lesson 11's NOTES.md has the measurements and the profile).
// Cost: 2·N·P·Q·hidden·bn flops (C_out rounded up to bn: the tensor cores are not what this pass
// waits on); DRAM: D, x and y once, Wp once per CTA from L2; per stage and thread: 4 A copies,
// 4 ldmatrix, 16 gate loads (L1, issued before the wait) and 16 multiplies, 4 wgmma per
// warpgroup left in flight across the next step's wait and barrier, one CTA barrier; per block
// the residual pairs, loaded at its first step and added in its epilogue.
// Contract: dbuf [N][chunks][P·Q][32] as pass 1 writes it (channels ≥ dbuf_live(hidden) are never
// read: zero-filled here); gate16 [N][dbuf_live(hidden)]; Wp [hidden][ldw], ldw a multiple of 8,
// 16-byte aligned; N·P·Q ≤ 2^31 − 512; f16 or bf16; Wp's rows (hidden rounded up to 64) × bn
// beside two A stages in 227 KB (wg_project_fits); an sm_90a build on a compute capability 9.0
// device. Tunables: bn (64 or 128 from C_out), stages (what shared memory leaves, ≤ 8), the
// block's 128 rows (two consumer warpgroups).
// Run just this pass's rung: build/convlab run mbconv/gpu/11h_fused_store_wgmma --shape N=128,H=14,C=112,dtype=f16
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mbconv_project.cuh"  // mul_pair, project_weights, launch_kernel
#include "gpu/lib/mbconv_tile.hpp"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

inline constexpr int kWgProjectRows = 128;     // rows a block: two warpgroups of 64
inline constexpr int kWgProjectStep = 64;      // hidden channels a stage: two dbuf chunks, one 128-byte row
inline constexpr int kWgProjectThreads = 256;  // two warpgroups, each copying, gating and multiplying
inline constexpr int kWgProjectABytes = kWgProjectRows * 128;  // one A stage: [128][64] 16-bit
inline constexpr int kWgProjectMaxStages = 8;

// C_out -> the block's columns: 64 where that covers C_out, else column blocks of 128 (at 256 the
// 128 accumulators a thread did not stay in registers: ptxas put them on the stack).
CONVLAB_HOST_DEVICE constexpr int wg_project_bn(int c_out) { return c_out <= 64 ? 64 : 128; }
// Wp's resident rows: hidden rounded up to whole steps (zeros past hidden).
CONVLAB_HOST_DEVICE constexpr int wg_project_k_rows(int hidden) {
  return (hidden + kWgProjectStep - 1) / kWgProjectStep * kWgProjectStep;
}
CONVLAB_HOST_DEVICE constexpr std::size_t wg_project_b_bytes(int hidden, int bn) {
  return std::size_t(wg_project_k_rows(hidden)) * bn * 2;
}
// A stages: what kMaxShared leaves beside Wp and 1 KB of alignment, at most 8.
inline int wg_project_stages(int hidden, int bn) {
  const std::size_t left = kMaxShared - 1024 - std::min(kMaxShared - 1024, wg_project_b_bytes(hidden, bn));
  return int(std::min<std::size_t>(kWgProjectMaxStages, left / kWgProjectABytes));
}
inline bool wg_project_fits(const MBConvProblem& p) { return wg_project_stages(p.hidden(), wg_project_bn(p.C_out)) >= 2; }
inline std::size_t wg_project_bytes(const MBConvProblem& p) {
  const int bn = wg_project_bn(p.C_out);
  return 1024 + wg_project_b_bytes(p.hidden(), bn) + std::size_t(wg_project_stages(p.hidden(), bn)) * kWgProjectABytes;
}

struct WgProjectParams {
  int m, pq, chunks, d_live, hidden, c, c_out, ldw, blocks, n_blocks, stages, k_rows;
  FastDiv pq_div, nb_div;
  bool residual, pairs;
};

template <class Element, int kBN>
__global__ void __launch_bounds__(kWgProjectThreads, 1) mbconv_project_wgmma_kernel(
    WgProjectParams t, const Element* __restrict__ dbuf, const Element* __restrict__ gate16,
    const Element* __restrict__ wp, const Element* __restrict__ bp, const Element* __restrict__ x,
    Element* __restrict__ y) {
  using ATile = Sw128Tile<kWgProjectRows, kWgProjectStep>;  // [row][channel], 128-byte swizzled
  static_assert(ATile::kBytes == kWgProjectABytes, "one A stage");
  constexpr int kAPieces = kWgProjectRows * kWgProjectStep / 8 / kWgProjectThreads;  // 4
  constexpr int kUnits = kWgProjectStep / 8;                                          // 16-byte units of an A row

  extern __shared__ unsigned char shared_raw[];
  // Wp [k_rows][kBN] in panels of 64 columns (k_rows·128 bytes each, 1024-aligned), then the A ring.
  const uint32_t b_base = (shared_address(shared_raw) + 1023u) & ~1023u;
  const uint32_t panel_bytes = uint32_t(t.k_rows) * 128u;
  const uint32_t ring = b_base + panel_bytes * (kBN / 64);
  const int tid = threadIdx.x, warpgroup = tid / 128, thread = tid % 128;
  const int warp = thread / 32, lane = thread % 32;
  const std::ptrdiff_t chunk_step = std::ptrdiff_t(t.pq) * kChunk;
  const int steps = t.k_rows / kWgProjectStep, stages = t.stages;  // (stages: run-time, from Wp's size)
  const auto block_origin = [&](int b, int& m0, int& n0) {
    const int mb = fast_quotient(t.nb_div, b);
    m0 = mb * kWgProjectRows, n0 = (b - mb * t.n_blocks) * kBN;
  };

  // ---- Wp's columns of this CTA's blocks, once (every block of a CTA has the same column block
  //      when gridDim.x is a multiple of n_blocks: the launcher's grid) ----
  {
    int m0, n0;
    block_origin(blockIdx.x, m0, n0);
    for (int piece = tid; piece < t.k_rows * (kBN / 8); piece += kWgProjectThreads) {
      const int k = piece / (kBN / 8), col = 8 * (piece % (kBN / 8));
      const bool in = k < t.hidden && n0 + col < t.ldw;
      const uint32_t at = b_base + uint32_t(col / 64) * panel_bytes + uint32_t(k) * 128u +
                          uint32_t(16 * (((col % 64) / 8) ^ (k % 8)));
      cp_async_16(at, in ? wp + std::ptrdiff_t(k) * t.ldw + n0 + col : wp, in);
    }
    cp_async_commit();
  }

  // ---- A copies: thread tid owns pieces (row a_row + 32i, unit a_unit) of every stage ----
  const int a_unit = tid % kUnits, a_row = tid / kUnits;
  int ib = blockIdx.x, ik = 0, i_buf = 0;  // the stage issued next: step ik of block ib, into buffer i_buf
  const Element* a_src[kAPieces];
  bool a_in[kAPieces];
  const auto issue = [&] {
    if (ib >= t.blocks) return;  // past this CTA's last block: an empty group keeps the wait counts
    if (ik == 0) {
      int m0, n0;
      block_origin(ib, m0, n0);
#pragma unroll
      for (int i = 0; i < kAPieces; ++i) {
        const int m = m0 + a_row + 32 * i;
        a_in[i] = m < t.m;
        const int n = a_in[i] ? fast_quotient(t.pq_div, m) : 0, pixel = a_in[i] ? m - n * t.pq : 0;
        a_src[i] = dbuf + (std::ptrdiff_t(n) * t.chunks * t.pq + pixel) * kChunk + (a_unit / 4) * chunk_step +
                   8 * (a_unit % 4);
      }
    }
    const uint32_t a_s = ring + uint32_t(i_buf) * kWgProjectABytes;
    const bool unit_in = ik * kWgProjectStep + 8 * a_unit < t.d_live;
#pragma unroll
    for (int i = 0; i < kAPieces; ++i) {
      const bool in = a_in[i] && unit_in;
      cp_async_16(a_s + ATile::byte_offset(a_row + 32 * i, 8 * a_unit), in ? a_src[i] : dbuf, in);
      a_src[i] += 2 * chunk_step;
    }
    i_buf = i_buf + 1 == stages ? 0 : i_buf + 1;
    if (++ik == steps) ik = 0, ib += gridDim.x;
  };

  // ---- the compute side: step ck of block cb in buffer c_buf ----
  int cb = blockIdx.x, ck = 0, c_buf = 0, m0 = 0, n0 = 0;
  // This lane's two A rows of each k16 step (warp rows g and g + 8): their images' gate rows.
  const Element* g_lo = gate16;
  const Element* g_hi = gate16;
  float acc[kBN / 2];
#pragma unroll
  for (float& v : acc) v = 0.0f;
  uint32_t a[4][4];  // A fragments of the step in flight (read by its wgmma group until the next step)
  uint32_t xr[kBN / 8][2];  // the block's residual pairs (t.pairs), as stored; zeros without one
  // The output bias of this thread's columns, packed pairs as stored, once: a CTA's blocks share
  // their column block (the launcher's grid is a multiple of n_blocks).
  uint32_t bias[kBN / 8];
  {
    int mb0, nb0;
    block_origin(blockIdx.x, mb0, nb0);
    const unsigned short* bits = reinterpret_cast<const unsigned short*>(bp);
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      const int o = nb0 + wgmma_d_coord(thread, 4 * j).col;
      bias[j] = (o < t.c_out ? bits[o] : 0u) | (o + 1 < t.c_out ? uint32_t(bits[o + 1]) << 16 : 0u);
    }
  }

  // Launched as the gate kernel's dependent (the store plan): Wp and the bias above are the
  // block's weights, which no kernel before this one writes, so they were fetched while the gate
  // (and pass 1's last wave) still ran; D and the gates are read only after this wait.
  hopper::wait_for_prerequisite_grid();
#pragma unroll 1
  for (int s = 0; s < stages - 1; ++s) {
    issue();
    cp_async_commit();
  }
  // Wp landed (its group is the oldest); written by the generic proxy, read by wgmma: one fence.
  cp_async_wait<0>();
  fence_proxy_async_shared();
  // (the first loop barrier below orders every thread's Wp pieces before any wgmma)
#pragma unroll 1
  while (cb < t.blocks) {
    if (ck == 0) {
      block_origin(cb, m0, n0);
      const int r = m0 + 64 * warpgroup + 16 * warp + lane / 4;
      g_lo = gate16 + std::ptrdiff_t(r < t.m ? fast_quotient(t.pq_div, r) : 0) * t.d_live;
      g_hi = gate16 + std::ptrdiff_t(r + 8 < t.m ? fast_quotient(t.pq_div, r + 8) : 0) * t.d_live;
      // The block's residual, loaded now and used by its epilogue: the loads fly under the
      // block's steps. Loaded in the epilogue, each block would wait one DRAM round trip that
      // nothing hides (one CTA per SM), which counts where a CTA makes many short blocks (56²).
#pragma unroll
      for (int j = 0; j < kBN / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const MatrixCoord at = wgmma_d_coord(thread, 4 * j);
          const int o = n0 + at.col, row = m0 + 64 * warpgroup + at.row + 8 * half;
          const bool in = t.residual && t.pairs && o < t.c_out && row < t.m;
          xr[j][half] = in ? *reinterpret_cast<const uint32_t*>(x + std::ptrdiff_t(row) * t.c + o) : 0u;
        }
    }
    // The gates of this step's A registers first: their loads (L1, else L2) fly while this
    // thread waits for its copies and the barrier. Register r of k-step ks: row g (r even) or
    // g + 8, channels c0 + 16ks + 2(lane % 4) (+ 8 for r ≥ 2); past d_live A is zero.
    const int c0 = ck * kWgProjectStep;
    uint32_t gate[4][4];
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      const int ch = c0 + 16 * ks + 2 * (lane % 4);
      const bool in_lo = ch < t.d_live, in_hi = ch + 8 < t.d_live;
      gate[ks][0] = in_lo ? *reinterpret_cast<const uint32_t*>(g_lo + ch) : 0u;
      gate[ks][1] = in_lo ? *reinterpret_cast<const uint32_t*>(g_hi + ch) : 0u;
      gate[ks][2] = in_hi ? *reinterpret_cast<const uint32_t*>(g_lo + ch + 8) : 0u;
      gate[ks][3] = in_hi ? *reinterpret_cast<const uint32_t*>(g_hi + ch + 8) : 0u;
    }
    // This thread's copies of step ck have landed (stages − 2 later groups may still fly).
    if (stages == 2) cp_async_wait<0>();
    else if (stages == 3) cp_async_wait<1>();
    else if (stages == 4) cp_async_wait<2>();
    else if (stages == 5) cp_async_wait<3>();
    else if (stages == 6) cp_async_wait<4>();
    else if (stages == 7) cp_async_wait<5>();
    else cp_async_wait<6>();
    __syncthreads();  // step ck landed for every thread; every warp is done reading the buffer refilled next
    issue();          // stages − 1 steps ahead, into the buffer the previous step used
    cp_async_commit();

    // The previous step's wgmma group ran through the barrier and the copies; it reads a[].
    wgmma_wait_group<0>();
    fence_operands(acc);
    fence_operands(a);
    const uint32_t a_s = ring + uint32_t(c_buf) * kWgProjectABytes;
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      ldmatrix_x4(a[ks], a_s + ATile::byte_offset(64 * warpgroup + 16 * warp + lane % 16, 16 * ks + 8 * (lane / 16)));
#pragma unroll
      for (int r = 0; r < 4; ++r) a[ks][r] = mul_pair<Element>(a[ks][r], gate[ks][r]);
    }
    const uint64_t b_desc =
        wgmma_descriptor(b_base + uint32_t(c0) * 128u, panel_bytes, 8 * 128, WgmmaSwizzle::b128);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      wgmma_m64nNk16_rs_mn_major_b<Element, kBN>(acc, a[ks], wgmma_advance(b_desc, uint32_t(16 * ks) * 128u), true);
    wgmma_commit_group();  // left in flight: waited for at the next step, or before the epilogue
    c_buf = c_buf + 1 == stages ? 0 : c_buf + 1;
    if (++ck < steps) continue;
    wgmma_wait_group<0>();
    fence_operands(acc);
    fence_operands(a);

    // ---- epilogue of block cb: y = acc + bp (+ x); acc[4j + c] is row 16w + g + 8(c >> 1),
    //      column 8j + 2t + (c & 1) of this warpgroup's 64 rows; the residual pairs were loaded
    //      at the block's first step ----
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      const MatrixCoord at = wgmma_d_coord(thread, 4 * j);
      const int o = n0 + at.col;
      if (o >= t.c_out) continue;
      const float2 b = unpack_pair<Element>(bias[j]);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = m0 + 64 * warpgroup + at.row + 8 * half;
        if (row >= t.m) continue;
        float lo = acc[4 * j + 2 * half] + b.x, hi = acc[4 * j + 2 * half + 1] + b.y;
        const std::ptrdiff_t at_y = std::ptrdiff_t(row) * t.c_out + o, at_x = std::ptrdiff_t(row) * t.c + o;
        if (t.pairs) {  // C_out even, y and x 4-byte aligned: o + 1 < C_out
          const float2 v = unpack_pair<Element>(xr[j][half]);  // zeros without a residual
          *reinterpret_cast<uint32_t*>(y + at_y) = pack_pair<Element>(lo + v.x, hi + v.y);
        } else {
          if (t.residual) lo += to_float(x[at_x]);
          y[at_y] = from_float<Element>(lo);
          if (o + 1 < t.c_out) {
            if (t.residual) hi += to_float(x[at_x + 1]);
            y[at_y + 1] = from_float<Element>(hi);
          }
        }
      }
    }
#pragma unroll
    for (float& v : acc) v = 0.0f;
    ck = 0, cb += gridDim.x;
  }
  cp_async_wait<0>();  // no copy outlives the CTA's shared memory
}

// Pass 2 over the batch on wgmma: Y = (D ⊙ G)·Wp + bp (+ x) -> a.y; w: project_weights().
// dependent: launched as a programmatic dependent of the gate kernel (gpu/lib/hopper/dependent_launch.cuh).
template <class Element>
void launch_project_wgmma(const MBConvProblem& p, const Args<MBConvProblem>& a, const void* dbuf, const void* gate16,
                          const ProjectWeights<Element>& w, bool dependent) {
  const int sms = sm_count();
  WgProjectParams t{};
  const int bn = wg_project_bn(p.C_out);
  t.m = int(std::int64_t(p.N) * p.P() * p.Q()), t.pq = p.P() * p.Q();
  t.chunks = (p.hidden() + kChunk - 1) / kChunk, t.d_live = dbuf_live(p.hidden()), t.hidden = p.hidden();
  t.c = p.C, t.c_out = p.C_out;
  t.n_blocks = (p.C_out + bn - 1) / bn;
  t.blocks = int((std::int64_t(t.m) + kWgProjectRows - 1) / kWgProjectRows * t.n_blocks);
  t.pq_div = fast_div(std::uint32_t(t.pq)), t.nb_div = fast_div(std::uint32_t(t.n_blocks));
  t.residual = p.has_residual();
  t.pairs = p.C_out % 2 == 0 && aligned_to(a.y, 4) && aligned_to(a.x, 4);
  t.ldw = w.ldw;
  if (!wg_project_fits(p)) throw std::invalid_argument("mbconv: internal: Wp does not fit 11h's pass 2");
  t.k_rows = wg_project_k_rows(p.hidden()), t.stages = wg_project_stages(p.hidden(), bn);
  // A multiple of n_blocks CTAs, so that every block of a CTA has its column block (Wp resident).
  const unsigned grid = unsigned(std::min<std::int64_t>(t.blocks, std::max(1, sms / t.n_blocks) * t.n_blocks));
  const auto go = [&](auto kernel, std::size_t bytes, const char* name) {
    allow_dynamic_shared(kernel, bytes, name);
    hopper::launch_kernel(dependent, kernel, dim3(grid), dim3(kWgProjectThreads), bytes, name, t,
                          static_cast<const Element*>(dbuf), static_cast<const Element*>(gate16), w.wp,
                          static_cast<const Element*>(a.project_b), static_cast<const Element*>(a.x),
                          static_cast<Element*>(a.y));
  };
  if (bn == 64) go(mbconv_project_wgmma_kernel<Element, 64>, wg_project_bytes(p), "mbconv_project_wgmma_kernel<64>");
  else go(mbconv_project_wgmma_kernel<Element, 128>, wg_project_bytes(p), "mbconv_project_wgmma_kernel<128>");
}

}  // namespace convlab::gpu::mbconv
