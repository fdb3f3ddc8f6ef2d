// gpu/lib/mbconv_fused.cuh — the fused MBConv tile kernel of lesson 11, one
// template for every stage of the fused plans (11b two-pass recompute, 11c
// two-pass store, 11d single pass without SE; 11e is 11c with the depthwise on
// the tensor cores: depthwise_tensor_cores below). Header-only, registers
// nothing; each rung launches the stages of its plan. The tile geometry and
// its index maps (host code, tested on the host) are in gpu/lib/mbconv_tile.hpp.
//
// A CTA owns one tile: image n, output rows [p0, p0 + rows), all Q columns
// (rows·Q output pixels), and the input rows that tile's depthwise reads
// (its halo: (rows − 1)·stride + K rows, clipped to the image). Where a tile
// is a whole small image (rows == P), it holds t.images consecutive images
// n .. n + images − 1 instead (fewer in the batch's last group): NHWC keeps
// their pixels contiguous, so the x tile is images·H·W pixels, the expand's M
// and the project's M run over all of them, and the depthwise items are
// (image, row group, column run, channel pair), each window inside its own
// image. Per image stay: the zero padding of its rows, its channel sums
// (partial[n + i, 0, :]: the SE pool never mixes images), its block of dbuf,
// and its gate in the project. It walks the hidden channels in chunks of
// kChunk = 32:
//
//   plain loops (ref::mbconv_block)             one chunk c0..c0+31 here
//     e = φ(x·We + be)   whole image             E[in_pixels, 32] = φ(X_tile·We[:, c0:] + be)   mma.sync, smem
//     d = φ(dw(e) + bd)  whole image             D[pixels, 32]    = φ(dw(E) + bd)               FMA, registers (11e: mma)
//     sums, gate                                  (stage sums/store: per-tile channel sums of D)
//     y = (d ⊙ g)·Wp + bp + x                     Y[pixels, C_out] += (D ⊙ g)·Wp[c0:, :]         mma.sync, registers
//
// Stages (what the kernel does with D):
//   sums             pass 1 of 11b: D's channel sums for this tile, per image -> partial[n, tile, :]; nothing else stored
//   store            pass 1 of 11c: the sums and D itself -> dbuf (the problem's 16-bit type), from the
//                    registers: a half-warp stores one pixel's 32 channels, 64 contiguous bytes (dbuf is
//                    chunk-major, dbuf_offset: a tile's chunk is one contiguous block)
//   project          pass 2 of 11b, and 11d's single pass (gate == nullptr): D (⊙ g of the pixel's image)
//                    -> smem -> Y; y = Y + bp (+ x)
// (11c's pass 2, a GEMM over the stored D, is gpu/lib/mbconv_project.cuh.)
//
// The pipeline (stages that make D). Iteration k expands chunk k+1 and runs
// the depthwise of chunk k, with no barrier between the two: a warp done with
// its share of the expand (mma, then SFU-heavy SiLUs) goes on to the
// depthwise (FMA-heavy), so the SM mixes both kinds of work instead of
// running them one after the other. E and the weight slices are therefore
// double-buffered (chunk k in buffer k mod 2; be, bd and g triple), and every
// global read is a 16-byte cp.async issued two chunks ahead:
//
//   iteration k:  wait for my copies; barrier  (E[k], dwf[k], chunk k+1's slices, red[k−1] ready)
//                 issue chunk k+2's slices (and Wp of chunk k+1)
//                 sums: reduce red[k−1] -> partial
//                 expand chunk k+1 -> E[k+1];  dwf[k+1] from its raw slice
//                 depthwise chunk k from E[k] -> D (registers) -> store: dbuf; sums: red[k]; project: ds
//                 project only: barrier; Y += D·Wp[k]
//
// One barrier a chunk, two with the project (D must be whole before the mma
// reads it).
//
// The 1x1 layers are warp mma.sync m16n8k16 (f16/bf16 in, fp32 accumulate)
// with ldmatrix fragments: A (x tile, D) row-major [pixel][k], B (We, Wp
// chunks) in their global layout [k][n] through ldmatrix .trans. Every shared
// row is an odd number of 16-byte units long, so the eight rows an ldmatrix
// phase reads fall in eight different bank groups. The depthwise gives each
// thread one channel pair and a block of up to dw_group_max rows × kRun
// columns of output pixels: it loads each input row of the block's window
// once (kWindow pairs, converted to fp32) and applies it to every output row
// and tap that reads it, so a pixel costs K²·2 FMAs and about
// ((rows − 1)·stride + K)·kWindow / (rows·kRun) shared loads (2.1 at K = 3,
// stride 1, 3 rows, against 3.9 for one row), with immediate-offset
// addresses (E's row stride is the constant kLdChunk) and no integer
// division in the pixel loop. SiLU is computed on a pair of 16-bit
// values at once, v/2·(1 + tanh(v/2)) with the SFU's tanh.approx.f16x2 (sm_90
// runs it as one MUFU op per half; 16-bit precision: the result is stored in
// 16 bits anyway). The per-tile sums are reduced in a fixed order (no atomics): the
// result is deterministic.
//
// Limits (tile_fits()): the Y accumulators, ceil(images·rows·Q/16)·ceil(C_out/8)
// m16n8 tiles, are at most kWarps·kMaxAccTiles (which bounds images per tile in the project); the shared tiles fit the
// opt-in shared memory of the device (227 KB on H200). The 16-byte copies
// need C, C_out and hidden multiples of 8 and 16-byte aligned tensors
// (Tile::vec); other sizes take a plain-load path with the same layout.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_epilogue.cuh"
#include "gpu/lib/hopper/dependent_launch.cuh"
#include "gpu/lib/mbconv_layers.cuh"  // se_gate_image (the gate in pass 1's tail)
#include "gpu/lib/mbconv_tile.hpp"
#include "gpu/lib/mma.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

