// gpu/lib/mbconv_project.cuh — pass 2 of lesson 11's store plan where Wp does not fit one CTA
// whole: 11e's at C = 112 @ 14² and 7², 11c's only past hidden 7200 (elsewhere
// mbconv_project_stream.cuh, in 11c also its cta_part form): the projection as one GEMM over the
// whole batch, its A operand gated on the way into the tensor cores.
//
// Pass 1 left D = φ(dw(φ(x·We + be)) + bd) in dbuf ([N][hidden chunk][P·Q][32], 16-bit) and the
// SE gate g [N, hidden]. What remains of the block is a plain GEMM whose A rows are every
// output pixel of the batch, image after image:
//
//   plain loop:  for n, pixel: for o: y[n, pixel, o] = bp[o] + x[n, pixel, o]
//                                                      + Σ_j d[n, pixel, j] · g[n, j] · Wp[j, o]
//   here:        Y[N·P·Q, C_out] = (D ⊙ G)·Wp,  G[row, j] = g[image of row, j]
//
// Y is cut into blocks of kBM × kBN (ProjectTile, gpu/lib/mbconv_tile.hpp). The kernel is
// persistent: t.grid CTAs (two per SM where shared memory allows), CTA c making blocks c,
// c + grid, c + 2·grid, ... Each block walks the hidden channels in steps of kKS (one or two
// dbuf chunks), and the CTA's steps of all its blocks form ONE sequence of stages through a
// project_stages(kKS)-deep cp.async pipeline:
//
//   for each block b of this CTA:            stage sequence: (b0, 0) (b0, 1) .. (b0, last) (b1, 0) ..
//     for step k: copy A, B, G of (b, k)     copied stages − 1 ahead of the compute, across block
//                 acc += (A ⊙ G)·B           boundaries: block b1's first steps land while b0 finishes
//     y = acc + bp + x                       x copied with b's last step, so the epilogue reads shared memory
//
// Per stage the CTA copies D's kBM rows (a row is kKS·2 contiguous bytes of dbuf per chunk; the
// rows of one image are consecutive), the step's kKS rows of Wp and the step's gates of the
// `span` images a block touches; with the block's last step also the block's rows of x (the
// residual), into one of t.x_buffers regions. A block's set-up (its rows' dbuf offsets and
// gate slots) maps rows to images with fast_quotient (multiply-high; 32-bit rows); nothing per
// stage divides. The 8 warps are kWM × kWN, each making (16·kMT) × 32 of the block with
// mma.sync m16n8k16: per k16 step a warp loads kMT A fragments (ldmatrix) and multiplies each
// by its rows' gate pairs (one packed 16-bit multiply per register, the gate rounded to 16 bits
// like D), then 2 B fragment pairs (ldmatrix .trans), then kMT·4 mma. A block's rows may cross
// images: each lane's two rows per m tile know their image slot in the staged gates.
// Epilogue: y = Y + bp (+ x), fp32 sums rounded once, a lane's two adjacent columns as one
// 32-bit store; the bias is loaded at the block's first step.
//
// Cost: 2·N·P·Q·hidden·C_out flops on the tensor cores (plus the padding columns of the last
// column block); DRAM: D once (2 bytes per element; each column block re-reads its rows, from
// L2: the column blocks of one row block are consecutive blocks, made at the same time), Wp,
// the gates, x for the residual and y once. Floor: those bytes at DRAM bandwidth; the issue
// count per stage is project_count (mbconv_tile.hpp).
// Contract: f16 or bf16; dbuf as pass 1 writes it (channels hidden .. dbuf_live(hidden) − 1
// hold zeros); gate16 [N][dbuf_live(hidden)] in the same type with zero padding (se_gate's
// gate16); any N, C_out, P·Q with N·P·Q ≤ 2^31 − 512 (project_rows_fit; the launcher throws
// beyond). Tunables: kProjectTiles (bm, bn, ks), project_stages, and the choice
// choose_project_tile (mbconv_tile.hpp).
// Run just this pass's rung: build/convlab run mbconv/gpu/11c_fused_store --shape N=128,H=7,C=192,C_out=192,dtype=f16
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/hopper/dependent_launch.cuh"
#include "gpu/lib/mbconv_fused.cuh"  // unpack_pair
#include "gpu/lib/mbconv_tile.hpp"
#include "gpu/lib/mma.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

