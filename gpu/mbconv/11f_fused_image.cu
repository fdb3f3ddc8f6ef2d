// gpu/mbconv/11f_fused_image.cu — lesson 11, GPU rung f: the whole block with its SE in ONE kernel,
// one CTA per image.
//
// Idea over 11c_fused_store: the SE's pool is what splits the block into passes, because no
// pixel can be gated before its whole image has been through the depthwise. When one image's
// depthwise output D fits in a CTA's shared memory (49 pixels × 1152 channels at 7²: 113 KB),
// the CTA can wait for itself: it makes D chunk by chunk, keeps it, pools it, runs the SE's two
// small layers, gates D in place and projects it. D never leaves the chip, and there is one
// launch instead of three.
//
//   plain loops (ref::mbconv_block)               here, per CTA = image n
//   e = φ(x·We + be)                              per 64-channel chunk: E = φ(X·We[:, chunk] + be)  mma.sync -> es
//   d = φ(dw(e) + bd)                             D[:, chunk] = φ(dw(E) + bd)                         FMA -> ds; sums
//   g = sigmoid(ψ(mean(d)·W1 + b1)·W2 + b2)       after the last chunk, from the sums                 FMA, one CTA
//   y = (d ⊙ g)·Wp + bp (+ x)                     ds *= g; Y = ds·Wp + bp (+ x), Wp in 32-row stages  mma.sync -> y
//
// Cost: the block's MACs, with the expand's M rounded up to m16 tiles of the image's pixels;
// DRAM: x, y and the weights once; every CTA reads all the weights from L2 (N·|weights|: 145 MB
// at N = 128, 7², C = 192). A CTA has one image's worth of parallelism, so the grid is N CTAs of
// 16 warps, one per SM: the rung is for batches of small images (7², 14² at stride 2).
// Where it stands: lesson 11's tables (README.md) and NOTES.md. Bound by latency: one CTA's phases
// run in series, and the expand's small units (mma.sync fragments loaded by ldmatrix) spend many
// instructions per mma.
// Contract: f16/bf16, SE or none, e ≥ 1, K = 3 or 5, stride 1 or 2, any C, C_out, H, W whose
// layout (gpu/lib/mbconv_image_layout.hpp) fits 227 KB of shared memory. No workspace.
// Tunables: the chunk (64 channels), the project's stage depth and warp tile (the layout header).
// Run just this: build/convlab run mbconv/gpu/11f_fused_image --shape N=128,H=7,C=192,dtype=f16
#include "gpu/lib/mbconv_fused.cuh"  // stage_tile, activate_pair, load_pair, ldmatrix helpers
#include "gpu/lib/mbconv_image_se.cuh"
#include "gpu/lib/mbconv_image_layout.hpp"
#include "ops/mbconv.hpp"