// The sizes every fused stage takes (each stage picks its own tile height).
inline bool fused_support(const MBConvProblem& p) {
  if (!((p.dtype == DType::f16 || p.dtype == DType::bf16) && p.hidden() <= 12000 && p.N <= kMaxGridYZ &&
        p.input_pixels() * p.C < 9.0e15))
    return false;
  for (Stage s : {Stage::sums, Stage::store, Stage::project})
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

// φ on a pair, packed: the two fp32 values rounded to the 16-bit type, then
// SiLU as h + h·tanh(h), h = v/2, in packed 16-bit arithmetic: about eight
// instructions and two MUFU ops for the pair (sm_90 issues tanh.approx.f16x2
// as one MUFU.TANH.F16 per half); the fp32 form v / (1 + 2^(−v·log2 e)) costs
// two MUFU ops and about seven instructions per value (lessons/11-mbconv/
// NOTES.md has the SASS counts). tanh.approx's relative error is about 2^−11,
// the 16-bit type's own rounding; in the far negative tail (v < −8) the result
// is a small number near 0 with an absolute error below 2^−10·|v|. ReLU is
// max(v, 0) on the pair, exact. silu_packed and relu_packed take the packed pair;
// activate_pair packs two fp32 values and applies φ, chosen at compile time (the
// launcher instantiates the kernel once per activation: one copy of each hot loop).
template <class Element> __device__ __forceinline__ uint32_t silu_packed(uint32_t v) {
  uint32_t h, t, out;
  if constexpr (std::is_same_v<Element, __half>) {
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(h) : "r"(v), "r"(0x38003800u));  // × 0.5 (exact)
    asm("tanh.approx.f16x2 %0, %1;" : "=r"(t) : "r"(h));
    asm("fma.rn.f16x2 %0, %1, %2, %1;" : "=r"(out) : "r"(h), "r"(t));
  } else {
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(h) : "r"(v), "r"(0x3f003f00u));
    asm("tanh.approx.bf16x2 %0, %1;" : "=r"(t) : "r"(h));
    asm("fma.rn.bf16x2 %0, %1, %2, %1;" : "=r"(out) : "r"(h), "r"(t));
  }
  return out;
}
template <class Element> __device__ __forceinline__ uint32_t relu_packed(uint32_t v) {
  uint32_t out;
  if constexpr (std::is_same_v<Element, __half>) asm("max.f16x2 %0, %1, %2;" : "=r"(out) : "r"(v), "r"(0u));
  else asm("max.bf16x2 %0, %1, %2;" : "=r"(out) : "r"(v), "r"(0u));
  return out;
}
template <class Element, bool kRelu> __device__ __forceinline__ uint32_t activate_pair(float lo, float hi) {
  const uint32_t v = pack_pair<Element>(lo, hi);
  if constexpr (kRelu) return relu_packed<Element>(v);
  else return silu_packed<Element>(v);
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

// ---- padded E (Tile::e_padded; the places: e_padded_place, e_pad_column in mbconv_tile.hpp) ----
// Zeros into the pad columns (the chunk's 32 channels) of `rows` padded rows of each of `buffers`
// E buffers at `e` (visible after the next barrier). Nothing else writes there.
__device__ __forceinline__ void zero_e_pad_columns(unsigned char* e, const Tile& t, int buffers, int rows) {
  constexpr int kPieces = kChunk * 2 / 16;  // 16-byte pieces of a pixel's chunk
  const int pads = t.ew - t.W, per_buffer = rows * pads * kPieces;
#pragma unroll 1
  for (int i = threadIdx.x; i < buffers * per_buffer; i += kThreads) {
    const int b = i / per_buffer, rest = i - b * per_buffer;
    const int row = rest / (pads * kPieces), col_piece = rest - row * (pads * kPieces);
    const int pc = col_piece / kPieces, piece = col_piece - pc * kPieces;
    const int col = e_pad_column(t, pc);
    *reinterpret_cast<uint4*>(e + b * t.e_bytes + (std::size_t(row) * t.ew + col) * kLdChunk * 2 + piece * 16) =
        make_uint4(0u, 0u, 0u, 0u);
  }
}

// Row-padded E (Tile::e_rows_padded): zeros into every place of each of `buffers` E buffers that the
// expand does not write (visible after the next barrier): e_zero_piece's pieces, the pad rows above and
// below the tile's `real_rows` input rows of each image and the pad columns of those rows.
__device__ __forceinline__ void zero_e_outside(unsigned char* e, const Tile& t, int buffers, int top, int real_rows) {
  const int per_buffer = e_zero_pieces(t, real_rows);
#pragma unroll 1
  for (int i = threadIdx.x; i < buffers * per_buffer; i += kThreads) {
    const int b = i / per_buffer;
    *reinterpret_cast<uint4*>(e + b * t.e_bytes + e_zero_piece(t, top, real_rows, i - b * per_buffer)) =
        make_uint4(0u, 0u, 0u, 0u);
  }
}

// The no-expand form's E chunk (e = 1: E is x's channels c0 ..) into a padded E buffer: tile pixel r
// of `pixels` to e_padded_place(r) (kRowPadded: e_row_padded_place(r, top)), channels ≥ valid_cols
// zero; vec as stage_tile's.
template <class Element, bool kRowPadded = false>
__device__ __forceinline__ void stage_e_padded(Element* e, const Element* src, std::ptrdiff_t ld_src, const Tile& t,
                                               int pixels, int valid_cols, bool vec, int top = 0) {
  const auto place = [&](int r) { return kRowPadded ? e_row_padded_place(t, r, top) : e_padded_place(t, r); };
  if (vec) {
    constexpr int kPer = kChunk / 8;
#pragma unroll 1
    for (int i = threadIdx.x; i < pixels * kPer; i += kThreads) {
      const int r = i / kPer, c = (i - r * kPer) * 8;
      const bool in = c < valid_cols;
      cp_async_16(shared_address(e + place(r) * kLdChunk + c), in ? src + r * ld_src + c : src, in);
    }
  } else {
#pragma unroll 1
    for (int i = threadIdx.x; i < pixels * kChunk; i += kThreads) {
      const int r = i / kChunk, c = i - r * kChunk;
      e[place(r) * kLdChunk + c] = c < valid_cols ? src[r * ld_src + c] : from_float<Element>(0.0f);
    }
  }
}

// ---- the depthwise on the tensor cores (the store stage of 11e) --------------------------------
// Per tap (r, s), a tile's D of one chunk gains E shifted by the tap times the tap's weights, one
// weight per channel: a product with a diagonal matrix. Per m tile of 16 output pixels:
//
//   D[16 px][32 ch] = bd + Σ_{r,s} E(r,s)[16 px][32 ch] · diag(w[0..31][r][s])
//                     four mma m16n8k8 per tap (8 channels each; 1 of each 8 products is useful),
//   E(r,s)[m] = E[input pixel of output pixel m at tap (r, s)], or 0 outside the image:
//                     ldmatrix gathers: each lane names the E row (or the zero row) of its pixel.
//
// The B operand of channels 8·nb .. 8·nb + 7 at a tap (dw_fragment_slot, dw_fragment_word):
// build_dw_fragments writes a chunk's as [tap][slot][nb] words, so a lane loads its four n8
// blocks' words of a tap with one 16-byte load.
template <int K> __device__ __forceinline__ void build_dw_fragments(uint32_t* f, const uint16_t* raw) {
  constexpr int kTaps = K * K;
  for (int i = threadIdx.x; i < kTaps * kDwTapWords; i += kThreads) {
    const int tap = i / kDwTapWords, slot = (i - tap * kDwTapWords) / kDwBlocks, nb = i % kDwBlocks;
    f[i] = dw_fragment_word(slot, slot < 8 ? raw[(8 * nb + slot) * kTaps + tap] : 0);
  }
}

__device__ __forceinline__ uint4 ld_shared_16(uint32_t address) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(address));
  return v;
}

