// cpu/convfirst/10b_fused.cpp — lesson 10, CPU rung b: the whole block per spatial tile, in cache.
//
// Idea over 10a_layer_by_layer: block fusion (§5.3.1, Fig. 7b). Nothing but
// the output pixels' receptive field ties a tile of y to x — the FFN is
// pixel-wise — so each tile of output pixels is computed start to finish
// while its conv output and hidden chunks sit in the core's L1/L2:
//
//   for each tile of output pixels:                           OpenMP, kTilesPerGrab consecutive tiles at a time
//                                     (stride 1: kTileRows consecutive pixels of N·H·W; stride 2: one
//                                      output row's run of kTileQ columns, whose conv rows it computes)
//     T  = gconv3x3(x) + conv_b over the tile          [TQ, C]   stride 2: 3 conv rows, then the blur
//     Z  = shortcut + b                                [TQ, C_out] in a per-thread tile: x (stride 1),
//                                                                 blur(x) or blur(x)·Wsc + bsc (stride 2)
//     (stride 1: ask for the x lines the next tile's conv reads first, into L2)
//     for r in chunks of TH hidden channels:                      Eq. 32
//       H_r = φ(T·U^r + a_r)                           [TQ, TH]  micro-kernel GEMM (lesson 03), each
//                                                                 micro-tile given a_r and φ and stored
//                                                                 straight into H_r·V_r's packed A panel
//       Z  += H_r·V_r
//     y's rows of the tile = Z, by streaming stores: y is written once and never read from memory.
//
// Plain loop it replaces (per output pixel): t = conv(x); z = x + b;
//   for r < hidden: h = φ(t·U[:, r] + a[r]); z += h·V[r, :].
// Cost: the block's MACs (stride 2: the conv of the tile's 3 input rows,
// 1.5x the conv work of a full-resolution pass, since neighbouring tiles
// share a row), weight packing once per run, per tile the packing of T, and
// per micro-tile of H_r an in-register 6x16 transposition (one pass over H_r,
// not three: store, φ, pack). Memory traffic: x (plus a halo re-read from
// cache), the weights once, y once: ConvFirstProblem::min_bytes(). The floor
// on 2 cores is the GEMMs' rate, as for lesson 08's 02_loop_fused.
//
// Tunables: kTileRows / kTileQ output pixels per tile, kHiddenChunk hidden channels per step,
// kTilesPerGrab tiles per scheduling step.
// Supported: f32, group width 8, any sizes. Workspace: the packed weights plus per thread a few tiles
// (T and its packed copy, packed H_r, Z; at stride 2 the conv rows, S and its packed copy).
// Run just this: build/convlab run convfirst/cpu/10b_fused --shape N=16,H=56,C=64
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "ops/convfirst.hpp"
#include "cpu/lib/threads.hpp"
#include "cpu/lib/convfirst_cpu.hpp"
#include "cpu/lib/ffn_cpu.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;
using namespace cpu_convfirst;
using cpu::thread_count;

// ---- tunables ----------------------------------------------------------------------
constexpr int kTileRows = 96;      // stride 1: pixels per tile, consecutive in N·H·W order (rows and images may split)
constexpr int kTileQ = 60;         // stride 2: output pixels per tile (one output row's run of columns)
constexpr int kHiddenChunk = 128;  // TH: hidden channels per step of the fused loop
constexpr int kTilesPerGrab = 8;   // consecutive tiles a thread takes at once (so its next tile is known)
constexpr int kCacheLineFloats = 16;
constexpr int kMaxTile = kTileRows > kTileQ ? kTileRows : kTileQ;
static_assert(kTileRows % kMR == 0 && kTileQ % kMR == 0, "tiles of whole MR-row micro-panels");
static_assert(kHiddenChunk % kNR == 0 && kHiddenChunk <= kKC, "a chunk is whole NR panels and one depth slice");
static_assert(std::size_t(kMaxTile) * kHiddenChunk * sizeof(float) <= kL2Bytes / 8,
              "packed H_r stays in an eighth of L2, beside T, Z and the packed weights");