namespace convlab {
namespace {

using namespace gpu;
using namespace gpu::mbconv;

struct ImageParams {
  int H, W, C, hidden, cr, C_out, P, Q, stride, pad;
  bool has_se, residual, vec_x, vec_we, vec_wp, vec_w1, vec_w2, vec_dw, pairs_y;
  ImageLayout l;
};

// A thread's walk over the 16-byte pieces of a [rows][8·per_row] tile: pieces tid, tid + kImageThreads, ...
// as (row, piece) pairs, stepped by additions (the one division is the walk's start).
struct PieceWalk {
  int r0, c0, dr, dc, per_row;
  __device__ explicit PieceWalk(int pieces_per_row)
      : r0(int(threadIdx.x) / pieces_per_row), c0(int(threadIdx.x) % pieces_per_row),
        dr(kImageThreads / pieces_per_row), dc(kImageThreads % pieces_per_row), per_row(pieces_per_row) {}
};

// dst[r][c] = src[r·ld_src + c] for r < valid_rows, c < valid_cols, else 0, over rows × 8·per_row
// elements: 16-byte cp.async (vec: src rows 16-byte aligned, valid_cols a multiple of 8), or
// element copies (visible after the next barrier).
template <class Element>
__device__ __forceinline__ void copy_tile(const PieceWalk& w, Element* dst, int ld_dst, const Element* src,
                                          std::ptrdiff_t ld_src, int rows, int valid_rows, int valid_cols, bool vec) {
  if (!vec) {
    const int cols = 8 * w.per_row;
    for (int i = threadIdx.x; i < rows * cols; i += kImageThreads) {
      const int r = i / cols, c = i - r * cols;
      dst[r * ld_dst + c] = r < valid_rows && c < valid_cols ? src[r * ld_src + c] : from_float<Element>(0.0f);
    }
    return;
  }
  for (int r = w.r0, c = w.c0; r < rows;) {
    const int col = 8 * c;
    const bool in = r < valid_rows && col < valid_cols;
    cp_async_16(shared_address(dst + r * ld_dst + col), in ? src + r * ld_src + col : src, in);
    r += w.dr, c += w.dc;
    if (c >= w.per_row) c -= w.per_row, ++r;
  }
}

// Grid: N CTAs (one per image), kImageThreads threads, l.bytes of dynamic shared memory.
template <class Element, int K, bool kRelu, bool kExpand>
__global__ void __launch_bounds__(kImageThreads, 1)
    mbconv_image_kernel(ImageParams prm, const Element* __restrict__ x, const Element* __restrict__ we,
                        const Element* __restrict__ be, const Element* __restrict__ dw, const Element* __restrict__ bd,
                        const Element* __restrict__ w1, const Element* __restrict__ b1,
                        const Element* __restrict__ w2, const Element* __restrict__ b2,
                        const Element* __restrict__ wp, const Element* __restrict__ bp, Element* __restrict__ y) {
  extern __shared__ __align__(128) unsigned char smem[];
  const ImageLayout& l = prm.l;
  Element* xs = reinterpret_cast<Element*>(smem + l.xs);
  Element* es = reinterpret_cast<Element*>(smem + l.es);
  Element* dws = reinterpret_cast<Element*>(smem + l.dws);
  Element* bes = reinterpret_cast<Element*>(smem + l.bias);
  Element* bds = bes + l.hidden_p;
  Element* ds = reinterpret_cast<Element*>(smem + l.ds);
  Element* wbuf = reinterpret_cast<Element*>(smem + l.wbuf);
  float* pooled = reinterpret_cast<float*>(smem + l.pooled);
  float* red = reinterpret_cast<float*>(smem + l.red);
  float* z = reinterpret_cast<float*>(smem + l.z);
  int* erow = reinterpret_cast<int*>(smem + l.rows);  // the expand's rows in bordered E (-1: past the image)
  int* tap0 = erow + l.rows_in;                        // each output pixel's top-left tap in E
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, g = lane / 4, tq = lane % 4;
  const int n = blockIdx.x, HW = l.HW, PQ = l.PQ, hidden = prm.hidden;
  const Element* xn = x + std::ptrdiff_t(n) * HW * prm.C;
  const uint32_t row16 = lane % 16, col8 = 8 * (lane / 16);  // ldmatrix x4: this lane's row and column offset

  // ---- x, and the first We chunk ---------------------------------------------------------
  copy_tile(PieceWalk((l.ldx - 8) / 8), xs, l.ldx, xn, prm.C, HW, HW, prm.C, prm.vec_x);
  for (int h = tid; h < l.hidden_p; h += kImageThreads) {
    bes[h] = kExpand && h < hidden ? be[h] : from_float<Element>(0.0f);
    bds[h] = h < hidden ? bd[h] : from_float<Element>(0.0f);
  }
  if constexpr (kExpand)  // E's border stays zero: the expand writes only the image's pixels
    for (int i = tid; i < l.hp * l.wp * kImageLde / 8; i += kImageThreads)
      reinterpret_cast<uint4*>(es)[i] = make_uint4(0, 0, 0, 0);
  if constexpr (kExpand) {  // the divisions by W and Q, done once here instead of in every chunk
    for (int row = tid; row < l.rows_in; row += kImageThreads) {
      const int ih = row / prm.W;
      erow[row] = row < HW ? (ih + l.pad) * l.wp + row - ih * prm.W + l.pad : -1;
    }
    for (int pix = tid; pix < PQ; pix += kImageThreads) {
      const int p = pix / prm.Q, q = pix - p * prm.Q;
      tap0[pix] = p * prm.stride * l.wp + q * prm.stride;
    }
  }
  constexpr int kTaps = K * K, kDwChunk = kImageChunk * kTaps;  // a chunk's depthwise weights, contiguous
  const auto we_slot = [&](int c) { return wbuf + (c % 2) * l.ck * kImageLde; };
  const PieceWalk we_walk(kImageChunk / 8);
  const auto issue_we = [&](int c) {
    {  // the chunk's depthwise weights: 16-byte copies of whole pieces, element loads for a short tail
      const int h0 = c * kImageChunk, valid = min(kImageChunk, hidden - h0) * kTaps;
      Element* dst = dws + (c % 2) * kDwChunk;
      const Element* src = dw + std::ptrdiff_t(h0) * kTaps;
      for (int i = 8 * tid; i < kDwChunk; i += 8 * kImageThreads) {
        if (prm.vec_dw && i + 8 <= valid) cp_async_16(shared_address(dst + i), src + i, true);
        else
          for (int k = i; k < i + 8; ++k) dst[k] = k < valid ? src[k] : from_float<Element>(0.0f);
      }
    }
    if constexpr (kExpand) {
      const int h0 = c * kImageChunk;
      copy_tile(we_walk, we_slot(c), kImageLde, we + h0, hidden, l.ck, prm.C, min(kImageChunk, hidden - h0),
                prm.vec_we);
    }
  };
  issue_we(0);
  cp_async_commit();

  // ---- the chunks: E = φ(X·We + be) -> es; D = φ(dw(E) + bd) -> ds; channel sums ------------
  const int m_tiles_in = (HW + 15) / 16;
  for (int c = 0; c < l.chunks; ++c) {
    const int h0 = c * kImageChunk;
    const int ch = h0 + 2 * lane;  // this lane's two channels in the depthwise
    cp_async_wait<0>();
    __syncthreads();  // We chunk c (and x) landed; es and red free (the last chunk's depthwise is done)
    if (c > 0 && tid < kImageChunk) {  // the previous chunk's sums, added in warp order
      float s = 0.0f;
      for (int w = 0; w < kImageWarps; ++w) s += red[w * l.red_cols + tid];
      pooled[h0 - kImageChunk + tid] = s;
    }
    if (c + 1 < l.chunks) issue_we(c + 1);
    cp_async_commit();

    const Element* e_src;  // E of this chunk: es, or x's channels without an expand
    int lde;
    if constexpr (kExpand) {
      // units: (m16 tile of input pixels, 16 channels of the chunk), 2 n8 tiles each
      const uint32_t we_base = shared_address(we_slot(c));
      for (int u = warp; u < m_tiles_in * 4; u += kImageWarps) {
        const int mt = u / 4, nq = u % 4;
        const int arow = min(16 * mt + int(row16), HW - 1);  // rows past the image repeat the last one
        const uint32_t a_at = shared_address(xs + arow * l.ldx + col8);
        const uint32_t b_at = we_base + (row16 * kImageLde + 16 * nq + col8) * 2;
        float bias_e[2][2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int hc = h0 + 16 * nq + 8 * j + 2 * tq;
          const float2 b = load_pair(bes + hc);
          bias_e[j][0] = b.x, bias_e[j][1] = b.y;
        }
        // Two chains over k (even and odd k16 steps), added at the end: each mma waits for the one
        // before it in its chain, and a unit is only 2 n8 tiles wide.
        float acc[2][4] = {}, odd[2][4] = {};
        for (int k = 0; k < l.ck; k += 32) {
          uint32_t a[4], b[4];
          ldmatrix_x4(a, a_at + k * 2);
          ldmatrix_x4_trans(b, b_at + k * kImageLde * 2);
          mma_m16n8k16<Element>(acc[0], a, {b[0], b[1]});
          mma_m16n8k16<Element>(acc[1], a, {b[2], b[3]});
          if (k + 16 < l.ck) {
            uint32_t a2[4], b2[4];
            ldmatrix_x4(a2, a_at + (k + 16) * 2);
            ldmatrix_x4_trans(b2, b_at + (k + 16) * kImageLde * 2);
            mma_m16n8k16<Element>(odd[0], a2, {b2[0], b2[1]});
            mma_m16n8k16<Element>(odd[1], a2, {b2[2], b2[3]});
          }
        }
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) acc[j][i] += odd[j][i];
        const int at[2] = {erow[16 * mt + g], erow[16 * mt + g + 8]};  // rows g, g + 8 of the tile in E
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int col = 16 * nq + 8 * j + 2 * tq;
#pragma unroll
          for (int h = 0; h < 2; ++h)
            if (at[h] >= 0)
              *reinterpret_cast<uint32_t*>(es + at[h] * kImageLde + col) =
                  activate_pair<Element, kRelu>(acc[j][2 * h] + bias_e[j][0], acc[j][2 * h + 1] + bias_e[j][1]);
        }
      }
      e_src = es + 2 * lane, lde = kImageLde;
    } else {
      e_src = xs + h0 + 2 * lane, lde = l.ldx;
    }
    __syncthreads();  // E of the chunk is whole, and the sums above have left red