// D = φ(dw(E) + bd) of one chunk for the tile's out_pixels output pixels (images whole images, or
// output rows p0.. of one), written to dbuf (d_chunk: the tile's block of the chunk), and its channel
// sums per image into red. Warp w takes m tiles 7 − w, 15 − w, ... (the first warps, which take the
// odd expand units, take fewer). The sums are an mma too: S[image][ch] += I[image][px] · D[px][ch],
// I the indicator of each pixel's image (0 past the tile's pixels), D's accumulator rows packed to 16
// bits and turned into the B operand by movmatrix; S stays in registers for the chunk, so the order of
// the additions is fixed (no atomics) and one store per lane leaves it in red[image][warp][ch].
// Needs images ≤ 16 (the rows of I).
template <class Element, int K, int kStride, bool kRelu>
__device__ __forceinline__ void depthwise_tensor_cores(const Tile& t, const Element* e_s, const uint32_t* frag,
                                                       uint32_t zero_row, const float* v, Element* d_chunk, float* red,
                                                       int images, int out_pixels, int p0, int h0, int c0) {
  constexpr uint32_t kRowBytes = kLdChunk * 2;
  constexpr uint32_t kOnes = std::is_same_v<Element, __half> ? 0x3C003C00u : 0x3F803F80u;  // 1.0 twice
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, tq = lane % 4;
  const uint32_t b_lane = shared_address(frag) + dw_fragment_slot(lane) * 4 * kDwBlocks;  // the slot's 16 bytes
  const uint32_t e_lane = shared_address(e_s) + (lane / 16) * 16;  // lanes 16-31: channels 8-15 (+32 B: 24-31)
  const uint32_t zero_lane = zero_row + (lane / 16) * 16;
  const uint32_t row_step = uint32_t(t.W) * kRowBytes;  // one input row down
  uint32_t nb_live = 0;  // bit nb: channels 8·nb + 2·tq, +1 are stored (below dbuf_live)
#pragma unroll
  for (int nb = 0; nb < 4; ++nb) nb_live |= c0 + 8 * nb + 2 * tq < t.d_live ? 1u << nb : 0u;
  float sums[4][4] = {};
  const int m_tiles = (out_pixels + 15) / 16;
  for (int mt = kWarps - 1 - warp; mt < m_tiles; mt += kWarps) {
    const int m0 = 16 * mt;
    // This lane's row of A: output pixel m0 + lane % 16; its input pixel at tap (0, 0), and the taps
    // (bit r·K + c) that fall inside the image (none past the tile's pixels).
    const int pl = m0 + lane % 16;
    const TilePixel at_pl = split_tile_pixel(t, pl);
    const int oh = fast_quotient(t.q_div, at_pl.pix), ow = at_pl.pix - oh * t.Q;
    const int ih = (p0 + oh) * kStride - t.pad, iw = ow * kStride - t.pad;
    uint32_t taps_in = 0;
    if (pl < out_pixels) {
      uint32_t cols_in = 0;
#pragma unroll
      for (int c = 0; c < K; ++c) cols_in |= unsigned(iw + c) < unsigned(t.W) ? 1u << c : 0u;
#pragma unroll
      for (int r = 0; r < K; ++r) taps_in |= unsigned(ih + r) < unsigned(t.H) ? cols_in << (r * K) : 0u;
    }
    uint32_t row_at = e_lane + uint32_t(gather_row(t, at_pl.image, oh, ow, p0, h0) * int(kRowBytes));
    float acc[4][4];  // bd (read per m tile: fewer registers live across the loop)
#pragma unroll
    for (int nb = 0; nb < 4; ++nb) {
      const float2 bias = *reinterpret_cast<const float2*>(&v[kChunk + 8 * nb + 2 * tq]);
      acc[nb][0] = acc[nb][2] = bias.x, acc[nb][1] = acc[nb][3] = bias.y;
    }
    uint32_t b_at = b_lane;
#pragma unroll(K == 3 ? 3 : 1)  // K = 5 unrolled would not fit the 128 registers
    for (int r = 0; r < K; ++r, row_at += row_step, taps_in >>= K, b_at += K * kDwTapBytes) {
#pragma unroll
      for (int c = 0; c < K; ++c) {
        const uint32_t at = taps_in & (1u << c) ? row_at + c * kRowBytes : zero_lane;
        uint32_t lo[4], hi[4];  // matrices (pixels 0-7, 8-15) × (channels 0-7, 8-15) of channels 0-15 and 16-31
        ldmatrix_x4(lo, at);
        ldmatrix_x4(hi, at + 32);
        const uint4 b = ld_shared_16(b_at + c * kDwTapBytes);
        mma_m16n8k8<Element>(acc[0], lo[0], lo[1], b.x);
        mma_m16n8k8<Element>(acc[1], lo[2], lo[3], b.y);
        mma_m16n8k8<Element>(acc[2], hi[0], hi[1], b.z);
        mma_m16n8k8<Element>(acc[3], hi[2], hi[3], b.w);
      }
    }
    // φ, and D to dbuf: this lane's rows g and g + 8, channels 8·nb + 2·tq, +1.
    uint32_t dv[4][2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int pl_h = m0 + g + 8 * h;
      const TilePixel at_h = split_tile_pixel(t, pl_h);
      Element* out = d_chunk + (at_h.image * t.image_dbuf + at_h.pix * kChunk + 2 * tq);
      const uint32_t live = pl_h < out_pixels ? nb_live : 0u;
#pragma unroll
      for (int nb = 0; nb < 4; ++nb) {
        dv[nb][h] = activate_pair<Element, kRelu>(acc[nb][2 * h], acc[nb][2 * h + 1]);
        if (live & (1u << nb)) *reinterpret_cast<uint32_t*>(out + 8 * nb) = dv[nb][h];
      }
    }
    // The sums: I's fragment (rows g, g + 8; pixels 2tq, 2tq + 1, and + 8), one image for the whole
    // m tile in the common case.
    uint32_t ind[4];
    const int first = split_tile_pixel(t, m0).image, last = split_tile_pixel(t, min(m0 + 15, out_pixels - 1)).image;
    if (m0 + 15 < out_pixels && first == last) {
      ind[0] = ind[2] = g == first ? kOnes : 0u;
      ind[1] = ind[3] = g + 8 == first ? kOnes : 0u;
    } else {
      const auto image_of = [&](int k) { return m0 + k < out_pixels ? split_tile_pixel(t, m0 + k).image : -1; };
      const int i0 = image_of(2 * tq), i1 = image_of(2 * tq + 1), i8 = image_of(2 * tq + 8), i9 = image_of(2 * tq + 9);
      const auto row = [&](int lo_image, int hi_image, int image) {
        return (lo_image == image ? kOnes & 0xFFFFu : 0u) | (hi_image == image ? kOnes & 0xFFFF0000u : 0u);
      };
      ind[0] = row(i0, i1, g), ind[1] = row(i0, i1, g + 8), ind[2] = row(i8, i9, g), ind[3] = row(i8, i9, g + 8);
    }
#pragma unroll
    for (int nb = 0; nb < 4; ++nb) {
      const uint32_t bt[2] = {movmatrix_trans(dv[nb][0]), movmatrix_trans(dv[nb][1])};  // B[px][ch]
      mma_m16n8k16<Element>(sums[nb], ind, bt);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int image = g + 8 * h;
    if (image < images)
#pragma unroll
      for (int nb = 0; nb < 4; ++nb)
        *reinterpret_cast<float2*>(&red[(image * kPixelGroups + warp) * kChunk + 8 * nb + 2 * tq]) =
            make_float2(sums[nb][2 * h], sums[nb][2 * h + 1]);
  }
}

// ---- the kernel ---------------------------------------------------------------------------
//   x [N, H, W, C], we [C, hidden], be [hidden], dw [hidden, K, K], bd [hidden],
//   gate [N, hidden] fp32 (project; nullptr = no SE), wp [hidden, C_out], bp [C_out],
//   y [N, P, Q, C_out], partial [N, tiles, hidden] fp32 (sums/store), dbuf (store: dbuf_offset).
// Grid (tiles·splits, groups = ⌈N / images⌉), kThreads threads, t.bytes of dynamic shared memory (layout: tile_for).
// The register budget is cut for 2 CTAs per SM (16 warps): the depthwise run and the Y
// accumulators share the registers.

// The kernel's body, a function so that lesson 11's 11k (gpu/lib/mbconv_block_cluster.cuh) can
// run the store stage and go on in the same kernel.
// kRows > 0 (with kPadE): E padded with zero rows too (Tile::e_rows_padded), and every depthwise item
// makes exactly kRows = t.dw_rows output rows (one instantiation per count), reading its window rows
// without a test (the rows past an image's last group are zero rows; only the finish tests them).
// kPartMajor: the split tiles' CTAs in part-major order (split_place, mbconv_tile.hpp).
template <class Element, Stage kStage, int K, int kStride, bool kRelu, bool kTensorDw, bool kPadE = false, int kRows = 0,
          bool kPartMajor = false>
__device__ __forceinline__ void tile_body(
    Tile t, const Element* __restrict__ x, const Element* __restrict__ we, const Element* __restrict__ be,
    const Element* __restrict__ dw, const Element* __restrict__ bd, const float* __restrict__ gate,
    const Element* __restrict__ wp, const Element* __restrict__ bp, Element* __restrict__ y, float* __restrict__ partial,
    Element* __restrict__ dbuf) {
  static_assert(!kTensorDw || kStage == Stage::store, "the tensor-core depthwise writes dbuf: the store stage");
  static_assert(!(kTensorDw && kPadE), "the tensor-core depthwise gathers from unpadded E rows");
  static_assert(kRows == 0 || (kPadE && kRows <= dw_group_max(K, kStride, kStage == Stage::project)),
                "row padding extends the column-padded layout, up to the rows an item may make");
  constexpr bool kProject = kStage == Stage::project;
  constexpr bool kSums = kStage == Stage::sums || kStage == Stage::store;
  constexpr int kTaps = K * K;
  constexpr int kWindow = (kRun - 1) * kStride + K;  // input columns a run of kRun outputs reads per kernel row
  constexpr int kG = kRows > 0 ? kRows : dw_group_max(K, kStride, kProject);  // output rows a depthwise item makes at most
  constexpr int kInRows = (kG - 1) * kStride + K;         // input rows such an item reads
  extern __shared__ __align__(16) unsigned char shared[];
  // Buffer b of each region (the layout: tile_for).
  Element* xs = reinterpret_cast<Element*>(shared + t.x_off);                                             // [m_in][ldx]
  const auto es = [&](int b) { return reinterpret_cast<Element*>(shared + t.e_off + b * t.e_bytes); };      // [m_in][lde]
  const auto ds = [&](int b) { return reinterpret_cast<Element*>(shared + t.d_off + b * t.d_bytes); };      // [m_out][ldd]
  const auto wes = [&](int b) { return reinterpret_cast<Element*>(shared + t.we_off + b * t.we_bytes); };   // [c_pad][ldwe]
  const auto wps = [&](int b) { return reinterpret_cast<Element*>(shared + t.wp_off + b * t.wp_bytes); };   // [32][ldwp]
  const auto dws = [&](int b) { return reinterpret_cast<Element*>(shared + t.dw_off + b * t.dw_bytes); };   // [32][K²]
  const auto dwfs = [&](int b) { return reinterpret_cast<float*>(shared + t.dwf_off + b * t.dwf_bytes); };  // [K²][32]
  const auto vs = [&](int b) { return reinterpret_cast<float*>(shared + t.v_off + b * t.v_bytes); };        // be, bd, g
  const auto reds = [&](int b) { return reinterpret_cast<float*>(shared + t.red_off + b * t.red_bytes); };  // [16][32]

  // The store plan launches the SE gate as this grid's dependent: it may be scheduled into the
  // room this grid's last wave leaves (it waits for the sums itself; gpu/lib/hopper/dependent_launch.cuh).
  if constexpr (kStage == Stage::store) hopper::allow_dependent_launch();
  int tile = blockIdx.x / t.splits, part = blockIdx.x % t.splits, group = blockIdx.y;
  if constexpr (kPartMajor) {
    const SplitPlace at = split_place(t, int(blockIdx.x), int(blockIdx.y), int(gridDim.y), true);
    tile = at.tile, part = at.part, group = at.group;
  }
  const int n = group * t.images, images = min(t.images, t.N - n);  // images n .. n + images − 1 (the last group: fewer)
  // A CTA's share of its tile (t.splits CTAs per tile, neighbours in blockIdx.x so they meet in L2):
  // sums/store make hidden chunks part, part + splits, ...; project makes everything.
  const int c_first = kSums ? part * kChunk : 0, c_step = kSums ? t.splits * kChunk : kChunk;
  const int chunks = c_first < t.hidden ? (t.hidden - c_first + c_step - 1) / c_step : 0;  // chunk k: c_first + k·c_step
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int p0 = tile * t.rows, p1 = min(t.P, p0 + t.rows), image_out = (p1 - p0) * t.Q;
  const int h0 = max(0, p0 * kStride - t.pad), h1 = min(t.H, (p1 - 1) * kStride - t.pad + K);
  const int image_in = (h1 - h0) * t.W;  // one image's input pixels in the tile (several images: h0 = 0, h1 = H)
  const int e_top = kRows > 0 ? h0 - (p0 * kStride - t.pad) : 0;  // row-padded E: zero rows above input row h0
  const int out_pixels = images * image_out, in_pixels = images * image_in;
  const Element* x_tile = x + (std::ptrdiff_t(n) * t.H + h0) * t.W * t.C;  // in_pixels consecutive pixels
  const std::ptrdiff_t first_out = (std::ptrdiff_t(n) * t.P + p0) * t.Q;     // this tile's first output pixel
  const auto chunk_start = [&](int k) { return c_first + k * c_step; };
  const auto chunk_width = [&](int k) { return min(kChunk, t.hidden - chunk_start(k)); };

  // be, bd and the gate of the chunk at c0 into v (fp32, plain loads: visible after the next barrier).
  const auto load_vectors = [&](float* v, int c0, int cw) {
    if (tid < kChunk) {
      const bool live = tid < cw;
      v[tid] = live && t.expand ? to_float(be[c0 + tid]) : 0.0f;
      v[kChunk + tid] = live ? to_float(bd[c0 + tid]) : 0.0f;
      v[2 * kChunk + tid] = live && gate ? gate[std::ptrdiff_t(n) * t.hidden + c0 + tid] : 1.0f;
    }
    if (kStage == Stage::project)  // the gates of the tile's other images, image i at v[(2 + i)·kChunk]
      for (int i = kChunk + tid; i < images * kChunk; i += kThreads) {
        const int image = i / kChunk, j = i - image * kChunk;
        v[2 * kChunk + i] = j < cw && gate ? gate[std::ptrdiff_t(n + image) * t.hidden + c0 + j] : 1.0f;
      }
  };
  // Chunk k's Wp rows into wps(b).
  const auto issue_wp = [&](int k, int b) {
    const int c0 = chunk_start(k), cw = chunk_width(k);
    stage_tile(wps(b), t.ldwp, wp + std::ptrdiff_t(c0) * t.C_out, t.C_out, kChunk, t.cout_pad, cw, t.C_out, t.vec);
  };

  // Y accumulators: warp w owns m16n8 tiles w, w + 8, ... of the [m_out, cout_pad] output.
  const int n_tiles = t.cout_pad / 8, acc_count = (t.m_out / 16) * n_tiles;
  float acc[kMaxAccTiles][4];
#pragma unroll
  for (int i = 0; i < kMaxAccTiles; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

  // Y += (D ⊙ g)·Wp chunk: A from D [pixel][j], B from the Wp chunk [j][o] (.trans).
  const auto project_chunk = [&](const Element* d_s, const Element* w_s) {
#pragma unroll
    for (int i = 0; i < kMaxAccTiles; ++i) {
      const int at = warp + kWarps * i;
      if (at >= acc_count) break;
      const int mt = at / n_tiles, nt = at - mt * n_tiles;
#pragma unroll
      for (int k0 = 0; k0 < kChunk; k0 += 16) {
        uint32_t a[4], bb[2];
        ldmatrix_x4(a, shared_address(&d_s[(mt * 16 + lane % 16) * kLdChunk + k0 + 8 * (lane / 16)]));
        ldmatrix_x2_trans(bb, shared_address(&w_s[(k0 + lane % 16) * t.ldwp + nt * 8]));
        mma_m16n8k16<Element>(acc[i], a, bb);
      }
    }
  };

  {
    // Chunk k's slices for making D: We (or E itself, with no expand layer) and the raw depthwise
    // weights into buffer k % 2 (E without expand: k % 3, which is k % e_buffers: fewer than three
    // E buffers only where the block has no more chunks than buffers), be, bd, g into vs(k % 3).
    const auto issue_slices = [&](int k) {
      const int c0 = chunk_start(k), cw = chunk_width(k);
      if (t.expand) stage_tile(wes(k % 2), t.ldwe, we + c0, t.hidden, t.c_pad, kChunk, t.C, cw, t.vec);
      else if constexpr (kPadE) stage_e_padded<Element, (kRows > 0)>(es(k % 3), x_tile + c0, t.C, t, in_pixels, cw, t.vec, e_top);
      else stage_tile(es(k % 3), t.lde, x_tile + c0, t.C, t.m_in, kChunk, in_pixels, cw, t.vec);
      stage_tile(dws(k % 2), 0, dw + std::ptrdiff_t(c0) * kTaps, 0, 1, kChunk * kTaps, 1, cw * kTaps, t.vec);
      load_vectors(vs(k % 3), c0, cw);
    };
    // The tile's channel sums of chunk k, per image: the 16 pixel groups' partials added in group order.
    const auto reduce_sums = [&](int k) {
      float* r = reds(k % 2);
      const int cw = chunk_width(k);
      for (int i = tid; i < images * kChunk; i += kThreads) {
        const int image = i / kChunk, j = i - image * kChunk;
        if (j >= cw) continue;
        float s = 0.0f;
        for (int g = 0; g < kPixelGroups; ++g) {
          float& slot = r[(image * kPixelGroups + g) * kChunk + j];
          s += slot;
          slot = 0.0f;  // ready for chunk k + 2's sums
        }
        partial[(std::ptrdiff_t(n + image) * t.tiles + tile) * t.hidden + chunk_start(k) + j] = s;
      }
    };

    // Prologue: the x tile (once; zero beyond the tile's pixels and beyond C) and chunk 0's slices.
    if (t.expand) stage_tile(xs, t.ldx, x_tile, t.C, t.m_in, t.c_pad, in_pixels, t.C, t.vec);
    if (chunks > 0) issue_slices(0);
    cp_async_commit();
    if constexpr (kSums)  // the sums of chunks 0 and 1 start from zeros (reduce_sums zeroes what it reads)
      for (int b = 0; b < 2; ++b)
        for (int i = tid; i < t.images * kPixelGroups * kChunk; i += kThreads) reds(b)[i] = 0.0f;
    if constexpr (kRows > 0)  // E's pad rows and columns: zero for the whole kernel
      zero_e_outside(shared + t.e_off, t, t.e_buffers, e_top, h1 - h0);
    else if constexpr (kPadE)  // E's pad columns: zero for the whole kernel (the expand writes only the image's columns)
      zero_e_pad_columns(shared + t.e_off, t, t.e_buffers, images * (image_in / t.W));
    if constexpr (kTensorDw)  // the zero row the depthwise's gathers read outside the image
      if (tid < int(kZeroRowBytes / 4)) reinterpret_cast<uint32_t*>(dwfs(0) + dw_fragment_bytes(K) / 4)[tid] = 0u;
    if constexpr (kStage == Stage::project)  // D's rows past the tile's pixels: never written below, read by the mma
      for (int i = out_pixels * t.ldd + tid; i < t.m_out * t.ldd; i += kThreads) ds(0)[i] = from_float<Element>(0.0f);

    // Depthwise work items: (run, pair), pair = rtid % 16 fixed (kThreads is a multiple of 16). The
    // items go in reverse thread order (rtid), so the warps with one expand unit more (the first,
    // u = warp, warp + 8, ...) are the ones with one depthwise item fewer.
    const int rtid = kThreads - 1 - tid;
    const int pair = rtid % kPairs, j0 = 2 * pair;
    const int valid_rows = p1 - p0, groups = (valid_rows + t.dw_rows - 1) / t.dw_rows;
    const DwRunWalk first_walk(rtid / kPairs, t.dw);  // every chunk walks the same items
    const int end_group = images > 1 ? images * t.dw.groups : groups;
    const bool gated = kStage == Stage::project && gate != nullptr;

    for (int k = -1; k < chunks; ++k) {
      cp_async_wait<0>();
      __syncthreads();  // my copies of chunk k+1 landed and everyone's are visible; iteration k−1 is done everywhere
      if (k + 2 < chunks) issue_slices(k + 2);
      if constexpr (kProject)
        if (k + 1 < chunks) issue_wp(k + 1, (k + 1) % 2);
      cp_async_commit();
      if constexpr (kSums)
        if (k >= 1) reduce_sums(k - 1);

      if (k + 1 < chunks) {
        const int kn = k + 1, cw = chunk_width(kn);
        if constexpr (kTensorDw) {  // chunk k+1's taps as the mma's B fragments
          build_dw_fragments<K>(reinterpret_cast<uint32_t*>(dwfs(kn % 2)), reinterpret_cast<const uint16_t*>(dws(kn % 2)));
        } else {  // chunk k+1's depthwise weights [j][tap] -> fp32 [tap][j]
          const Element* raw = dws(kn % 2);
          float* f = dwfs(kn % 2);
          for (int i = tid; i < kChunk * kTaps; i += kThreads) {
            const int j = i / kTaps, tap = i - j * kTaps;
            f[tap * kChunk + j] = to_float(raw[i]);
          }
        }
        if (t.expand) {
          // E[k+1] = φ(X·We[:, chunk] + be): A from the x tile, B from the We chunk [c][j] (.trans).
          // Work unit (m tile, channel half of 16: two n8 tiles); warp w takes m tiles w/2, w/2 + 4, ...
          // of channel half w % 2, so that a small tile (3 m tiles at 7 × 7) still keeps 6 warps busy,
          // two at a time where it has two (two independent mma chains per k step, one B load for both).
          // Only the m tiles that hold this tile's input pixels (a clipped halo or a short last tile
          // has fewer). Per warp and chunk, uniform: the half, its liveness, its biases, φ.
          const int jh = 16 * (warp % 2), m_tiles = (in_pixels + 15) / 16;
          const MatrixCoord c = mma_c_coord(lane, 0);  // this lane's rows c.row, c.row + 8; columns c.col, c.col + 1
          Element* e_lane = es(kn % 2) + c.row * kLdChunk + jh + c.col;
          // Padded E (kPadE): this lane's place for tile pixel m (row c.row or c.row + 8 of an m tile)
          // is its place in its padded row; the buffer has no rows for the m tiles' tail (m ≥ in_pixels).
          const auto e_padded_at = [&](int m) {
            const int place = kRows > 0 ? e_row_padded_place(t, m, e_top) : e_padded_place(t, m);
            return es(kn % 2) + jh + c.col + place * kLdChunk;
          };
          if (jh >= cw) {  // a last chunk of 16 channels: its upper half is zeros (no mma, no SFU)
            for (int mt = warp / 2; mt < m_tiles; mt += kWarps / 2) {
              if constexpr (kPadE) {
#pragma unroll
                for (int half = 0; half < 2; ++half)
                  if (const int m = mt * 16 + 8 * half + c.row; m < in_pixels) {
                    Element* at = e_padded_at(m);
                    *reinterpret_cast<uint32_t*>(at) = 0u, *reinterpret_cast<uint32_t*>(at + 8) = 0u;
                  }
              } else {
#pragma unroll
                for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                  for (int half = 0; half < 2; ++half)
                    *reinterpret_cast<uint32_t*>(e_lane + (mt * 16 + 8 * half) * kLdChunk + nt * 8) = 0u;
              }
            }
          } else {
            const float* v = vs(kn % 3);
            // A pass makes kTiles m tiles (mt, and mt + kWarps/2 for two) of the warp's channel half: per
            // k16 step one B fragment pair (ldmatrix .trans) serves every tile, each tile has its own A
            // fragments and accumulator pair, so a step issues 2·kTiles independent mma chains. The k loop
            // walks the A and B row addresses (a_k, b_k: at channel k0) by 32 channels, two k16 steps, an
            // iteration; be is read after it (fewer registers live in the loop: 128 at most, no spills).
            const auto pass = [&](int mt, auto tiles_tag) {
              constexpr int kTiles = decltype(tiles_tag)::value;
              constexpr int kTileStep = kWarps / 2;  // the warp's next m tile
              const uint32_t a_next = kTileStep * 16 * t.ldx * 2;  // bytes from tile i to tile i + 1
              uint32_t a_k = shared_address(&xs[(mt * 16 + lane % 16) * t.ldx + 8 * (lane / 16)]);  // tile 0's A
              uint32_t b_k = shared_address(&wes(kn % 2)[(lane % 16) * kLdChunk + jh + 8 * (lane / 16)]);
              float acc[kTiles][2][4] = {};
              const auto step = [&](int dk) {  // the k16 step at k0 + dk: channels jh..jh+7 and jh+8..jh+15
                uint32_t a[kTiles][4], bq[4];
                ldmatrix_x4_trans(bq, b_k + dk * kLdChunk * 2);
#pragma unroll
                for (int i = 0; i < kTiles; ++i) ldmatrix_x4(a[i], a_k + i * a_next + dk * 2);
                const uint32_t b_lo[2] = {bq[0], bq[1]}, b_hi[2] = {bq[2], bq[3]};
#pragma unroll
                for (int i = 0; i < kTiles; ++i) {
                  mma_m16n8k16<Element>(acc[i][0], a[i], b_lo);
                  mma_m16n8k16<Element>(acc[i][1], a[i], b_hi);
                }
              };
              const uint32_t b_end = b_k + (t.c_pad / 32) * 32 * kLdChunk * 2;  // B after the last pair of steps
#pragma unroll 1
              for (; b_k != b_end; a_k += 32 * 2, b_k += 32 * kLdChunk * 2) step(0), step(16);
              if (t.c_pad % 32 != 0) step(0);
              const float2 bias[2] = {*reinterpret_cast<const float2*>(&v[jh + c.col]),
                                      *reinterpret_cast<const float2*>(&v[jh + 8 + c.col])};
              if constexpr (kPadE) {  // one place per row, both n8 tiles at it
#pragma unroll
                for (int i = 0; i < kTiles; ++i)
#pragma unroll
                  for (int half = 0; half < 2; ++half)  // c0, c1: row c.row; c2, c3: row c.row + 8
                    if (const int m = (mt + i * kTileStep) * 16 + 8 * half + c.row; m < in_pixels) {
                      Element* at = e_padded_at(m);
#pragma unroll
                      for (int nt = 0; nt < 2; ++nt)
                        *reinterpret_cast<uint32_t*>(at + nt * 8) = activate_pair<Element, kRelu>(
                            acc[i][nt][2 * half] + bias[nt].x, acc[i][nt][2 * half + 1] + bias[nt].y);
                    }
              } else {
#pragma unroll
                for (int i = 0; i < kTiles; ++i)
#pragma unroll
                  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
                    for (int half = 0; half < 2; ++half)  // c0, c1: row c.row; c2, c3: row c.row + 8
                      *reinterpret_cast<uint32_t*>(e_lane + ((mt + i * kTileStep) * 16 + 8 * half) * kLdChunk + nt * 8) =
                          activate_pair<Element, kRelu>(acc[i][nt][2 * half] + bias[nt].x,
                                                        acc[i][nt][2 * half + 1] + bias[nt].y);
              }
            };
            // The warp's m tiles w/2, w/2 + 4, ... in passes of two (mt, mt + 4), then the odd last one alone.
            int mt = warp / 2;
            for (; mt + kWarps / 2 < m_tiles; mt += kWarps) pass(mt, std::integral_constant<int, 2>{});
            if (mt < m_tiles) pass(mt, std::integral_constant<int, 1>{});
          }
        }
      }

      if (k >= 0) {
        // D = φ(dw(E) + bd) (⊙ g) of chunk k: on the tensor cores (depthwise_tensor_cores), or on the FMA
        // pipes as follows. Item (image, group, run, pair): output rows og .. og + g_rows − 1
        // of the tile's image `image`, columns q0..q0+kRun−1, channels j0, j0+1; that image's E rows are
        // e_s[image·image_in ...], its D pixels follow the earlier images' (image·image_out).
        //   plain loop:  for o in rows: for q in run: for r, s: d[o][q] += w[r][s] · e[o·stride + r − pad][q·stride + s − pad]
        //   here:        for each input row i the group reads: win[u] = e[row i][q0·stride − pad + u], u < kWindow
        //                (0 outside the image), loaded once; for each output row g that row i feeds
        //                (r = i − g·stride in 0..K−1): for s: for q: d[g][q] += w[r][s] · win[q·stride + s]
        const int c0 = chunk_start(k);
        if constexpr (kTensorDw) {
          depthwise_tensor_cores<Element, K, kStride, kRelu>(
              t, es(k % t.e_buffers), reinterpret_cast<const uint32_t*>(dwfs(k % 2)),
              shared_address(dwfs(0)) + uint32_t(dw_fragment_bytes(K)), vs(k % 3),
              dbuf + dbuf_offset(t, n, c0 / kChunk, std::ptrdiff_t(p0) * t.Q), reds(k % 2), images, out_pixels, p0, h0, c0);
        } else {
          const float* v = vs(k % 3);
          const float* wf = dwfs(k % 2);
          const Element* e_s = es(k % t.e_buffers);
          const bool live_pair = c0 + j0 < t.d_live;  // store: pairs past dbuf_live are not written
          Element* d_chunk = kStage == Stage::store ? dbuf + dbuf_offset(t, n, c0 / kChunk, std::ptrdiff_t(p0) * t.Q) + j0
                                                    : nullptr;  // this tile's block of chunk k, channel pair j0 (image n)
          // The pair's taps: in registers for the chunk at K = 3 without Y accumulators, else read from
          // shared memory per use (also for sums at stride 2, whose 15-column window and taps together
          // leave ptxas no room under 128 registers).
          constexpr bool kTapsInRegisters = K == 3 && !kProject && !(kStage == Stage::sums && kStride == 2);
          float2 wk[kTapsInRegisters ? kTaps : 1];
          if constexpr (kTapsInRegisters)
#pragma unroll
            for (int tap = 0; tap < kTaps; ++tap) wk[tap] = *reinterpret_cast<const float2*>(&wf[tap * kChunk + j0]);
          const auto weight = [&](int r, int s) {
            if constexpr (kTapsInRegisters) return wk[r * K + s];
            else return *reinterpret_cast<const float2*>(&wf[(r * K + s) * kChunk + j0]);
          };
          // The sums: red[image][rtid / kPairs][j0, j0 + 1] belongs to this thread alone (one thread per
          // slot and pair), so each item adds its pixels' sums to its image's slot, without atomics and in
          // item order, onto the zeros reduce_sums left there (0 where no item of the thread fell).
          {
            DwRunWalk walk = first_walk;
            // Runs in increasing order, row groups counted across images (image·G + row): the last is before
            // images·G with several images (every such tile has all G row groups), before `groups` with one
            // (an image's last tile may have fewer).
            for (; walk.image * t.dw.groups + walk.row < end_group; walk.next(t.dw)) {
              const DwRun run = walk.run(t.dw);
              const int rows_per_item = kRows > 0 ? kRows : t.dw_rows;
              const int og = run.row * rows_per_item, g_rows = min(rows_per_item, valid_rows - og);
              const int w0 = run.q0 * kStride - t.pad;               // the window's first input column
              // No column of the window outside the image (padded E: every window, its pad columns zero).
              const bool interior = kPadE || (w0 >= 0 && w0 + kWindow <= t.W);
              const int h_first = (p0 + og) * kStride - t.pad, in_rows = (g_rows - 1) * kStride + K;
              float s0 = 0.0f, s1 = 0.0f;  // sums: this item's
              const float2 bias = *reinterpret_cast<const float2*>(&v[kChunk + j0]);  // bd (read per item: fewer live registers)
              float d[kG][kRun][2];
#pragma unroll
              for (int g = 0; g < kG; ++g)
#pragma unroll
                for (int q = 0; q < kRun; ++q) d[g][q][0] = bias.x, d[g][q][1] = bias.y;
#pragma unroll
              for (int i = 0; i < kInRows; ++i) {
                const int h = h_first + i;
                // zero padding of e (h0 <= h < h1 inside the image); row-padded E holds it as zero rows
                if (kRows == 0 && (i >= in_rows || h < 0 || h >= t.H)) continue;
                const Element* e_row =
                    kRows > 0 ? e_s + (run.image * t.e_image + (og * kStride + i) * t.ew + t.e_left) * kLdChunk + j0
                    : kPadE   ? e_s + (run.image * t.e_image + (h - h0) * t.ew + t.e_left) * kLdChunk + j0
                              : e_s + (run.image * t.image_in + (h - h0) * t.W) * kLdChunk + j0;
                float2 win[kWindow];
                if (interior) {  // most runs (dw_run pairs the two edge runs of a row in one warp)
                  const Element* e_w = e_row + w0 * kLdChunk;
#pragma unroll
                  for (int u = 0; u < kWindow; ++u) win[u] = load_pair(e_w + u * kLdChunk);
                } else {
#pragma unroll
                  for (int u = 0; u < kWindow; ++u) {
                    const int w = w0 + u;
                    win[u] = (w >= 0 && w < t.W) ? load_pair(e_row + w * kLdChunk) : make_float2(0.0f, 0.0f);
                  }
                }
#pragma unroll
                for (int g = 0; g < kG; ++g) {
                  const int r = i - g * kStride;  // known at compile time once unrolled
                  if (r < 0 || r >= K || (kRows == 0 && g >= g_rows)) continue;  // (row-padded: all kRows rows)
#pragma unroll
                  for (int s = 0; s < K; ++s) {
                    const float2 wt = weight(r, s);
#pragma unroll
                    for (int q = 0; q < kRun; ++q) {
                      d[g][q][0] = fmaf(wt.x, win[q * kStride + s].x, d[g][q][0]);
                      d[g][q][1] = fmaf(wt.y, win[q * kStride + s].y, d[g][q][1]);
                    }
                  }
                }
              }
              // φ, the sums and D's destination, row by row for the run's pixels q < valid (one address
              // per row, then a constant step per pixel; a full run takes the path without per-pixel tests).
              const int valid = min(kRun, t.Q - run.q0);
              float g0 = 1.0f, g1 = 1.0f;  // project: the gate of the item's image
              if constexpr (kStage == Stage::project)
                g0 = v[(2 + run.image) * kChunk + j0], g1 = v[(2 + run.image) * kChunk + j0 + 1];
#pragma unroll
              for (int g = 0; g < kG; ++g) {
                if (g >= g_rows) break;
                const int pix0 = (og + g) * t.Q + run.q0;  // within the image
                Element* out = kStage == Stage::store
                                   ? d_chunk + (run.image * t.image_dbuf + pix0 * kChunk)
                                   : ds(0) + (run.image * t.image_out + pix0) * kLdChunk + j0;
                const auto finish = [&](int q) {
                  const uint32_t a = activate_pair<Element, kRelu>(d[g][q][0], d[g][q][1]);  // channels j0, j0+1
                  if constexpr (kSums) {
                    const float2 f = unpack_pair<Element>(a);
                    s0 += f.x, s1 += f.y;
                  }
                  if constexpr (kStage == Stage::store)  // straight to dbuf: a half-warp writes one pixel's 64 bytes
                    if (live_pair) *reinterpret_cast<uint32_t*>(out + q * kChunk) = a;
                  if constexpr (kStage == Stage::project) {
                    uint32_t dd = a;
                    if (gated) {
                      const float2 f = unpack_pair<Element>(a);
                      dd = pack_pair<Element>(f.x * g0, f.y * g1);
                    }
                    *reinterpret_cast<uint32_t*>(out + q * kLdChunk) = dd;
                  }
                };
                if (valid == kRun) {
#pragma unroll
                  for (int q = 0; q < kRun; ++q) finish(q);
                } else {
#pragma unroll
                  for (int q = 0; q < kRun; ++q)
                    if (q < valid) finish(q);
                }
              }
              if constexpr (kSums) {
                float2* r = reinterpret_cast<float2*>(reds(k % 2) + (run.image * kPixelGroups + rtid / kPairs) * kChunk + j0);
                const float2 before = *r;
                *r = make_float2(before.x + s0, before.y + s1);
              }
            }
          }
        }

        if constexpr (kStage == Stage::project) {
          __syncthreads();  // D of chunk k complete
          project_chunk(ds(0), wps(k % 2));
        }
      }
    }
    if constexpr (kSums) {
      if (chunks > 0) {
        __syncthreads();  // the last chunk's partial sums
        reduce_sums(chunks - 1);
      }
    }
  }

  if constexpr (kProject) {
    // y = Y + bp (+ x), stored once: a lane's two adjacent columns as one 32-bit store when C_out is even.
#pragma unroll
    for (int i = 0; i < kMaxAccTiles; ++i) {
      const int at = warp + kWarps * i;
      if (at >= acc_count) break;
      const int mt = at / n_tiles, nt = at - mt * n_tiles;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const MatrixCoord m = mma_c_coord(lane, 2 * half);
        const int pix = mt * 16 + m.row, o = nt * 8 + m.col;
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

template <class Element, Stage kStage, int K, int kStride, bool kRelu, bool kTensorDw, bool kPadE = false, int kRows = 0,
          bool kPartMajor = false>
__global__ void __launch_bounds__(kThreads, 2) mbconv_tile_kernel(
    Tile t, const Element* __restrict__ x, const Element* __restrict__ we, const Element* __restrict__ be,
    const Element* __restrict__ dw, const Element* __restrict__ bd, const float* __restrict__ gate,
    const Element* __restrict__ wp, const Element* __restrict__ bp, Element* __restrict__ y, float* __restrict__ partial,
    Element* __restrict__ dbuf) {
  tile_body<Element, kStage, K, kStride, kRelu, kTensorDw, kPadE, kRows, kPartMajor>(t, x, we, be, dw, bd, gate, wp, bp, y,
                                                                                   partial, dbuf);
}

// ---- the SE gate in pass 1's tail (run_store_plan's kGateTail) --------------------------------
//
// The store plan's gate without a kernel of its own. The tiles·splits CTAs of a tile group make the
// channel sums of the group's images; each counts its arrival in counts[group] once its sums are
// written, and the one that arrives last, which therefore knows that every sum of the group's images is
// in `partial`, computes their gates into gate16 (se_gate_image, reading the sums through L2) in
// the shared memory its tile no longer needs. Pass 2 then depends on pass 1 alone: no kernel
// boundary between the sums and the gate, none between the gate and pass 2's start.
//
//   every CTA:  tile_body (Stage::store: D -> dbuf, sums -> partial); barrier
//               one thread: fence; arrived = atomicAdd(&counts[group], 1)
//   the CTA with arrived == tiles·splits − 1:
//               one thread: fence; counts[group] = 0
//               barrier; for each image of the group: se_gate_image -> gate16
//
// Cost: at every CTA's end a fence, an L2 atomic's round trip and two barriers, while the next CTA
// waits for the slot; the gate's 2·hidden·Cr MACs an image on its group's last CTA, after that
// CTA's tile, at kThreads threads (the gate kernel may take 512), one image after another where a
// tile holds several. It pays only where pass 1 is one wave of one-image tiles (gate_tail_pays,
// mbconv_tile.hpp: there the gate kernel's boundary is on the path, and the CTAs' ends are paid
// once); lesson 11's NOTES.md (wave-4e) measures it at every SE shape.
// counts: zero when the kernel starts (launch_stage's memset), zero again when it ends (the last
// CTA of each group resets its count).
template <class Element> struct GateTail {
  unsigned* counts;                  // [groups]
  const Element *w1, *b1, *w2, *b2;  // the SE's FCs
  bool vec1, vec2;                   // their rows in 16-byte pieces (se_gate)
  int cr, ld16;
  float inv_pixels;
  FfnActivation act;
  Element* gate16;                   // [N][ld16]
};

template <class Element, int K, int kStride, bool kRelu, bool kTensorDw, bool kPadE = false, int kRows = 0,
          bool kPartMajor = false>
__global__ void __launch_bounds__(kThreads, 2) mbconv_store_gate_kernel(
    Tile t, const Element* __restrict__ x, const Element* __restrict__ we, const Element* __restrict__ be,
    const Element* __restrict__ dw, const Element* __restrict__ bd, const float* __restrict__ gate,
    const Element* __restrict__ wp, const Element* __restrict__ bp, Element* __restrict__ y, float* partial,
    Element* __restrict__ dbuf, GateTail<Element> g) {
  tile_body<Element, Stage::store, K, kStride, kRelu, kTensorDw, kPadE, kRows, kPartMajor>(t, x, we, be, dw, bd, gate, wp,
                                                                                         bp, y, partial, dbuf);
  extern __shared__ __align__(16) unsigned char shared[];
  const int group = kPartMajor ? split_place(t, int(blockIdx.x), int(blockIdx.y), int(gridDim.y), true).group
                               : int(blockIdx.y);
  __syncthreads();  // every thread's sums written; the tile is done with shared memory
  unsigned* last = reinterpret_cast<unsigned*>(shared);
  if (threadIdx.x == 0) {
    // Release: the CTA's sums (before the barrier) ahead of its arrival; the last CTA's acquire
    // after it, so that its threads (after the next barrier) read every CTA's sums.
    __threadfence();
    const bool is_last = atomicAdd(g.counts + group, 1u) + 1 == unsigned(t.tiles * t.splits);
    if (is_last) {
      __threadfence();
      g.counts[group] = 0u;  // every CTA of the group has arrived: zero again for the next launch
    }
    *last = is_last;
  }
  __syncthreads();
  if (*last == 0u) return;  // the whole CTA: the gate below has barriers
  __syncthreads();          // every thread has read *last before the gate's scratch covers it
  const int n0 = group * t.images, images = min(t.images, t.N - n0);
  for (int i = 0; i < images; ++i)  // the scratch is reused image after image: se_gate_image's barriers
    se_gate_image<Element, kThreads, true>(n0 + i, t.hidden, g.cr, t.tiles, g.inv_pixels, g.act, partial, g.w1, g.b1,
                                           g.w2, g.b2, g.vec1, g.vec2, nullptr, g.gate16, g.ld16,
                                           reinterpret_cast<float*>(shared));
}

// ---- launcher --------------------------------------------------------------------------------

// One stage over the whole batch, on the stage's own tile: choose_tile's rows, images_for's
// images per tile (from the one-image tile's resident CTAs: a tile of more images has no more),
// split_tile's CTAs per tile. One instantiation per kernel size, stride and φ; kTensorDw: the
// store stage's depthwise on the tensor cores (11e) instead of the FMA pipes (11c).
// The stage's tile for `kernel` (its resident CTAs decide the rows, the images and the splits), with
// the copy and store flags and the CONVLAB_MBCONV_SPLITS override; pad_e: E padded (tile_for's
// pad_e: EPad::columns is the kernel's kPadE, EPad::rows its kRows > 0).
template <Stage kStage, class Kernel>
Tile stage_tile(const MBConvProblem& p, const Args<MBConvProblem>& a, Kernel kernel, const char* name, const void* dbuf,
                EPad pad_e = EPad::none) {
  const Tile one = choose_tile(p, kStage, pad_e);
  allow_dynamic_shared(kernel, one.bytes, name);
  Tile t = choose_tile(p, kStage, resident_blocks(kernel, kThreads, one.bytes), pad_e);
  t.vec = vector_copies_ok(p, {a.x, a.expand_w, a.dw_w, a.project_w, dbuf});
  t.pairs = p.C_out % 2 == 0 && aligned_to(a.y, 4) && aligned_to(a.x, 4);
  allow_dynamic_shared(kernel, t.bytes, name);
  split_tile(t, kStage, resident_blocks(kernel, kThreads, t.bytes));
  if (const int forced = forced_splits(std::getenv("CONVLAB_MBCONV_SPLITS")); forced > 0 && (kStage == Stage::sums || kStage == Stage::store))
    t.splits = std::min(forced, (t.hidden + kChunk - 1) / kChunk);
  return t;
}

// The kernel launch_stage runs: the tile kernel, or with kGateTail the store stage that ends with
// the gate (mbconv_store_gate_kernel).
template <class Element, Stage kStage, int K, int S, bool kRelu, bool kTensorDw, bool kPadE, int kRows, bool kPartMajor,
          bool kGateTail>
inline auto stage_kernel() {
  if constexpr (kGateTail) {
    static_assert(kStage == Stage::store, "the gate's tail follows the store stage");
    return mbconv_store_gate_kernel<Element, K, S, kRelu, kTensorDw, kPadE, kRows, kPartMajor>;
  } else {
    return mbconv_tile_kernel<Element, kStage, K, S, kRelu, kTensorDw, kPadE, kRows, kPartMajor>;
  }
}

// kPadE: E's rows padded with zero columns, so that no depthwise window tests its columns.
// kPadRows (with kPadE): with zero rows too, and the kernel instantiated for the tile's rows per
// depthwise item (the kernel's kRows = Tile::dw_rows), so that no item tests its rows.
// kPartMajor: the split tiles' CTAs in part-major order (tile_body).
// kGateTail (the store stage only): the kernel that ends with the SE gate (mbconv_store_gate_kernel),
// with `tail` its arguments, where gate_tail_pays for the stage's tile (its counts zeroed first);
// elsewhere it launches nothing and returns false, for the caller to launch the plain stage and the
// gate kernel.
template <class Element, Stage kStage, bool kTensorDw = false, bool kPadE = false, bool kPadRows = false,
          bool kPartMajor = false, bool kGateTail = false>
bool launch_stage(const MBConvProblem& p, const Args<MBConvProblem>& a, const float* gate, float* partial, void* dbuf,
                  const GateTail<Element>* tail = nullptr) {
  bool launched = true;
  static_assert(!kPadRows || kPadE, "row padding extends the column padding");
  constexpr EPad kPad = kPadRows ? EPad::rows : kPadE ? EPad::columns : EPad::none;
  const void* wp = a.project_w;
  // rows: the kernel's kRows (0: any); its tile must make items of as many rows.
  const auto go = [&](auto kernel, const char* name, int rows = 0) {
    const Tile t = stage_tile<kStage>(p, a, kernel, name, dbuf, kPad);
    if (rows > 0 && t.dw_rows != rows)
      throw std::logic_error(std::string(name) + ": the tile's rows per depthwise item changed with the kernel");
    const dim3 grid(unsigned(t.tiles * t.splits), unsigned(t.groups));
    const auto launch = [&](auto... extra) {
      kernel<<<grid, kThreads, t.bytes>>>(
          t, static_cast<const Element*>(a.x), static_cast<const Element*>(a.expand_w),
          static_cast<const Element*>(a.expand_b), static_cast<const Element*>(a.dw_w),
          static_cast<const Element*>(a.dw_b), gate, static_cast<const Element*>(wp),
          static_cast<const Element*>(a.project_b), static_cast<Element*>(a.y), partial, static_cast<Element*>(dbuf),
          extra...);
    };
    if constexpr (kGateTail) {
      if (tail == nullptr) throw std::logic_error(std::string(name) + ": the gate's tail has no arguments");
      if (!gate_tail_pays(p, t, resident_blocks(kernel, kThreads, t.bytes))) {
        launched = false;
        return;
      }
      check_cuda(cudaMemsetAsync(tail->counts, 0, sizeof(unsigned) * t.groups), "zeroing the gate tail's counts");
      launch(*tail);
    } else {
      launch();
    }
    check_launch(name);
  };
  const auto with = [&](auto relu) {
    constexpr bool kRelu = decltype(relu)::value;
    const auto shape = [&](auto kernel_size, auto stride, const char* name) {
      constexpr int K = decltype(kernel_size)::value, S = decltype(stride)::value;
      if constexpr (kPadRows) {
        // The tile's rows per item, from the widest instantiation (every kRows has the same launch
        // bounds and shared layout, so the same resident CTAs and tile), then that kRows' kernel.
        constexpr int kMost = dw_group_max(K, S, kStage == Stage::project);
        const int rows = stage_tile<kStage>(p, a, stage_kernel<Element, kStage, K, S, kRelu, kTensorDw, true, kMost, kPartMajor, kGateTail>(),
                                            name, dbuf, kPad).dw_rows;
        if (rows == 1) go(stage_kernel<Element, kStage, K, S, kRelu, kTensorDw, true, 1, kPartMajor, kGateTail>(), name, 1);
        else if constexpr (kMost == 2) go(stage_kernel<Element, kStage, K, S, kRelu, kTensorDw, true, 2, kPartMajor, kGateTail>(), name, 2);
        else if (rows == 2) go(stage_kernel<Element, kStage, K, S, kRelu, kTensorDw, true, 2, kPartMajor, kGateTail>(), name, 2);
        else go(stage_kernel<Element, kStage, K, S, kRelu, kTensorDw, true, 3, kPartMajor, kGateTail>(), name, 3);
      } else {
        go(stage_kernel<Element, kStage, K, S, kRelu, kTensorDw, kPadE, 0, kPartMajor, kGateTail>(), name);
      }
    };
    using I = std::integral_constant<int, 1>;
    using II = std::integral_constant<int, 2>;
    using III = std::integral_constant<int, 3>;
    using V = std::integral_constant<int, 5>;
    if (p.kernel == 3 && p.stride == 1) shape(III{}, I{}, "mbconv_tile_kernel<k=3,s=1>");
    else if (p.kernel == 3) shape(III{}, II{}, "mbconv_tile_kernel<k=3,s=2>");
    else if (p.stride == 1) shape(V{}, I{}, "mbconv_tile_kernel<k=5,s=1>");
    else shape(V{}, II{}, "mbconv_tile_kernel<k=5,s=2>");
  };
  if (p.activation == MBConvActivation::relu) with(std::true_type{});
  else with(std::false_type{});
  return launched;
}

}  // namespace convlab::gpu::mbconv