// A packed pair of 16-bit values times another, rounded once (f16x2 or bf16x2).
template <class Element> __device__ __forceinline__ uint32_t mul_pair(uint32_t a, uint32_t b) {
  uint32_t out;
  if constexpr (std::is_same_v<Element, __half>) asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(out) : "r"(a), "r"(b));
  else asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(out) : "r"(a), "r"(b));
  return out;
}

// dbuf [N][chunks][P·Q][32], gate16 [N][d_live], wp [hidden][ldw] (16-byte aligned, ldw a
// multiple of 8; columns C_out .. ldw − 1 are copied but only feed columns never stored),
// bp [C_out], x [N·P·Q][C] (the residual; 16-byte aligned with C a multiple of 8 when
// t.x_staged), y [N·P·Q][C_out]. Grid t.grid (persistent), kThreads threads, t.bytes of
// dynamic shared memory.
template <class Element, int kBM, int kBN, int kKS>
__global__ void __launch_bounds__(kThreads, 2) mbconv_project_kernel(
    ProjectTile t, const Element* __restrict__ dbuf, const Element* __restrict__ gate16,
    const Element* __restrict__ wp, const Element* __restrict__ bp, const Element* __restrict__ x,
    Element* __restrict__ y) {
  // ---- tunables and what they imply -----------------------------------------------------
  constexpr int kWN = kBN / 32, kWM = kWarps / kWN, kMT = kBM / (16 * kWM), kNT = 4;
  static_assert(kBN % 32 == 0 && kWarps % kWN == 0 && kBM % (16 * kWM) == 0, "warp tiles of (16·kMT) × 32");
  static_assert(kKS == kChunk || kKS == 2 * kChunk, "a stage is one or two whole dbuf chunks");
  constexpr int kUnits = kKS / 8;                       // 16-byte units of one A row (and one gate row) per stage
  constexpr int kACopies = kBM * kUnits / kThreads;     // A pieces per thread per stage
  static_assert(kACopies >= 1 && kBM * kUnits % kThreads == 0, "A rows copied by every thread alike");
  constexpr int kBPieces = kKS * kBN / 8;               // 16-byte pieces of a stage's B rows
  constexpr int kBCopies = (kBPieces + kThreads - 1) / kThreads;
  constexpr int kBRowsPerPass = kThreads / (kBN / 8);   // B rows one pass of the threads copies
  static_assert(kThreads % (kBN / 8) == 0, "a thread's B pieces share one column: one pointer, rows apart");
  constexpr int kXPieces = kBM * kBN / 8;               // 16-byte pieces of a block's residual x
  constexpr int kStages = project_stages(kKS);
  static_assert(kStages >= 2, "one stage computed while the next lands");
  // Shared row strides, the host's (ProjectTile::lda, ldb, ldx) as constants: ldmatrix and copy
  // offsets fold into immediates.
  constexpr int kLda = odd_units_stride(kKS), kLdb = odd_units_stride(kBN), kLdx = odd_units_stride(kBN);

  extern __shared__ __align__(16) unsigned char shared[];
  const uint32_t shared_base = shared_address(shared);
  const uint32_t x_base = shared_base + kStages * uint32_t(t.stage_bytes);  // X region i at x_base + i·x_bytes
  // Launched as the gate kernel's dependent (the store plan): its first copy reads D and the
  // gates, so it waits for that grid (and, through it, pass 1) before anything else.
  hopper::wait_for_prerequisite_grid();

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / kWN, wn = warp % kWN;
  const int w_row = wm * 16 * kMT, w_col = wn * 32;
  const std::ptrdiff_t chunk_step = std::ptrdiff_t(t.pq) * kChunk;  // dbuf elements from chunk k to k + 1
  // Block b's place: row block b / n_blocks, column block b % n_blocks (the column blocks of a
  // row block are consecutive b, so CTAs that run together share their rows of D in L2).
  const auto block_origin = [&](int b, int& m0, int& n0) {
    const int mb = fast_quotient(t.nb_div, b);
    m0 = mb * kBM, n0 = (b - mb * t.n_blocks) * kBN;
  };

  // ---- the copy side: the stage this CTA copies next is step ik of block ib ----------------
  // The CTA's blocks are blockIdx.x, + gridDim.x, ...; their steps form one sequence of stages,
  // copied kStages − 1 ahead of the compute, so the next block's first stages are in flight while
  // this block finishes and stores. Each thread's pieces are fixed: A piece i is row
  // a_row0 + i·(kThreads / kUnits), 16-byte unit a_unit (chunk a_unit / 4 of the stage); B pieces
  // are rows b_row0 + j·kBRowsPerPass, column b_col. Per block the set-up turns them into global
  // pointers (the row → image map: fast_quotient, no division); per stage a copy is a compare,
  // a select and the cp.async, and the pointers step on by one stage.
  const int a_row0 = tid / kUnits, a_unit = tid % kUnits;
  const int b_row0 = tid / (kBN / 8), b_col = 8 * (tid % (kBN / 8));
  const int g_slot = tid / kUnits;  // the gate piece this thread copies (slot, unit a_unit), if g_slot < span
  const std::ptrdiff_t a_stage_step = (kKS / kChunk) * chunk_step, b_stage_step = std::ptrdiff_t(kKS) * t.ldw;
  int ib = blockIdx.x, ik = 0, i_buf = 0, i_x = 0, i_m0 = 0, i_n0 = 0;
  const Element* a_src[kACopies];  // step ik's A pieces
  bool a_row_in[kACopies];
  const Element* b_src = wp;       // step ik's first B piece
  bool b_col_in = false;
  const Element* g_src = gate16;   // step ik's gate piece
  bool g_in = false;
  const auto copy_block_setup = [&]() {
    block_origin(ib, i_m0, i_n0);
    const int image = fast_quotient(t.pq_div, i_m0);
#pragma unroll
    for (int i = 0; i < kACopies; ++i) {
      const int m = i_m0 + a_row0 + i * (kThreads / kUnits);
      a_row_in[i] = m < t.m;  // t.m + kBM < 2^31 (project_rows_fit)
      a_src[i] = dbuf + (a_row_in[i] ? project_row_offset(t, m) : 0) + (a_unit / 4) * chunk_step + 8 * (a_unit % 4);
    }
    b_col_in = i_n0 + b_col < t.c_out;  // ldw ≥ C_out rounded up to 8: whole pieces
    b_src = wp + std::ptrdiff_t(b_row0) * t.ldw + i_n0 + b_col;
    g_in = g_slot < t.span && image + g_slot < t.images;
    g_src = gate16 + std::ptrdiff_t(g_in ? image + g_slot : 0) * t.d_live + 8 * a_unit;
  };
  const auto issue = [&]() {
    if (ib >= t.blocks) return;  // past this CTA's last block: an empty group keeps the wait counts
    if (ik == 0) copy_block_setup();
    const int c0 = ik * kKS;
    const uint32_t stage = shared_base + i_buf * uint32_t(t.stage_bytes);
    const bool unit_in = c0 + 8 * a_unit < t.d_live;
#pragma unroll
    for (int i = 0; i < kACopies; ++i) {
      const bool in = a_row_in[i] && unit_in;
      cp_async_16(stage + ((a_row0 + i * (kThreads / kUnits)) * kLda + 8 * a_unit) * 2, in ? a_src[i] : dbuf, in);
      a_src[i] += a_stage_step;
    }
    const uint32_t b_stage = stage + uint32_t(t.a_bytes);
#pragma unroll
    for (int j = 0; j < kBCopies; ++j) {
      if (kBPieces % kThreads != 0 && tid + j * kThreads >= kBPieces) break;
      const int kk = b_row0 + j * kBRowsPerPass;
      const bool in = b_col_in && c0 + kk < t.hidden;
      cp_async_16(b_stage + (kk * kLdb + b_col) * 2, in ? b_src + std::ptrdiff_t(j * kBRowsPerPass) * t.ldw : wp, in);
    }
    b_src += b_stage_step;
    const uint32_t g_stage = b_stage + uint32_t(t.b_bytes);
    if (g_slot < t.span) {
      const bool in = g_in && unit_in;
      cp_async_16(g_stage + (g_slot * kKS + 8 * a_unit) * 2, in ? g_src : gate16, in);
    }
    g_src += kKS;
    if (t.span * kUnits > kThreads) {  // blocks of thousands of tiny images: the rest of the gate pieces
      const int image = fast_quotient(t.pq_div, i_m0);
#pragma unroll 1
      for (int piece = tid + kThreads; piece < t.span * kUnits; piece += kThreads) {
        const int slot = piece / kUnits, col = 8 * (piece % kUnits);
        const bool in = image + slot < t.images && c0 + col < t.d_live;
        cp_async_16(g_stage + (slot * kKS + col) * 2,
                    in ? gate16 + std::ptrdiff_t(image + slot) * t.d_live + c0 + col : gate16, in);
      }
    }
    if (t.x_staged && ik == t.steps - 1) {  // the block's residual rows, with its last stage
      const uint32_t x_dst = x_base + i_x * uint32_t(t.x_bytes);
#pragma unroll
      for (int i = 0; i < (kXPieces + kThreads - 1) / kThreads; ++i) {
        const int piece = tid + i * kThreads;
        if (kXPieces % kThreads != 0 && piece >= kXPieces) break;
        const int r = piece / (kBN / 8), col = 8 * (piece % (kBN / 8)), m = i_m0 + r;
        const bool in = m < t.m && i_n0 + col < t.c;  // C a multiple of 8: whole pieces
        cp_async_16(x_dst + (r * kLdx + col) * 2, in ? x + std::ptrdiff_t(m) * t.c + i_n0 + col : x, in);
      }
      i_x = i_x + 1 == t.x_buffers ? 0 : i_x + 1;
    }
    i_buf = i_buf + 1 == kStages ? 0 : i_buf + 1;
    if (++ik == t.steps) ik = 0, ib += gridDim.x;
  };

  // ---- the compute side: step ck of block cb, in stage buffer c_buf -------------------------
  int cb = blockIdx.x, ck = 0, c_buf = 0, c_x = 0, m0 = 0, n0 = 0;
  // Per m tile, where the gates of this lane's rows lane/4 and lane/4 + 8 start in a G stage
  // (their image's slot × kKS/2 gate pairs), and the bias of the lane's columns, loaded at the
  // block's first step so the epilogue does not wait on them.
  int gate_lo[kMT], gate_hi[kMT];
  uint32_t bias[kNT];  // the lane's two columns' bias, a packed 16-bit pair (as stored: no rounding)
  float acc[kMT][kNT][4];

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    issue();
    cp_async_commit();
  }
  while (cb < t.blocks) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // this stage landed for every thread; every thread is done with the previous one's buffer
    issue();          // kStages − 1 stages ahead, into the buffer computed last
    cp_async_commit();
    if (ck == 0) {
      block_origin(cb, m0, n0);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const int r = m0 + w_row + mt * 16 + lane / 4;  // rows past M: zeros in A, any slot
        gate_lo[mt] = (r < t.m ? project_gate_slot(t, m0, r) : 0) * (kKS / 2);
        gate_hi[mt] = (r + 8 < t.m ? project_gate_slot(t, m0, r + 8) : 0) * (kKS / 2);
      }
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const int o = n0 + w_col + nt * 8 + 2 * (lane % 4);
        const unsigned short* bits = reinterpret_cast<const unsigned short*>(bp);
        bias[nt] = (o < t.c_out ? bits[o] : 0u) | (o + 1 < t.c_out ? uint32_t(bits[o + 1]) << 16 : 0u);
      }
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;
    }
    const unsigned char* stage = shared + c_buf * t.stage_bytes;
    const Element* a_s = reinterpret_cast<const Element*>(stage);
    const Element* b_s = reinterpret_cast<const Element*>(stage + t.a_bytes);
    const uint32_t* g_s = reinterpret_cast<const uint32_t*>(stage + t.a_bytes + t.b_bytes);  // gate pairs [slot][kKS/2]
