// gpu/lib/mbconv_project_wgmma.cuh — pass 2 of lesson 11's store plan on Hopper's warpgroup MMA
// (11h): the same GEMM as gpu/lib/mbconv_project.cuh, Y[N·P·Q, C_out] = (D ⊙ G)·Wp + bp (+ x),
// with each warpgroup's 64 × bn slice of a block made by one wgmma per k16 step.
//
// Why: mbconv_project.cuh's warps each load A fragments with ldmatrix, gate them register by
// register (one gate load and one multiply per register) and issue kMT·4 mma.sync per k16 step;
// its profiles (lesson 11's NOTES) show the pass issue- and latency-bound at 14², a third of 11c's
// time there. Here the gate is applied once per element, in shared memory, by the thread whose
// cp.async brought it, and the tensor cores read A and B from shared memory themselves.
//
//   plain loop:  for row m (image n, pixel), o: y[m, o] = bp[o] (+ x[m, o]) + Σ_j d[m, j]·g[n, j]·Wp[j, o]
//   here, per block of 128 rows × kBN columns (CTA c makes blocks c, c + grid, ...):
//     for each 64-channel step k (one stage of a kStages-deep cp.async ring, running on across blocks):
//       A [128 rows][64 ch]  <- dbuf (two 32-channel chunks), 128-byte swizzled, K-major
//       B [64 k][kBN cols]   <- Wp rows, 128-byte swizzled panels of 64 columns, MN-major
//       A *= G               each thread its own 16-byte pieces, in place (f16x2 / bf16x2 multiplies)
//       warpgroup w: acc += A[64w .., :] · B   four wgmma m64nNk16, both operands in shared memory
//     y = acc + bp (+ x)     fp32 sums rounded once
//
// Synchronisation: one CTA barrier per stage. A thread waits for its own copies of stage s
// (cp.async.wait_group), gates its A pieces, fences (its generic writes will be read by the async
// proxy), and meets the others at the barrier; then it issues stage s + kStages − 1's copies into
// the buffer stage s − 1 used — every warpgroup finished that stage's wgmma (wait_group 0) before
// the barrier — and its warpgroup runs stage s's wgmma and waits for them.
//
// Cost: 2·N·P·Q·hidden·bn flops (C_out rounded up to kBN: the tensor cores are not what this
// pass waits on); DRAM: D, x and y once, Wp from L2 per block; per stage and thread: 4 A and
// kBN/32 B copies, 4 gated pieces (a shared load, a gate load from L1, 4 multiplies, a shared
// store), one barrier.
// Contract: dbuf [N][chunks][P·Q][32] as pass 1 writes it (channels ≥ dbuf_live(hidden) are never
// read: zero-filled here); gate16 [N][dbuf_live(hidden)] 16-byte aligned rows; Wp [hidden][ldw],
// ldw a multiple of 8, 16-byte aligned; N·P·Q ≤ 2^31 − 512; f16 or bf16; an sm_90a build on a
// compute capability 9.0 device. Tunables: kBN (64 or 128 from C_out), kStages (from the
// shared memory a stage takes), the block's 128 rows (two consumer warpgroups).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/hopper/wgmma_epilogue.cuh"  // ld_shared_v4
#include "gpu/lib/mbconv_project.cuh"         // mul_pair, copy_rows_kernel, project_workspace_bytes
#include "gpu/lib/mbconv_tile.hpp"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

inline constexpr int kWgProjectRows = 128;     // rows a block: two warpgroups of 64
inline constexpr int kWgProjectStep = 64;      // hidden channels a stage: two dbuf chunks, one 128-byte row
inline constexpr int kWgProjectThreads = 256;  // two warpgroups, each copying, gating and multiplying