    // The depthwise: lane = channel pair, warp w takes output pixels w, w + 16, ... With an expand,
    // E's zero border makes every tap a plain load; without one, E is x and taps are tested.
    float wk[2][kTaps];
    const Element* wsrc = dws + (c % 2) * kDwChunk + 2 * lane * kTaps;
#pragma unroll
    for (int t = 0; t < kTaps; ++t) wk[0][t] = to_float(wsrc[t]), wk[1][t] = to_float(wsrc[kTaps + t]);
    const float2 bias_d = load_pair(bds + ch);
    const int ew = kExpand ? l.wp : prm.W;  // E's row length in pixels
    float sum0 = 0.0f, sum1 = 0.0f;
    const auto finish = [&](int pix, float a0, float a1) {
      const uint32_t d = activate_pair<Element, kRelu>(a0, a1);
      *reinterpret_cast<uint32_t*>(ds + pix * l.ldd + ch) = d;
      const float2 df = unpack_pair<Element>(d);
      sum0 += df.x, sum1 += df.y;
    };
    if constexpr (kExpand) {
      for (int pix = warp; pix < PQ; pix += kImageWarps) {
        const Element* at = e_src + tap0[pix] * lde;
        float a0 = bias_d.x, a1 = bias_d.y;
#pragma unroll
        for (int r = 0; r < K; ++r)
#pragma unroll
          for (int s = 0; s < K; ++s) {
            const float2 v = load_pair(at + (r * ew + s) * lde);
            a0 = fmaf(v.x, wk[0][r * K + s], a0);
            a1 = fmaf(v.y, wk[1][r * K + s], a1);
          }
        finish(pix, a0, a1);
      }
    } else {
      int p = warp / prm.Q, q = warp - p * prm.Q;
      for (int pix = warp; pix < PQ; pix += kImageWarps) {
        const int ih0 = p * prm.stride - prm.pad, iw0 = q * prm.stride - prm.pad;
        float a0 = bias_d.x, a1 = bias_d.y;
#pragma unroll
        for (int r = 0; r < K; ++r) {
          const int ih = ih0 + r;
          if (unsigned(ih) < unsigned(prm.H)) {
            const Element* row = e_src + (ih * ew + iw0) * lde;
#pragma unroll
            for (int s = 0; s < K; ++s)
              if (unsigned(iw0 + s) < unsigned(prm.W)) {
                const float2 v = load_pair(row + s * lde);
                a0 = fmaf(v.x, wk[0][r * K + s], a0);
                a1 = fmaf(v.y, wk[1][r * K + s], a1);
              }
          }
        }
        finish(pix, a0, a1);
        q += kImageWarps;
        while (q >= prm.Q) q -= prm.Q, ++p;
      }
    }
    *reinterpret_cast<float2*>(&red[warp * l.red_cols + 2 * lane]) = make_float2(sum0, sum1);
  }
  __syncthreads();
  if (tid < kImageChunk) {
    float s = 0.0f;
    for (int w = 0; w < kImageWarps; ++w) s += red[w * l.red_cols + tid];
    pooled[(l.chunks - 1) * kImageChunk + tid] = s;
  }

