// gpu/lib/mbconv_project.cuh — pass 2 of lesson 11's store plan (11c): the projection as one
// GEMM over the whole batch, its A operand gated on the way into the tensor cores.
//
// Pass 1 left D = φ(dw(φ(x·We + be)) + bd) in dbuf ([N][hidden chunk][P·Q][32], 16-bit) and the
// SE gate g [N, hidden]. What remains of the block is a plain GEMM whose A rows are every
// output pixel of the batch, image after image:
//
//   plain loop:  for n, pixel: for o: y[n, pixel, o] = bp[o] + x[n, pixel, o]
//                                                      + Σ_j d[n, pixel, j] · g[n, j] · Wp[j, o]
//   here:        Y[N·P·Q, C_out] = (D ⊙ G)·Wp,  G[row, j] = g[image of row, j]
//
// A CTA makes a kBM × kBN block of Y (ProjectTile, gpu/lib/mbconv_tile.hpp), walking the hidden
// channels in chunks of 32 through a kProjectStages-deep cp.async pipeline: per chunk it copies
// D's kBM rows (a row is 64 contiguous bytes of dbuf; the rows of one image are consecutive), the
// chunk's 32 rows of Wp and the chunk's gates of the `span` images the block touches. Its 8 warps
// are kWM × kWN, each making (16·kMT) × 32 of the block with mma.sync m16n8k16: per k16 step a
// warp loads kMT A fragments (ldmatrix) and multiplies each by its rows' gate pairs (one packed
// 16-bit multiply per register, the gate rounded to 16 bits like D), then 2 B fragment pairs
// (ldmatrix .trans), then kMT·4 mma. A block's rows may cross images: each lane's two rows per
// m tile know their image slot in the staged gates, fixed for the whole walk.
// Epilogue: y = Y + bp (+ x, the residual), a lane's two adjacent columns as one 32-bit store.
//
// Cost: 2·N·P·Q·hidden·C_out flops on the tensor cores (plus the padding columns of the last
// column block); DRAM: D once (2 bytes per element; each column block re-reads its rows, from
// L2 when the blocks of one row block run together, which blockIdx order arranges), Wp, the
// gates, x for the residual and y once.
// Contract: f16 or bf16; dbuf as pass 1 writes it (channels hidden .. dbuf_live(hidden) − 1
// hold zeros); gate16 [N][dbuf_live(hidden)] in the same type with zero padding (se_gate's
// gate16); any N, P·Q, C_out. Tunables: kProjectStages, kProjectTiles and the choice
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
// bp [C_out], x [N·P·Q][C] (the residual), y [N·P·Q][C_out]. Grid t.m_blocks · t.n_blocks,
// kThreads threads, t.bytes of dynamic shared memory.
template <class Element, int kBM, int kBN>
__global__ void __launch_bounds__(kThreads, 2) mbconv_project_kernel(
    ProjectTile t, const Element* __restrict__ dbuf, const Element* __restrict__ gate16,
    const Element* __restrict__ wp, const Element* __restrict__ bp, const Element* __restrict__ x,
    Element* __restrict__ y) {
  constexpr int kWN = kBN / 32, kWM = kWarps / kWN, kMT = kBM / (16 * kWM), kNT = 4;
  static_assert(kBN % 32 == 0 && kWarps % kWN == 0 && kBM % (16 * kWM) == 0, "warp tiles of (16·kMT) × 32");
  constexpr int kACopies = kBM * (kChunk / 8) / kThreads;  // 16-byte pieces of a chunk's A rows per thread
  static_assert(kACopies >= 1 && kBM * (kChunk / 8) % kThreads == 0, "A rows copied by every thread alike");
  constexpr int kBPieces = kChunk * kBN / 8;  // 16-byte pieces of a chunk's B rows
  extern __shared__ __align__(16) unsigned char shared[];
  const auto a_stage = [&](int s) { return reinterpret_cast<Element*>(shared + s * t.stage_bytes); };
  const auto b_stage = [&](int s) { return reinterpret_cast<Element*>(shared + s * t.stage_bytes + t.a_bytes); };
  const auto g_stage = [&](int s) {
    return reinterpret_cast<Element*>(shared + s * t.stage_bytes + t.a_bytes + t.b_bytes);
  };

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int mb = blockIdx.x / t.n_blocks, nb = blockIdx.x % t.n_blocks;
  const std::int64_t m0 = std::int64_t(mb) * kBM;
  const int n0 = nb * kBN;
  const int first_image = int(m0 / t.pq);
  const std::ptrdiff_t chunk_step = std::ptrdiff_t(t.pq) * kChunk;  // dbuf elements from chunk k to k+1

  // This thread's A pieces: (row, 16-byte unit), the same for every chunk; dbuf offsets at chunk 0.
  std::ptrdiff_t a_src[kACopies];
  uint32_t a_dst[kACopies];
  int a_unit[kACopies];
  bool a_row_in[kACopies];
#pragma unroll
  for (int i = 0; i < kACopies; ++i) {
    const int piece = tid + i * kThreads, r = piece / (kChunk / 8), u = piece % (kChunk / 8);
    const std::int64_t m = m0 + r;
    a_row_in[i] = m < t.m;
    a_src[i] = (a_row_in[i] ? project_row_offset(t, m) : 0) + 8 * u;
    a_dst[i] = (r * t.lda + 8 * u) * 2;
    a_unit[i] = u;
  }

  const auto issue = [&](int k) {
    const int s = k % kProjectStages, c0 = k * kChunk;
    const uint32_t a_base = shared_address(a_stage(s));
#pragma unroll
    for (int i = 0; i < kACopies; ++i) {
      const bool in = a_row_in[i] && c0 + 8 * a_unit[i] < t.d_live;
      cp_async_16(a_base + a_dst[i], in ? dbuf + a_src[i] + k * chunk_step : dbuf, in);
    }
    Element* b = b_stage(s);
#pragma unroll
    for (int i = 0; i < (kBPieces + kThreads - 1) / kThreads; ++i) {
      const int piece = tid + i * kThreads;
      if (kBPieces % kThreads != 0 && piece >= kBPieces) break;
      const int kk = piece / (kBN / 8), col = 8 * (piece % (kBN / 8));
      const bool in = c0 + kk < t.hidden && n0 + col < t.c_out;  // ldw ≥ C_out rounded up to 8: whole pieces
      cp_async_16(shared_address(b + kk * t.ldb + col), in ? wp + std::ptrdiff_t(c0 + kk) * t.ldw + n0 + col : wp, in);
    }
    Element* g = g_stage(s);
#pragma unroll 1
    for (int piece = tid; piece < t.span * (kChunk / 8); piece += kThreads) {
      const int slot = piece / (kChunk / 8), col = 8 * (piece % (kChunk / 8));
      const bool in = first_image + slot < t.images && c0 + col < t.d_live;
      cp_async_16(shared_address(g + slot * kChunk + col),
                  in ? gate16 + std::ptrdiff_t(first_image + slot) * t.d_live + c0 + col : gate16, in);
    }
  };

  // The warp's place: rows wm·16·kMT .. of the block, columns wn·32 ..; per m tile, the image
  // slots (in the staged gates) of this lane's rows lane/4 and lane/4 + 8.
  const int wm = warp / kWN, wn = warp % kWN;
  const int w_row = wm * 16 * kMT, w_col = wn * 32;
  int slot_lo[kMT], slot_hi[kMT];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    const std::int64_t r = m0 + w_row + mt * 16 + lane / 4;
    slot_lo[mt] = r < t.m ? project_gate_slot(t, m0, r) : 0;  // rows past M: zeros in A, any slot
    slot_hi[mt] = r + 8 < t.m ? project_gate_slot(t, m0, r + 8) : 0;
  }

  float acc[kMT][kNT][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.0f;

#pragma unroll
  for (int k = 0; k < kProjectStages - 1; ++k) {
    if (k < t.chunks) issue(k);
    cp_async_commit();
  }
  for (int k = 0; k < t.chunks; ++k) {
    cp_async_wait<kProjectStages - 2>();
    __syncthreads();  // chunk k's stage landed for every thread; every thread is done with chunk k − 1's stage
    if (k + kProjectStages - 1 < t.chunks) issue(k + kProjectStages - 1);
    cp_async_commit();
    const int s = k % kProjectStages;
    const Element* a_s = a_stage(s);
    const Element* b_s = b_stage(s);
    const uint32_t* g_s = reinterpret_cast<const uint32_t*>(g_stage(s));  // gate pairs [slot][16]
#pragma unroll
    for (int k0 = 0; k0 < kChunk; k0 += 16) {
      uint32_t a[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        ldmatrix_x4(a[mt], shared_address(&a_s[(w_row + mt * 16 + lane % 16) * t.lda + k0 + 8 * (lane / 16)]));
        // Register r holds row lane/4 (+8 for r odd), channels k0 + 2·(lane%4) (+8 for r ≥ 2).
        const int pair = (k0 + 2 * (lane % 4)) / 2;
        a[mt][0] = mul_pair<Element>(a[mt][0], g_s[slot_lo[mt] * (kChunk / 2) + pair]);
        a[mt][1] = mul_pair<Element>(a[mt][1], g_s[slot_hi[mt] * (kChunk / 2) + pair]);
        a[mt][2] = mul_pair<Element>(a[mt][2], g_s[slot_lo[mt] * (kChunk / 2) + pair + 4]);
        a[mt][3] = mul_pair<Element>(a[mt][3], g_s[slot_hi[mt] * (kChunk / 2) + pair + 4]);
      }
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {  // two n8 tiles: one ldmatrix .x4 .trans
        uint32_t bq[4];
        ldmatrix_x4_trans(bq, shared_address(&b_s[(k0 + lane % 16) * t.ldb + w_col + 16 * np + 8 * (lane / 16)]));
        const uint32_t b_lo[2] = {bq[0], bq[1]}, b_hi[2] = {bq[2], bq[3]};
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_m16n8k16<Element>(acc[mt][2 * np], a[mt], b_lo);
          mma_m16n8k16<Element>(acc[mt][2 * np + 1], a[mt], b_hi);
        }
      }
    }
  }

  // y = Y + bp (+ x).
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const MatrixCoord c = mma_c_coord(lane, 0);
    const int o = n0 + w_col + nt * 8 + c.col;
    if (o >= t.c_out) continue;
    const float bias_lo = to_float(bp[o]), bias_hi = o + 1 < t.c_out ? to_float(bp[o + 1]) : 0.0f;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const std::int64_t row = m0 + w_row + mt * 16 + c.row + 8 * half;
        if (row >= t.m) continue;
        const std::ptrdiff_t at_y = std::ptrdiff_t(row) * t.c_out + o;
        const std::ptrdiff_t at_x = std::ptrdiff_t(row) * t.c + o;  // residual: stride 1, C_out == C
        float lo = acc[mt][nt][2 * half] + bias_lo, hi = acc[mt][nt][2 * half + 1] + bias_hi;
        if (t.pairs) {  // C_out even: o + 1 < C_out, both addresses 4-byte aligned
          if (t.residual) {
            const float2 r = unpack_pair<Element>(*reinterpret_cast<const uint32_t*>(x + at_x));
            lo += r.x, hi += r.y;
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

// Bytes of workspace launch_project may use: Wp with rows of C_out rounded up to 8, for when
// the given Wp's rows are not whole 16-byte pieces.
inline std::size_t project_workspace_bytes(const MBConvProblem& p) {
  return std::size_t(p.hidden()) * ((p.C_out + 7) / 8 * 8) * 2;
}

// Pass 2 over the batch: Y = (D ⊙ G)·Wp + bp (+ x) -> a.y. gate16: se_gate's 16-bit gates,
// rows of dbuf_live(hidden). workspace: project_workspace_bytes(p), 16-byte aligned.
template <class Element>
void launch_project(const MBConvProblem& p, const Args<MBConvProblem>& a, const void* dbuf, const void* gate16,
                    void* workspace) {
  int device = 0, sms = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SMs)");
  ProjectTile t = choose_project_tile(p, sms);
  if (t.bm == 0) throw std::invalid_argument("mbconv: internal: no projection tile fits this shape");
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
  t.pairs = p.C_out % 2 == 0 && aligned_to(a.y, 4) && aligned_to(a.x, 4);
  const auto go = [&](auto kernel, const char* name) {
    allow_dynamic_shared(kernel, t.bytes, name);
    kernel<<<unsigned(std::int64_t(t.m_blocks) * t.n_blocks), kThreads, t.bytes>>>(
        t, static_cast<const Element*>(dbuf), static_cast<const Element*>(gate16), wp,
        static_cast<const Element*>(a.project_b), static_cast<const Element*>(a.x), static_cast<Element*>(a.y));
    check_launch(name);
  };
  if (t.bm == 256) go(mbconv_project_kernel<Element, 256, 32>, "mbconv_project_kernel<256,32>");
  else if (t.bm == 128 && t.bn == 32) go(mbconv_project_kernel<Element, 128, 32>, "mbconv_project_kernel<128,32>");
  else if (t.bm == 128) go(mbconv_project_kernel<Element, 128, 64>, "mbconv_project_kernel<128,64>");
  else if (t.bn == 64) go(mbconv_project_kernel<Element, 64, 64>, "mbconv_project_kernel<64,64>");
  else go(mbconv_project_kernel<Element, 64, 128>, "mbconv_project_kernel<64,128>");
}

}  // namespace convlab::gpu::mbconv