// C_out -> the block's columns: 64 where that covers C_out, else column blocks of 128 (at 256 the
// 128 accumulators a thread did not stay in registers: ptxas put them on the stack).
CONVLAB_HOST_DEVICE constexpr int wg_project_bn(int c_out) { return c_out <= 64 ? 64 : 128; }
CONVLAB_HOST_DEVICE constexpr std::size_t wg_project_stage_bytes(int bn) {
  return std::size_t(kWgProjectRows) * 128 + std::size_t(kWgProjectStep) * bn * 2;
}
// As many stages as ~200 KB holds (6 at bn = 128, 8 at 64), plus 1 KB to align the ring.
CONVLAB_HOST_DEVICE constexpr int wg_project_stages(int bn) {
  return int((200 * 1024) / wg_project_stage_bytes(bn)) < 8 ? int((200 * 1024) / wg_project_stage_bytes(bn)) : 8;
}
CONVLAB_HOST_DEVICE constexpr std::size_t wg_project_bytes(int bn) { return wg_project_stages(bn) * wg_project_stage_bytes(bn) + 1024; }

struct WgProjectParams {
  int m, pq, chunks, d_live, hidden, c, c_out, ldw, blocks, n_blocks;
  FastDiv pq_div, nb_div;
  bool residual, pairs;
};

template <class Element, int kBN>
__global__ void __launch_bounds__(kWgProjectThreads, 1) mbconv_project_wgmma_kernel(
    WgProjectParams t, const Element* __restrict__ dbuf, const Element* __restrict__ gate16,
    const Element* __restrict__ wp, const Element* __restrict__ bp, const Element* __restrict__ x,
    Element* __restrict__ y) {
  using ATile = Sw128Tile<kWgProjectRows, kWgProjectStep>;  // [row][channel], K-major
  using BTile = Sw128Tile<kWgProjectStep, kBN>;             // [channel][column], MN-major
  constexpr int kStages = wg_project_stages(kBN);
  constexpr uint32_t kStageBytes = uint32_t(ATile::kBytes + BTile::kBytes);
  static_assert(kStageBytes == wg_project_stage_bytes(kBN) && kStageBytes % 1024 == 0, "1024-aligned stages");
  constexpr int kAPieces = kWgProjectRows * kWgProjectStep / 8 / kWgProjectThreads;  // 4
  constexpr int kBPieces = kWgProjectStep * kBN / 8 / kWgProjectThreads;             // 2, 4 or 8
  constexpr int kUnits = kWgProjectStep / 8;                                          // 16-byte units of an A row

  extern __shared__ unsigned char shared_raw[];
  const uint32_t ring = (shared_address(shared_raw) + 1023u) & ~1023u;  // 128-byte swizzle atoms: 1024-aligned
  const int tid = threadIdx.x, warpgroup = tid / 128, thread = tid % 128;
  const std::ptrdiff_t chunk_step = std::ptrdiff_t(t.pq) * kChunk;

  // ---- copies: thread tid owns A pieces (row a_row + 32i, unit a_unit) and B pieces (row
  //      b_row + (256 / (kBN/8))·j, column b_col) of every stage; it gates the A pieces it copied ----
  const int a_unit = tid % kUnits, a_row = tid / kUnits;  // rows a_row + 32i
  const int b_col = 8 * (tid % (kBN / 8)), b_row = tid / (kBN / 8);
  constexpr int kBRowStep = kWgProjectThreads / (kBN / 8);
  int ib = blockIdx.x, ik = 0, i_buf = 0;  // the stage issued next: step ik of block ib, into buffer i_buf
  const Element* a_src[kAPieces];
  bool a_in[kAPieces];
  const Element* b_src = wp;
  bool b_in = false;
  const int steps = (t.hidden + kWgProjectStep - 1) / kWgProjectStep;
  const auto block_origin = [&](int b, int& m0, int& n0) {
    const int mb = fast_quotient(t.nb_div, b);
    m0 = mb * kWgProjectRows, n0 = (b - mb * t.n_blocks) * kBN;
  };
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
      b_in = n0 + b_col < t.ldw;
      b_src = wp + n0 + b_col;  // row c0 of the step; piece j is row c0 + b_row + j·kBRowStep
    }
    const int c0 = ik * kWgProjectStep;
    const uint32_t a_s = ring + uint32_t(i_buf) * kStageBytes, b_s = a_s + ATile::kBytes;
    const bool unit_in = c0 + 8 * a_unit < t.d_live;