  // ---- the project's first stages go out now, under the SE -----------------------------------
  const int wi = warp / l.wn, wj = warp % l.wn;
  const int block_cols = l.block_cols;
  const int k_stages = l.hidden_p / kProjectK;
  const PieceWalk wp_walk(block_cols / 8);
  const auto issue_wp = [&](int block, int kk) {
    if (kk < k_stages) {
      const int n0 = (block % l.n_blocks) * block_cols, k0 = kk * kProjectK;
      copy_tile(wp_walk, wbuf + (kk % kProjectStages) * kProjectK * l.ldwp, l.ldwp, wp + std::ptrdiff_t(k0) * prm.C_out + n0,
                prm.C_out, kProjectK, hidden - k0, prm.C_out - n0, prm.vec_wp);
    }
    cp_async_commit();
  };
  __syncthreads();  // pooled whole; the We slots are free
  issue_wp(0, 0);
  issue_wp(0, 1);

  // ---- the SE: mean, z = ψ(mean·W1 + b1), g = sigmoid(z·W2 + b2); D *= g ---------------------
  if (prm.has_se) {
    image_se_gate<kImageThreads, Element, kRelu>(pooled, red, z, hidden, prm.cr, PQ, w1, b1, w2, b2, prm.vec_w1,
                                                 prm.vec_w2);
    for (int hc = 2 * tid; hc < l.hidden_p; hc += 2 * kImageThreads) {  // pad channels: 0 · a finite sum
      const float2 gate = *reinterpret_cast<const float2*>(&pooled[hc]);
      for (int r = 0; r < PQ; ++r) {
        uint32_t* at = reinterpret_cast<uint32_t*>(ds + r * l.ldd + hc);
        const float2 d = unpack_pair<Element>(*at);
        *at = pack_pair<Element>(d.x * gate.x, d.y * gate.y);
      }
    }
  }