#pragma unroll
    for (int k0 = 0; k0 < kKS; k0 += 16) {
      uint32_t a[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        ldmatrix_x4(a[mt], shared_address(&a_s[(w_row + mt * 16 + lane % 16) * kLda + k0 + 8 * (lane / 16)]));
        // Register r holds row lane/4 (+8 for r odd), channels k0 + 2·(lane%4) (+8 for r ≥ 2).
        const int pair = (k0 + 2 * (lane % 4)) / 2;
        a[mt][0] = mul_pair<Element>(a[mt][0], g_s[gate_lo[mt] + pair]);
        a[mt][1] = mul_pair<Element>(a[mt][1], g_s[gate_hi[mt] + pair]);
        a[mt][2] = mul_pair<Element>(a[mt][2], g_s[gate_lo[mt] + pair + 4]);
        a[mt][3] = mul_pair<Element>(a[mt][3], g_s[gate_hi[mt] + pair + 4]);
      }
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {  // two n8 tiles: one ldmatrix .x4 .trans
        uint32_t bq[4];
        ldmatrix_x4_trans(bq, shared_address(&b_s[(k0 + lane % 16) * kLdb + w_col + 16 * np + 8 * (lane / 16)]));
        const uint32_t b_lo[2] = {bq[0], bq[1]}, b_hi[2] = {bq[2], bq[3]};
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_m16n8k16<Element>(acc[mt][2 * np], a[mt], b_lo);
          mma_m16n8k16<Element>(acc[mt][2 * np + 1], a[mt], b_hi);
        }
      }
    }
    c_buf = c_buf + 1 == kStages ? 0 : c_buf + 1;
    if (++ck < t.steps) continue;

    // ---- epilogue of block cb: y = Y + bp (+ x) -----------------------------------------------
    // x rows m0 .., columns n0 .. (staged)
    const Element* xs = reinterpret_cast<const Element*>(shared + kStages * t.stage_bytes + c_x * t.x_bytes);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const MatrixCoord c = mma_c_coord(lane, 0);
      const int col = w_col + nt * 8 + c.col, o = n0 + col;
      if (o >= t.c_out) continue;
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int r = w_row + mt * 16 + c.row + 8 * half, row = m0 + r;
          if (row >= t.m) continue;
          const std::ptrdiff_t at_y = std::ptrdiff_t(row) * t.c_out + o;
          const std::ptrdiff_t at_x = std::ptrdiff_t(row) * t.c + o;  // residual: stride 1, C_out == C
          const float2 b = unpack_pair<Element>(bias[nt]);  // zero bits: 0.0 in f16 and bf16
          float lo = acc[mt][nt][2 * half] + b.x, hi = acc[mt][nt][2 * half + 1] + b.y;
          if (t.pairs) {  // C_out even: o + 1 < C_out, both addresses 4-byte aligned
            if (t.residual) {
              const uint32_t pair = t.x_staged ? *reinterpret_cast<const uint32_t*>(xs + r * kLdx + col)
                                               : *reinterpret_cast<const uint32_t*>(x + at_x);
              const float2 v = unpack_pair<Element>(pair);
              lo += v.x, hi += v.y;
            }
            *reinterpret_cast<uint32_t*>(y + at_y) = pack_pair<Element>(lo, hi);
          } else {
            if (t.residual) lo += to_float(t.x_staged ? xs[r * kLdx + col] : x[at_x]);
            y[at_y] = from_float<Element>(lo);
            if (o + 1 < t.c_out) {
              if (t.residual) hi += to_float(t.x_staged ? xs[r * kLdx + col + 1] : x[at_x + 1]);
              y[at_y + 1] = from_float<Element>(hi);
            }
          }
        }
    }
    if (t.x_staged) c_x = c_x + 1 == t.x_buffers ? 0 : c_x + 1;
    ck = 0, cb += gridDim.x;
  }
  cp_async_wait<0>();  // no copy outlives the CTA's shared memory
}