#pragma unroll
    for (int i = 0; i < kAPieces; ++i) {
      const bool in = a_in[i] && unit_in;
      cp_async_16(a_s + ATile::byte_offset(a_row + 32 * i, 8 * a_unit), in ? a_src[i] : dbuf, in);
      a_src[i] += 2 * chunk_step;
    }
#pragma unroll
    for (int j = 0; j < kBPieces; ++j) {
      const int k = b_row + j * kBRowStep;
      const bool in = b_in && c0 + k < t.hidden;
      cp_async_16(b_s + BTile::byte_offset(k, b_col), in ? b_src + std::ptrdiff_t(k) * t.ldw : wp, in);
    }
    b_src += std::ptrdiff_t(kWgProjectStep) * t.ldw;
    i_buf = i_buf + 1 == kStages ? 0 : i_buf + 1;
    if (++ik == steps) ik = 0, ib += gridDim.x;
  };

  // ---- the compute side: step ck of block cb in buffer c_buf ----
  int cb = blockIdx.x, ck = 0, c_buf = 0, m0 = 0, n0 = 0;
  const Element* g_row[kAPieces];  // the gate row of each of this thread's A rows (their image's)
  float acc[kBN / 2];
#pragma unroll
  for (float& v : acc) v = 0.0f;

#pragma unroll 1
  for (int s = 0; s < kStages - 1; ++s) {
    issue();
    cp_async_commit();
  }