  // ---- the project: Y = D·Wp + bp (+ x), block by block, Wp in three 32-row stages -------------
  const uint32_t ds_base = shared_address(ds), wbuf_base = shared_address(wbuf);
  for (int block = 0; block < l.m_blocks * l.n_blocks; ++block) {
    if (block > 0) issue_wp(block, 0), issue_wp(block, 1);
    constexpr int kWarpPixels = 16 * kWarpMTiles;
    const int m0 = (block / l.n_blocks) * (kWarpPixels * l.wm) + kWarpPixels * wi;  // this warp's pixels
    const int nl = 32 * wj, n0 = (block % l.n_blocks) * block_cols + nl;  // and 32 channels
    const bool busy = m0 < PQ && n0 < prm.C_out;
    uint32_t a_at[kWarpMTiles];
#pragma unroll
    for (int i = 0; i < kWarpMTiles; ++i)
      a_at[i] = ds_base + (min(m0 + 16 * i + int(row16), PQ - 1) * l.ldd + col8) * 2;
    float acc[kWarpMTiles][kWarpNTiles][4] = {};
    for (int kk = 0; kk < k_stages; ++kk) {
      cp_async_wait<1>();
      __syncthreads();  // stage kk landed (and, at kk = 0, the gated D is whole); stage kk - 1's slot is free
      issue_wp(block, kk + 2);
      if (busy) {
        const uint32_t b_at = wbuf_base + ((kk % kProjectStages) * kProjectK * l.ldwp + row16 * l.ldwp + nl + col8) * 2;
#pragma unroll
        for (int ks = 0; ks < kProjectK; ks += 16) {
          uint32_t b[2][4];
          ldmatrix_x4_trans(b[0], b_at + ks * l.ldwp * 2);
          ldmatrix_x4_trans(b[1], b_at + (ks * l.ldwp + 16) * 2);
#pragma unroll
          for (int i = 0; i < kWarpMTiles; ++i) {
            uint32_t a[4];
            ldmatrix_x4(a, a_at[i] + (kk * kProjectK + ks) * 2);
#pragma unroll
            for (int j = 0; j < kWarpNTiles; ++j) mma_m16n8k16<Element>(acc[i][j], a, {b[j / 2][2 * (j % 2)], b[j / 2][2 * (j % 2) + 1]});
          }
        }
      }
    }
    cp_async_wait<0>();
    if (busy) {
      Element* yn = y + std::ptrdiff_t(n) * PQ * prm.C_out;
#pragma unroll
      for (int j = 0; j < kWarpNTiles; ++j) {
        const int col = n0 + 8 * j + 2 * tq;
        if (col >= prm.C_out) continue;
        const bool two = col + 1 < prm.C_out;
        const float bp0 = to_float(bp[col]), bp1 = two ? to_float(bp[col + 1]) : 0.0f;
#pragma unroll
        for (int i = 0; i < kWarpMTiles; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = m0 + 16 * i + g + 8 * h;
            if (row >= PQ) continue;
            float v0 = acc[i][j][2 * h] + bp0, v1 = acc[i][j][2 * h + 1] + bp1;
            if (prm.residual) {
              v0 += to_float(xs[row * l.ldx + col]);
              if (two) v1 += to_float(xs[row * l.ldx + col + 1]);
            }
            Element* out = yn + std::ptrdiff_t(row) * prm.C_out + col;
            if (two && prm.pairs_y) *reinterpret_cast<uint32_t*>(out) = pack_pair<Element>(v0, v1);
            else {
              out[0] = from_float<Element>(v0);
              if (two) out[1] = from_float<Element>(v1);
            }
          }
      }
    }
    __syncthreads();  // every warp is done with the Wp slots before the next block's copies
  }
}