// dst[j][o] = src[j][o] for o < cols, and 0 for cols ≤ o < ld: rows of ld elements, every element
// written (the kernel copies whole 16-byte pieces, the padding columns among them).
template <class Element>
__global__ void copy_rows_kernel(int rows, int cols, int ld, const Element* __restrict__ src, Element* __restrict__ dst) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < std::int64_t(rows) * ld;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / ld, c = i - r * ld;
    dst[i] = c < cols ? src[r * cols + c] : from_float<Element>(0.0f);
  }
}

// Bytes of workspace project_weights may use: Wp with rows of C_out rounded up to 8, for when
// the given Wp's rows are not whole 16-byte pieces.
inline std::size_t project_workspace_bytes(const MBConvProblem& p) {
  return std::size_t(p.hidden()) * ((p.C_out + 7) / 8 * 8) * 2;
}

// Wp as both pass-2 kernels read it: rows of ldw elements, whole 16-byte pieces.
template <class Element> struct ProjectWeights {
  const Element* wp;
  int ldw;
};

// What both pass-2 launchers (launch_project below, launch_project_wgmma) need first: the rows
// index check, and Wp in whole 16-byte rows — the given Wp, or, where C_out is not a multiple of
// 8 or Wp is not 16-byte aligned, a zero-padded copy in `workspace` (project_workspace_bytes(p),
// 16-byte aligned) made by a small kernel. The store plan calls it before pass 1, so that pass 2,
// launched as a dependent of the gate, may read Wp before its wait.
template <class Element>
ProjectWeights<Element> project_weights(const MBConvProblem& p, const Args<MBConvProblem>& a, void* workspace) {
  if (!project_rows_fit(p))
    throw std::invalid_argument("mbconv: pass 2 indexes rows with 32-bit integers: N·P·Q must stay below 2^31 − 512");
  const Element* wp = static_cast<const Element*>(a.project_w);
  if (p.C_out % 8 == 0 && aligned_to(wp, 16)) return {wp, p.C_out};
  const int ldw = (p.C_out + 7) / 8 * 8;
  Element* padded = static_cast<Element*>(workspace);
  const std::int64_t count = std::int64_t(p.hidden()) * ldw;
  copy_rows_kernel<Element><<<unsigned(std::min<std::int64_t>((count + 255) / 256, 4096)), 256>>>(
      p.hidden(), p.C_out, ldw, wp, padded);
  check_launch("mbconv copy_rows_kernel");
  return {padded, ldw};
}