#pragma unroll 1
  while (cb < t.blocks) {
    if (ck == 0) {
      block_origin(cb, m0, n0);
#pragma unroll
      for (int i = 0; i < kAPieces; ++i) {
        const int m = m0 + a_row + 32 * i;
        g_row[i] = gate16 + std::ptrdiff_t(m < t.m ? fast_quotient(t.pq_div, m) : 0) * t.d_live + 8 * a_unit;
      }
    }
    cp_async_wait<kStages - 2>();  // this thread's copies of step ck have landed
    const uint32_t a_s = ring + uint32_t(c_buf) * kStageBytes, b_s = a_s + ATile::kBytes;
    const int c0 = ck * kWgProjectStep;
    if (c0 + 8 * a_unit < t.d_live) {  // past d_live the pieces are zeros (and the gate row ends)
#pragma unroll
      for (int i = 0; i < kAPieces; ++i) {
        const uint32_t at = a_s + ATile::byte_offset(a_row + 32 * i, 8 * a_unit);
        uint32_t v[4];
        ld_shared_v4(v, at);
        const uint4 g = __ldg(reinterpret_cast<const uint4*>(g_row[i] + c0));
        v[0] = mul_pair<Element>(v[0], g.x), v[1] = mul_pair<Element>(v[1], g.y);
        v[2] = mul_pair<Element>(v[2], g.z), v[3] = mul_pair<Element>(v[3], g.w);
        st_shared_16(at, v);
      }
    }
    fence_proxy_async_shared();  // the gated pieces are read next by wgmma (the async proxy)
    __syncthreads();             // every piece of step ck gated; every wgmma of the previous step done
    issue();                     // kStages − 1 steps ahead, into the buffer the previous step used
    cp_async_commit();

    const uint64_t a_desc = k_major_descriptor<ATile>(a_s, 64 * warpgroup, 0);
    const uint64_t b_desc = mn_major_descriptor<BTile>(b_s, 0);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kWgProjectStep / 16; ++ks) {
      const uint64_t ad = wgmma_advance(a_desc, k_major_step_bytes<ATile>(16 * ks));
      const uint64_t bd = wgmma_advance(b_desc, mn_major_step_bytes<BTile>(16 * ks));
      wgmma_m64nNk16_ss_mn_major_b<Element, kBN>(acc, ad, bd, true);
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    fence_operands(acc);
    c_buf = c_buf + 1 == kStages ? 0 : c_buf + 1;
    if (++ck < steps) continue;

    // ---- epilogue of block cb: y = acc + bp (+ x); acc[4j + c] is row 16w + g + 8(c >> 1),
    //      column 8j + 2t + (c & 1) of this warpgroup's 64 rows ----
#pragma unroll
    for (int j = 0; j < kBN / 8; ++j) {
      const MatrixCoord at = wgmma_d_coord(thread, 4 * j);
      const int o = n0 + at.col;
      if (o >= t.c_out) continue;
      const float b_lo = to_float(bp[o]), b_hi = o + 1 < t.c_out ? to_float(bp[o + 1]) : 0.0f;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = m0 + 64 * warpgroup + at.row + 8 * half;
        if (row >= t.m) continue;
        float lo = acc[4 * j + 2 * half] + b_lo, hi = acc[4 * j + 2 * half + 1] + b_hi;
        const std::ptrdiff_t at_y = std::ptrdiff_t(row) * t.c_out + o, at_x = std::ptrdiff_t(row) * t.c + o;
        if (t.pairs) {  // C_out even, y and x 4-byte aligned: o + 1 < C_out
          if (t.residual) {
            const float2 v = unpack_pair<Element>(*reinterpret_cast<const uint32_t*>(x + at_x));
            lo += v.x, hi += v.y;
          }
          *reinterpret_cast<uint32_t*>(y + at_y) = pack_pair<Element>(lo, hi);
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

// Pass 2 over the batch on wgmma: Y = (D ⊙ G)·Wp + bp (+ x) -> a.y. workspace:
// project_workspace_bytes(p) (Wp padded to rows of whole 16-byte pieces where needed).
template <class Element>
void launch_project_wgmma(const MBConvProblem& p, const Args<MBConvProblem>& a, const void* dbuf, const void* gate16,
                          void* workspace) {
  if (!project_rows_fit(p))
    throw std::invalid_argument("mbconv: pass 2 indexes rows with 32-bit integers: N·P·Q must stay below 2^31 − 512");
  int device = 0, sms = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SMs)");
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
  const Element* wp = static_cast<const Element*>(a.project_w);
  t.ldw = p.C_out;
  if (p.C_out % 8 != 0 || !aligned_to(wp, 16)) {
    t.ldw = (p.C_out + 7) / 8 * 8;
    Element* padded = static_cast<Element*>(workspace);
    const std::int64_t count = std::int64_t(p.hidden()) * t.ldw;
    copy_rows_kernel<Element><<<unsigned(std::min<std::int64_t>((count + 255) / 256, 4096)), 256>>>(
        p.hidden(), p.C_out, t.ldw, wp, padded);
    check_launch("mbconv copy_rows_kernel");
    wp = padded;
  }
  const unsigned grid = unsigned(std::min<std::int64_t>(t.blocks, std::max(1, sms)));
  const auto go = [&](auto kernel, std::size_t bytes, const char* name) {
    allow_dynamic_shared(kernel, bytes, name);
    kernel<<<grid, kWgProjectThreads, bytes>>>(t, static_cast<const Element*>(dbuf),
                                               static_cast<const Element*>(gate16), wp,
                                               static_cast<const Element*>(a.project_b),
                                               static_cast<const Element*>(a.x), static_cast<Element*>(a.y));
    check_launch(name);
  };
  if (bn == 64) go(mbconv_project_wgmma_kernel<Element, 64>, wg_project_bytes(64), "mbconv_project_wgmma_kernel<64>");
  else go(mbconv_project_wgmma_kernel<Element, 128>, wg_project_bytes(128), "mbconv_project_wgmma_kernel<128>");
}

}  // namespace convlab::gpu::mbconv