bool supports(const MBConvProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && (p.kernel == 3 || p.kernel == 5) &&
         (p.stride == 1 || p.stride == 2) && p.N <= (1 << 30) && ImageLayout(p).fits();
}

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  ImageParams prm{};
  set_image_params(prm, p, a);
  prm.pad = p.kernel / 2;
  prm.vec_dw = aligned_to(a.dw_w, 16);
  prm.l = ImageLayout(p);
  visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    const auto go = [&](auto kernel, const char* name) {
      allow_dynamic_shared(kernel, prm.l.bytes, name);
      kernel<<<unsigned(p.N), kImageThreads, prm.l.bytes>>>(
          prm, static_cast<const E*>(a.x), static_cast<const E*>(a.expand_w), static_cast<const E*>(a.expand_b),
          static_cast<const E*>(a.dw_w), static_cast<const E*>(a.dw_b), static_cast<const E*>(a.se1_w),
          static_cast<const E*>(a.se1_b), static_cast<const E*>(a.se2_w), static_cast<const E*>(a.se2_b),
          static_cast<const E*>(a.project_w), static_cast<const E*>(a.project_b), static_cast<E*>(a.y));
      check_launch(name);
    };
    const auto with = [&](auto relu, auto expand) {
      constexpr bool kRelu = decltype(relu)::value, kExp = decltype(expand)::value;
      if (p.kernel == 3) go(mbconv_image_kernel<E, 3, kRelu, kExp>, "mbconv_image_kernel<k=3>");
      else go(mbconv_image_kernel<E, 5, kRelu, kExp>, "mbconv_image_kernel<k=5>");
    };
    const auto with_act = [&](auto expand) {
      if (p.activation == MBConvActivation::relu) with(std::true_type{}, expand);
      else with(std::false_type{}, expand);
    };
    if (p.has_expand()) with_act(std::true_type{});
    else with_act(std::false_type{});
  });
}

const Register<MBConvProblem> reg{{
    .name = "11f_fused_image",
    .device = Device::gpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .idea = "one kernel, one CTA per image: D of the whole image stays in shared memory, the SE runs on chip, then the project",
    .model_bytes = [](const MBConvProblem& p) { return p.min_bytes(); },
}};

}  // namespace
}  // namespace convlab
