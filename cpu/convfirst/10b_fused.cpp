// cpu/convfirst/10b_fused.cpp — lesson 10, CPU rung b: the whole block per spatial tile, in cache.
//
// Idea over 10a_layer_by_layer: block fusion (§5.3.1, Fig. 7b). Nothing but
// the output pixels' receptive field ties a tile of y to x — the FFN is
// pixel-wise — so each tile of output pixels is computed start to finish
// while its conv output and hidden chunks sit in the core's L1/L2:
//
//   for each tile of output pixels:                           OpenMP, tiles dealt out dynamically
//                                     (stride 1: kTileRows consecutive pixels of N·H·W; stride 2: one
//                                      output row's run of kTileQ columns, whose conv rows it computes)
//     T  = gconv3x3(x) + conv_b over the tile          [TQ, C]   stride 2: 3 conv rows, then the blur
//     Z  = shortcut + b                                [TQ, C_out] in y's own rows: x (stride 1),
//                                                                 blur(x) or blur(x)·Wsc + bsc (stride 2)
//     for r in chunks of TH hidden channels:                      Eq. 32
//       H_r = φ(T·U^r + a_r)                           [TQ, TH]  micro-kernel GEMM (lesson 03), in L1/L2
//       Z  += H_r·V_r
//   y is written once per tile and never re-read from memory.
//
// Plain loop it replaces (per output pixel): t = conv(x); z = x + b;
//   for r < hidden: h = φ(t·U[:, r] + a[r]); z += h·V[r, :].
// Cost: the block's MACs (stride 2: the conv of the tile's 3 input rows,
// 1.5x the conv work of a full-resolution pass, since neighbouring tiles
// share a row), weight packing once per run, and per tile the packing of
// T and H_r. Memory traffic: x (plus a halo re-read from cache), the weights
// once, y once: ConvFirstProblem::min_bytes(). The floor on 2 cores is the
// GEMMs' rate, as for lesson 08's 02_loop_fused.
//
// Tunables: kTileRows / kTileQ output pixels per tile, kHiddenChunk hidden channels per step.
// Supported: f32, group width 8, any sizes. Workspace: the packed weights plus per thread a few tiles.
// Run just this: build/convlab run convfirst/cpu/10b_fused --shape N=16,H=56,C=64
#include <omp.h>

#include <algorithm>
#include <cstddef>

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
constexpr int kMaxTile = kTileRows > kTileQ ? kTileRows : kTileQ;
static_assert(kTileRows % kMR == 0 && kTileQ % kMR == 0, "tiles of whole MR-row micro-panels");
static_assert(kHiddenChunk % kNR == 0 && kHiddenChunk <= kKC, "a chunk is whole NR panels and one depth slice");
static_assert(std::size_t(kMaxTile) * kHiddenChunk * sizeof(float) * 2 <= kL2Bytes / 4,
              "H_r and its packed copy stay in a quarter of L2");

// ---- workspace layout ----------------------------------------------------------------
//   shared:     conv weights regrouped (wt), packed U (chunks × depth slices of C), packed V (chunks),
//               packed Wsc (depth slices of C; projection only)
//   per thread: conv rows (stride 2: 3 × (2·TQ + 1) × C), T tile [TQ, C], its packed copy,
//               H tile [TQ, TH], its packed copy, S tile [TQ, C] (stride 2), its packed copy
struct Layout {
  int chunks, slices, kc_max;
  std::size_t wt, u_panel, v_panel, sc_panel, shared_floats;
  std::size_t conv_rows, t_tile, t_packed, h_tile, s_tile, thread_floats;
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
    thread_floats = conv_rows + t_tile + t_packed + 2 * h_tile + (p.stride == 2 ? s_tile + t_packed : 0);
  }
};

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
    float* h = t_packed + l.t_packed;         // [TQ, TH]
    float* h_packed = h + l.h_tile;
    float* s_tile = h_packed + l.h_tile;      // [TQ, C]            stride 2 only
    float* s_packed = s_tile + l.s_tile;

#pragma omp for schedule(dynamic, 1)
    for (int tile = 0; tile < tiles; ++tile) {
      // 1. T (and, at stride 2, the blurred shortcut S) for the tile's pixels; Z's rows of y.
      int tq;
      float* z;  // the tile's rows of y, consecutive, ld = C_out
      if (p.stride == 1) {
        // kTileRows consecutive pixels m0 .. m0+tq of the N·H·W index: whole micro-panels
        // for any W, and y's rows of the tile are contiguous.
        const int64_t m0 = int64_t(tile) * kTileRows;
        tq = int(std::min<int64_t>(kTileRows, pixels - m0));
        z = y + m0 * Co;
        conv_run(p, x, wt, conv_b, m0, tq, t_tile);  // eight pixels per weight load
        // Z = x + b: the residual starts the accumulators (Fig. 7b).
        for (int i = 0; i < tq; ++i) {
          const float* xr = x + (m0 + i) * C;
          float* zr = z + std::ptrdiff_t(i) * Co;
#pragma omp simd
          for (int c = 0; c < Co; ++c) zr[c] = xr[c] + b[c];
        }
      } else {
        const int qt = tile % q_tiles, op = (tile / q_tiles) % P, n = tile / (q_tiles * P);
        const int q0 = qt * kTileQ;
        tq = std::min(kTileQ, Q - q0);
        const float* image = x + std::ptrdiff_t(n) * p.H * p.W * C;
        z = y + ((std::ptrdiff_t(n) * P + op) * Q + q0) * Co;
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

      // 3. Eq. 32 over hidden chunks, Z accumulating in y's rows.
      for (int r = 0; r < l.chunks; ++r) {
        const int th = chunk_width(r);
        for (int s = 0; s < l.slices; ++s)
          macro_kernel(tq, th, kc_of(s), t_packed + s * (l.t_packed / l.slices),
                       u_packed + (std::size_t(r) * l.slices + s) * l.u_panel, h, kHiddenChunk,
                       /*accumulate=*/s > 0, kernel);
        cpu_ffn::bias_activate(tq, th, h, kHiddenChunk, a + r * kHiddenChunk, p.activation);
        pack_a(tq, th, h, kHiddenChunk, h_packed);
        macro_kernel(tq, Co, th, h_packed, v_packed + std::size_t(r) * l.v_panel, z, Co, /*accumulate=*/true, kernel);
      }
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