// ---- workspace layout ----------------------------------------------------------------
//   shared:     conv weights regrouped (wt), packed U (chunks × depth slices of C), packed V (chunks),
//               packed Wsc (depth slices of C; projection only)
//   per thread: conv rows (stride 2: 3 × (2·TQ + 1) × C), T tile [TQ, C], its packed copy,
//               packed H_r [TQ / MR][TH][MR], S tile [TQ, C] (stride 2), its packed copy, Z tile [TQ, C_out]
struct Layout {
  int chunks, slices, kc_max;
  std::size_t wt, u_panel, v_panel, sc_panel, shared_floats;
  std::size_t conv_rows, t_tile, t_packed, h_tile, s_tile, z_tile, thread_floats;
  explicit Layout(const ConvFirstProblem& p) {
    const auto up = [](std::size_t f) { return round_up(f, kAlignFloats); };
    chunks = (p.hidden + kHiddenChunk - 1) / kHiddenChunk;
    slices = (p.C + kKC - 1) / kKC;
    kc_max = std::min(p.C, kKC);
    wt = up(conv_weight_floats(p));
    u_panel = up(std::size_t(kc_max) * kHiddenChunk);
    v_panel = up(std::size_t(kHiddenChunk) * round_up(std::size_t(p.C_out), kNR));
    sc_panel = p.has_projection() ? up(std::size_t(kc_max) * round_up(std::size_t(p.C_out), kNR)) : 0;
    shared_floats = wt + std::size_t(chunks) * (slices * u_panel + v_panel) + slices * sc_panel;
    conv_rows = p.stride == 2 ? up(std::size_t(3) * (2 * kTileQ + 1) * p.C) : 0;
    t_tile = up(std::size_t(kMaxTile) * p.C);
    t_packed = std::size_t(slices) * up(std::size_t(kMaxTile) * kc_max);
    h_tile = up(std::size_t(kMaxTile) * kHiddenChunk);
    s_tile = p.stride == 2 ? t_tile : 0;
    z_tile = up(std::size_t(kMaxTile) * p.C_out);
    thread_floats = conv_rows + t_tile + t_packed + h_tile + (p.stride == 2 ? s_tile + t_packed : 0) + z_tile;
  }
};

// One MR × NR micro-tile of T·U^r (acc, row-major, NR floats a row; its first n columns
// valid) into the packed A layout of H_r (pack_a's: hp[k·MR + i], k the hidden column):
//   hp[j·MR + i] = φ(acc[i·NR + j] + a_r[j])   for i < MR, j < n
// Rows past the tile's pixels come from T's zero-padded rows: finite, and never stored in y.
// The transposition: with AVX2 (`avx2`, a full tile), in registers, 8 columns at a time —
// rows 0–3 by unpack + shuffle into one 4-float column per 128-bit lane, rows 4–5 by one
// unpack into 2-float pairs — then a 4-float and a 2-float store per column; else scalar.
static_assert(kMR == 6 && kNR % 8 == 0, "the AVX2 transposition is written for 6-row tiles");
__attribute__((target("avx2"))) inline void transpose_6x16(const float* acc, float* hp) {
  for (int v = 0; v < kNR / 8; ++v) {
    __m256 r[kMR];
    for (int i = 0; i < kMR; ++i) r[i] = _mm256_load_ps(acc + i * kNR + v * 8);
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 c[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),   // columns 0|4, 1|5
                         _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};  // columns 2|6, 3|7
    const __m256 u0 = _mm256_unpacklo_ps(r[4], r[5]), u1 = _mm256_unpackhi_ps(r[4], r[5]);  // (r4, r5) of 0 1|4 5, 2 3|6 7
    float* col = hp + v * 8 * kMR;
    for (int half = 0; half < 2; ++half) {  // columns 0–3, then 4–7
      const __m128 lo_u0 = half ? _mm256_extractf128_ps(u0, 1) : _mm256_castps256_ps128(u0);
      const __m128 lo_u1 = half ? _mm256_extractf128_ps(u1, 1) : _mm256_castps256_ps128(u1);
      for (int j = 0; j < 4; ++j) {
        float* dst = col + (half * 4 + j) * kMR;
        _mm_storeu_ps(dst, half ? _mm256_extractf128_ps(c[j], 1) : _mm256_castps256_ps128(c[j]));
        const __m128 pair = j < 2 ? lo_u0 : lo_u1;
        if (j % 2 == 0)
          _mm_storel_pi(reinterpret_cast<__m64*>(dst + 4), pair);
        else
          _mm_storeh_pi(reinterpret_cast<__m64*>(dst + 4), pair);
      }
    }
  }
}
template <class Phi>
inline void bias_activate_pack(float* acc, const float* bias, int n, float* hp, bool avx2, Phi phi) {
  if (n == kNR) {
    for (int i = 0; i < kMR; ++i) {
#pragma omp simd
      for (int j = 0; j < kNR; ++j) acc[i * kNR + j] = phi(acc[i * kNR + j] + bias[j]);
    }
    if (avx2) return transpose_6x16(acc, hp);
  } else {
    for (int i = 0; i < kMR; ++i)
      for (int j = 0; j < n; ++j) acc[i * kNR + j] = phi(acc[i * kNR + j] + bias[j]);
  }
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < kMR; ++i) hp[j * kMR + i] = acc[i * kNR + j];
}
inline void bias_activate_pack(float* acc, const float* bias, int n, float* hp, bool avx2, ConvFirstActivation act) {
  switch (act) {
    case ConvFirstActivation::relu: bias_activate_pack(acc, bias, n, hp, avx2, cpu_ffn::relu); break;
    case ConvFirstActivation::silu: bias_activate_pack(acc, bias, n, hp, avx2, cpu_ffn::silu); break;
    default: throw std::invalid_argument("convfirst: activation not implemented (ConvFirstProblem admits relu, silu)");
  }
}