// Pass 2 over the batch: Y = (D ⊙ G)·Wp + bp (+ x) -> a.y. gate16: se_gate's 16-bit gates,
// rows of dbuf_live(hidden); w: project_weights(). dependent: launched as a programmatic
// dependent of the gate kernel (the kernel waits for it before its first copy).
template <class Element>
void launch_project(const MBConvProblem& p, const Args<MBConvProblem>& a, const void* dbuf, const void* gate16,
                    const ProjectWeights<Element>& w, bool dependent) {
  const bool x_staged = p.has_residual() && p.C % 8 == 0 && aligned_to(a.x, 16);
  ProjectTile t = choose_project_tile(p, sm_count(), x_staged);
  if (t.bm == 0) throw std::invalid_argument("mbconv: internal: no projection tile fits this shape");
  t.ldw = w.ldw;
  t.pairs = p.C_out % 2 == 0 && aligned_to(a.y, 4) && aligned_to(a.x, 4);
  const auto go = [&](auto kernel, const char* name) {
    allow_dynamic_shared(kernel, t.bytes, name);
    hopper::launch_kernel(dependent, kernel, dim3(unsigned(t.grid)), dim3(kThreads), t.bytes, name, t,
                          static_cast<const Element*>(dbuf), static_cast<const Element*>(gate16), w.wp,
                          static_cast<const Element*>(a.project_b), static_cast<const Element*>(a.x),
                          static_cast<Element*>(a.y));
  };
  // One instantiation per entry of kProjectTiles (mbconv_tile.hpp).
  if (t.bm == 256) go(mbconv_project_kernel<Element, 256, 32, 32>, "mbconv_project_kernel<256,32,32>");
  else if (t.bm == 128 && t.bn == 32) go(mbconv_project_kernel<Element, 128, 32, 32>, "mbconv_project_kernel<128,32,32>");
  else if (t.bm == 128) go(mbconv_project_kernel<Element, 128, 64, 32>, "mbconv_project_kernel<128,64,32>");
  else if (t.bn == 64 && t.ks == 32) go(mbconv_project_kernel<Element, 64, 64, 32>, "mbconv_project_kernel<64,64,32>");
  else if (t.bn == 64) go(mbconv_project_kernel<Element, 64, 64, 64>, "mbconv_project_kernel<64,64,64>");
  else if (t.ks == 32) go(mbconv_project_kernel<Element, 64, 128, 32>, "mbconv_project_kernel<64,128,32>");
  else go(mbconv_project_kernel<Element, 64, 128, 64>, "mbconv_project_kernel<64,128,64>");
}

}  // namespace convlab::gpu::mbconv