// dst[0..n) = src[0..n). With `streaming`, non-temporal stores (an aligned 32-byte store at
// a time): the destination's lines go to memory without first being read into the cache, as
// a plain store would (write-allocate) — y is only ever written. Called only after
// selected_micro_kernel() found AVX2.
__attribute__((target("avx"))) inline void stream_copy(const float* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i < n && (reinterpret_cast<std::uintptr_t>(dst + i) & 31) != 0; ++i) dst[i] = src[i];
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
  for (; i < n; ++i) dst[i] = src[i];
  _mm_sfence();  // the streamed lines are visible before the tile counts as done
}
inline void write_once(const float* src, float* dst, std::size_t n, bool streaming) {
  if (streaming)
    stream_copy(src, dst, n);
  else
    std::memcpy(dst, src, n * sizeof(float));
}

bool supports(const ConvFirstProblem& p) { return p.dtype == DType::f32 && p.group_width == kGroupWidth; }

std::size_t workspace_bytes(const ConvFirstProblem& p) {
  const Layout l(p);
  return (l.shared_floats + std::size_t(thread_count()) * l.thread_floats) * sizeof(float);
}

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& args) {
  const Layout l(p);
  const int threads = thread_count();
  const auto* x = static_cast<const float*>(args.x);            // [N, H, W, C]
  const auto* conv_w = static_cast<const float*>(args.conv_w);  // [C, 3, 3, 8]
  const auto* conv_b = static_cast<const float*>(args.conv_b);  // [C]
  const auto* u = static_cast<const float*>(args.u);            // [C, hidden]
  const auto* a = static_cast<const float*>(args.a);            // [hidden]
  const auto* v = static_cast<const float*>(args.v);            // [hidden, C_out]
  const auto* b = static_cast<const float*>(args.b);            // [C_out]
  const auto* wsc = static_cast<const float*>(args.shortcut_w); // [C, C_out] or nullptr
  const auto* bsc = static_cast<const float*>(args.shortcut_b); // [C_out] or nullptr
  float* y = static_cast<float*>(args.y);                       // [N, P, Q, C_out]

  float* wt = static_cast<float*>(args.workspace);
  float* u_packed = wt + l.wt;
  float* v_packed = u_packed + std::size_t(l.chunks) * l.slices * l.u_panel;
  float* sc_packed = v_packed + std::size_t(l.chunks) * l.v_panel;
  float* per_thread = static_cast<float*>(args.workspace) + l.shared_floats;
  const MicroKernel kernel = selected_micro_kernel().kernel;
  const bool avx2 = selected_micro_kernel().avx2;  // the transposition in registers, the non-temporal stores
  const int P = p.P(), Q = p.Q(), C = p.C, Co = p.C_out;
  const int q_tiles = (Q + kTileQ - 1) / kTileQ;
  const int64_t pixels = int64_t(p.N) * p.H * p.W;  // stride 1: the flattened tiles' index range
  const int tiles = p.stride == 1 ? int((pixels + kTileRows - 1) / kTileRows) : p.N * P * q_tiles;
  const auto chunk_width = [&](int r) { return std::min(kHiddenChunk, p.hidden - r * kHiddenChunk); };
  const auto kc_of = [&](int s) { return std::min(kKC, C - s * kKC); };

#pragma omp parallel num_threads(threads)
  {
    // Weights, once per run: the conv's regrouped, U^r and V_r per chunk, Wsc.
#pragma omp single
    transpose_conv_weights(p, conv_w, wt);
#pragma omp for schedule(static)
    for (int r = 0; r < l.chunks; ++r) {
      for (int s = 0; s < l.slices; ++s)
        pack_b(kc_of(s), chunk_width(r), u + std::ptrdiff_t(s) * kKC * p.hidden + r * kHiddenChunk, p.hidden,
               u_packed + (std::size_t(r) * l.slices + s) * l.u_panel);
      pack_b(chunk_width(r), Co, v + std::ptrdiff_t(r) * kHiddenChunk * Co, Co, v_packed + std::size_t(r) * l.v_panel);
    }
    if (p.has_projection()) {
#pragma omp for schedule(static)
      for (int s = 0; s < l.slices; ++s)
        pack_b(kc_of(s), Co, wsc + std::ptrdiff_t(s) * kKC * Co, Co, sc_packed + std::size_t(s) * l.sc_panel);
    }
    // (implicit barriers: all weights are ready before any tile)

    float* mine = per_thread + std::size_t(omp_get_thread_num()) * l.thread_floats;
    float* conv_rows = mine;                  // [3][2·TQ + 1][C]   stride 2 only
    float* t_tile = conv_rows + l.conv_rows;  // [TQ, C]
    float* t_packed = t_tile + l.t_tile;      // slices of [TQ × kc] A panels
    float* h_packed = t_packed + l.t_packed;  // H_r, packed: TQ / MR micro-panels of [TH][MR]
    float* s_tile = h_packed + l.h_tile;      // [TQ, C]            stride 2 only
    float* s_packed = s_tile + l.s_tile;
    float* z = s_packed + (p.stride == 2 ? l.t_packed : 0);  // Z [TQ, C_out], streamed to y at the tile's end

#pragma omp for schedule(dynamic, kTilesPerGrab)
    for (int tile = 0; tile < tiles; ++tile) {
      // 1. T (and, at stride 2, the blurred shortcut S) for the tile's pixels; Z's rows of y.
      int tq;
      float* y_rows;  // the tile's rows of y, consecutive, ld = C_out
      if (p.stride == 1) {
        // kTileRows consecutive pixels m0 .. m0+tq of the N·H·W index: whole micro-panels
        // for any W, and y's rows of the tile are contiguous.
        const int64_t m0 = int64_t(tile) * kTileRows;
        tq = int(std::min<int64_t>(kTileRows, pixels - m0));
        y_rows = y + m0 * Co;
        conv_run(p, x, wt, conv_b, m0, tq, t_tile);  // runs of eight pixels of a row: one x broadcast, three taps
        // Z = x + b: the residual starts the accumulators (Fig. 7b).
        for (int i = 0; i < tq; ++i) {
          const float* xr = x + (m0 + i) * C;
          float* zr = z + std::ptrdiff_t(i) * Co;
#pragma omp simd
          for (int c = 0; c < Co; ++c) zr[c] = xr[c] + b[c];
        }
        // The x the next tile's conv reads first (its pixels' row below, past what this tile
        // touched), asked into L2 now: it arrives from DRAM while this tile's FFN runs.
        const int64_t lo = (m0 + tq + p.W + 1) * C, hi = std::min(pixels, m0 + 2 * kTileRows + p.W + 2) * C;
        for (int64_t f = lo; f < hi; f += kCacheLineFloats) _mm_prefetch(reinterpret_cast<const char*>(x + f), _MM_HINT_T1);
      } else {
        const int qt = tile % q_tiles, op = (tile / q_tiles) % P, n = tile / (q_tiles * P);
        const int q0 = qt * kTileQ;
        tq = std::min(kTileQ, Q - q0);
        const float* image = x + std::ptrdiff_t(n) * p.H * p.W * C;
        y_rows = y + ((std::ptrdiff_t(n) * P + op) * Q + q0) * Co;
        // The conv at input rows 2p−1 .. 2p+1, columns 2q0−1 .. 2(q0+tq−1)+1 (zero outside the
        // image: the blur zero-pads the conv OUTPUT), then the blur of those rows and of x.
        const int cols = 2 * tq + 1, w0 = 2 * q0 - 1;
        for (int i = 0; i < 3; ++i) {
          const int h_in = 2 * op + i - 1;
          for (int j = 0; j < cols; ++j) {
            float* dst = conv_rows + (std::ptrdiff_t(i) * cols + j) * C;
            const int w_in = w0 + j;
            if (h_in < 0 || h_in >= p.H || w_in < 0 || w_in >= p.W) {
              for (int c = 0; c < C; ++c) dst[c] = 0.0f;
            } else {
              conv_pixel(p, image, wt, conv_b, h_in, w_in, dst);
            }
          }
        }
        for (int q = 0; q < tq; ++q) {
          float* tr = t_tile + std::ptrdiff_t(q) * C;
          float* sr = s_tile + std::ptrdiff_t(q) * C;
          for (int c = 0; c < C; ++c) tr[c] = sr[c] = 0.0f;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              const float tap = kBinomial[i] * kBinomial[j] / 16.0f;
              const float* cr = conv_rows + (std::ptrdiff_t(i) * cols + 2 * q + j) * C;
#pragma omp simd
              for (int c = 0; c < C; ++c) tr[c] += tap * cr[c];
              const int h_in = 2 * op + i - 1, w_in = 2 * (q0 + q) + j - 1;
              if (h_in < 0 || h_in >= p.H || w_in < 0 || w_in >= p.W) continue;
              const float* xr = image + (std::ptrdiff_t(h_in) * p.W + w_in) * C;
#pragma omp simd
              for (int c = 0; c < C; ++c) sr[c] += tap * xr[c];
            }
        }
        // Z = S + b, or S·Wsc + bsc + b.
        for (int i = 0; i < tq; ++i) {
          float* zr = z + std::ptrdiff_t(i) * Co;
          const float* sr = s_tile + std::ptrdiff_t(i) * C;
          if (p.has_projection()) {
            for (int c = 0; c < Co; ++c) zr[c] = b[c] + (bsc ? bsc[c] : 0.0f);
          } else {
            for (int c = 0; c < Co; ++c) zr[c] = sr[c] + b[c];
          }
        }
        if (p.has_projection())
          for (int s = 0; s < l.slices; ++s) {
            pack_a(tq, kc_of(s), s_tile + s * kKC, C, s_packed + s * (l.t_packed / l.slices));
            macro_kernel(tq, Co, kc_of(s), s_packed + s * (l.t_packed / l.slices), sc_packed + s * l.sc_panel, z, Co,
                         /*accumulate=*/true, kernel);
          }
      }

      // 2. Pack T once: the A operand of every chunk's first GEMM.
      for (int s = 0; s < l.slices; ++s)
        pack_a(tq, kc_of(s), t_tile + s * kKC, C, t_packed + s * (l.t_packed / l.slices));

      // 3. Eq. 32 over hidden chunks, Z accumulating in y's rows. Each MR × NR micro-tile of
      //    T·U^r goes from the micro-kernel's registers to a stack tile, then, with a_r and φ,
      //    straight into its place in the packed A operand of H_r·V_r: H_r is never stored
      //    unpacked, and is passed over once instead of three times (store, φ, pack).
      for (int r = 0; r < l.chunks; ++r) {
        const int th = chunk_width(r);
        const float* a_r = a + r * kHiddenChunk;
        for (int ir = 0; ir < tq; ir += kMR) {
          float* hp = h_packed + std::ptrdiff_t(ir) * th;  // H_r's micro-panel ir / MR: [th][MR]
          for (int jr = 0; jr < th; jr += kNR) {
            alignas(64) float acc[kMR * kNR];
            for (int s = 0; s < l.slices; ++s)
              kernel(kc_of(s), t_packed + s * (l.t_packed / l.slices) + std::ptrdiff_t(ir) * kc_of(s),
                     u_packed + (std::size_t(r) * l.slices + s) * l.u_panel + std::ptrdiff_t(jr) * kc_of(s), acc, kNR,
                     /*accumulate=*/s > 0);
            bias_activate_pack(acc, a_r + jr, std::min(kNR, th - jr), hp + std::ptrdiff_t(jr) * kMR, avx2,
                               p.activation);
          }
        }
        macro_kernel(tq, Co, th, h_packed, v_packed + std::size_t(r) * l.v_panel, z, Co, /*accumulate=*/true, kernel);
      }

      // 4. y's rows, written once: streaming stores, so y's lines are not read from DRAM first.
      write_once(z, y_rows, std::size_t(tq) * Co, avx2);
    }
  }
}

const Register<ConvFirstProblem> reg{{
    .name = "10b_fused",
    .device = Device::cpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "Fig. 7b: per tile of pixels, gconv into a cached T tile, Z = shortcut + b, Z += φ(T·U_r + a_r)·V_r per chunk",
}};

}  // namespace
}  // namespace convlab
