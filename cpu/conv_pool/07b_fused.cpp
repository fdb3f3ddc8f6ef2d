// cpu/conv_pool/07b_fused.cpp — lesson 07, CPU rung 07b: the epilogue and the pool run on the conv's output tile.
//
// Idea over 07a_layer_by_layer: rung 07a writes the conv output y_full, reads it
// back to scale/bias/ReLU it, writes it again, and reads it a third time to
// pool it. Here a thread computes a block of conv outputs into a small tile
// that stays in its L2 (≤ 144 rows × 256 channels), and finishes the layer
// there: scale, bias, ReLU, 2x2 max, and only the pooled values are stored.
// y_full never exists; traffic drops to the fused floor (x, w, scale, bias,
// y_pool: ConvPoolProblem::min_bytes).
//
// The one trick that makes it work is the ORDER of the GEMM rows. The conv is
// still the implicit GEMM of lesson 04 (Y[M, K] = A[M, RST]·B[RST, K], A read
// through the im2col view, lesson 03's packing and micro-kernel), but its rows
// are numbered window by window instead of pixel by pixel:
//
//   pixel order (lesson 04):  m = (n·P + p)·Q + q
//   window order (here):      m = ((n·P2 + i)·Q2 + j)·4 + 2a + b   → pixel (n, 2i + a, 2j + b)
//
// so GEMM rows 4w .. 4w+3 are exactly pooling window w, and any block of rows
// that starts at a multiple of 4 and holds a multiple of 4 rows contains whole
// windows: the pool needs nothing from a neighbouring block. With floor
// pooling the odd last conv row / column belongs to no window, so it is simply
// never a GEMM row: M = 4·N·P2·Q2, which also skips the work rung 07a throws away.
//
// Cost: the packed-B panels of the whole w (K × RST floats) are packed once
// per run up front, because every row block now runs its full depth loop on
// its own (its accumulator tile must be finished before the pool); that is
// ≤ a few MB for real layers. The window decode is two divisions per row and
// depth slice, as lesson 04's pixel decode was.
// Run just this: build/convlab run conv_bias_relu_pool/cpu/07b_fused
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "ops/conv_pool.hpp"
#include "cpu/lib/threads.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;  // kMR, kNR, kKC, kMC, kAlignFloats, pack_bt_micropanel, macro_kernel: lesson 03's

// ---- tunables ------------------------------------------------------------------
constexpr int kWindowRows = 4;    // GEMM rows per pooling window (2x2)
constexpr int kTileChannels = 256;  // channels of the accumulator tile: 144 × 256 floats = 144 KiB, in L2
constexpr int kRowQuantum = 12;   // row blocks are multiples of lcm(kMR, kWindowRows)
static_assert(kRowQuantum % kMR == 0 && kRowQuantum % kWindowRows == 0,
              "a row block must be whole micro-panels AND whole pooling windows");
static_assert(kMC % kRowQuantum == 0, "lesson 03's MC rows must be a whole number of quanta");
static_assert(kTileChannels % kNR == 0, "the tile is whole NR-wide micro-panels");

constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
constexpr std::size_t round_floats(std::size_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

using cpu::thread_count;

// Sizes of one run, derived once.
struct Plan {
  int64_t windows;   // N·P2·Q2
  int64_t rows;      // GEMM rows = 4·windows
  int Kg, depth;     // per group: output channels, reduction RST
  int kc_max;        // depth slice
  int slices;        // depth slices
  int nc_slot;       // channels per packed-B slot (≤ kTileChannels, whole NR panels)
  int channel_tiles; // ceil(Kg / kTileChannels)
  std::size_t b_slot_floats, b_floats, a_floats, tile_floats;

  explicit Plan(const ConvPoolProblem& p) {
    const ConvProblem c = p.conv();
    windows = int64_t(p.N) * p.P2() * p.Q2();
    rows = kWindowRows * windows;
    Kg = c.K_per_group();
    depth = c.reduction_depth();
    slices = int(ceil_div(depth, kKC));
    kc_max = int(ceil_div(depth, slices));  // balanced slices, ≤ KC
    nc_slot = int(std::min<int64_t>(ceil_div(Kg, kNR) * kNR, kTileChannels));
    channel_tiles = int(ceil_div(Kg, kTileChannels));
    b_slot_floats = round_floats(std::size_t(nc_slot) * kc_max);
    b_floats = b_slot_floats * std::size_t(p.groups) * channel_tiles * slices;
    a_floats = round_floats(std::size_t(kMC) * kc_max);
    tile_floats = round_floats(std::size_t(kMC) * nc_slot);
  }
  // The packed panels of (group g, channel tile ct, depth slice s).
  std::size_t b_slot(int g, int ct, int s) const { return ((std::size_t(g) * channel_tiles + ct) * slices + s) * b_slot_floats; }
};

// Workspace: [ packed w, all slots | per thread: packed A block, accumulator tile ].
std::size_t workspace_bytes(const ConvPoolProblem& p) {
  const Plan plan(p);
  return (plan.b_floats + std::size_t(thread_count()) * (plan.a_floats + plan.tile_floats)) * sizeof(float);
}

bool supports(const ConvPoolProblem& p) {
  return p.dtype == DType::f32 && int64_t(p.N) * p.P() * p.Q() <= INT_MAX;
}

// ---- the im2col view, in window order ------------------------------------------------
//
// TUTORIAL: lesson 04's pack_a_implicit fills the packed A block from x; this
// is the same, with one line different — which pixel row m is:
//
//   lesson 04:  n = m / (P·Q);  p = m / Q % P;  q = m % Q
//   here:       w = m / 4;  n = w / (P2·Q2);  i = w / Q2 % P2;  j = w % Q2
//               p = 2i + (m % 4) / 2;  q = 2j + m % 2
//
// then for each reduction index k = (r·S + s)·T + t of the slice:
//   Ap[i_panel][k][i % MR] = x[n, p·stride + r − pad, q·stride + s − pad, g·T + t]   (0 in the padding)
// copied in runs of the ≤ T contiguous channels of one tap.
struct WindowView {
  const float* x;  // [N, H, W, C] NHWC
  int H, W, C, P2, Q2, S, T, stride, pad;
  int channel0;    // g·T
};

void pack_a_windows(const WindowView& v, int64_t m0, int mc, int k0, int kc, float* ap) {
  // supports() keeps N·P·Q (≥ every row index) below 2³¹: 32-bit arithmetic, and a
  // window is decoded once for its four rows (two divisions per window, not per row).
  const int windows_per_image = v.P2 * v.Q2;
  int decoded_window = -1, n = 0, p0 = 0, q0 = 0;  // the last window decoded: image n, top-left pixel (p0, q0)
  for (int i0 = 0; i0 < mc; i0 += kMR, ap += std::ptrdiff_t(kMR) * kc) {
    const int rows = std::min(kMR, mc - i0);
    for (int i = 0; i < rows; ++i) {
      const int m = int(m0) + i0 + i;
      const int window = m / kWindowRows, corner = m % kWindowRows;  // corner = 2a + b
      if (window != decoded_window) {
        decoded_window = window;
        n = window / windows_per_image;
        const int ij = window - n * windows_per_image;
        const int wi = ij / v.Q2;
        p0 = 2 * wi, q0 = 2 * (ij - wi * v.Q2);
      }
      const int p = p0 + corner / 2, q = q0 + corner % 2;
      const int ih0 = p * v.stride - v.pad, iw0 = q * v.stride - v.pad;
      const float* image = v.x + int64_t(n) * v.H * v.W * v.C + v.channel0;
      float* dst_row = ap + i;
      // (r, s, t) of reduction index k0 + k, stepped tap by tap (no division per tap).
      const int tap0 = k0 / v.T;
      int r = tap0 / v.S, s = tap0 % v.S, t = k0 % v.T;
      for (int k = 0; k < kc;) {
        const int run = std::min(v.T - t, kc - k);
        const int ih = ih0 + r, iw = iw0 + s;
        float* dst = dst_row + std::ptrdiff_t(k) * kMR;
        if (ih >= 0 && ih < v.H && iw >= 0 && iw < v.W) {
          const float* src = image + (int64_t(ih) * v.W + iw) * v.C + t;
          for (int e = 0; e < run; ++e) dst[e * kMR] = src[e];
        } else {
          for (int e = 0; e < run; ++e) dst[e * kMR] = 0.f;
        }
        k += run;
        // Next tap: channels restart at 0; s steps along the filter row, and
        // wrapping to the next row (s back to 0) moves r down one.
        t = 0;
        if (++s == v.S) {
          s = 0;
          ++r;
        }
      }
    }
    for (int i = rows; i < kMR; ++i)  // rows past mc: zero, so the micro-kernel never sees an edge
      for (int k = 0; k < kc; ++k) ap[k * kMR + i] = 0.f;
  }
}

// ---- the epilogue, on the tile -------------------------------------------------------
//
// tile[r, c] holds conv output row m0 + r, channel k0 + c (row-major, ld = ldt).
// Rows come in fours = windows, so window w0 + u is rows 4u .. 4u+3:
//
//   y[w0 + u, k] = max over d < 4 of  max(tile[4u + d, c]·scale[k] + bias[k], 0)      k = k0 + c
//
// The scale is applied before the max (a negative scale flips the order); the
// ReLU may come after the max, since max(·, 0) commutes with max.
void pool_epilogue(const float* tile, int ldt, int windows, int nc, const float* scale, const float* bias,
                   float* y_window0, int K) {
  for (int u = 0; u < windows; ++u) {
    const float* r0 = tile + std::ptrdiff_t(kWindowRows * u) * ldt;
    float* out = y_window0 + std::ptrdiff_t(u) * K;
    for (int c = 0; c < nc; ++c) {
      const float s = scale[c], b = bias[c];
      const float v = std::max(std::max(r0[c] * s + b, r0[ldt + c] * s + b),
                               std::max(r0[2 * ldt + c] * s + b, r0[3 * ldt + c] * s + b));
      out[c] = std::max(v, 0.f);
    }
  }
}

//   for g < groups:
//     pack all of group g's w into B slots (split over threads)     -- barrier --
//     for each row block (dynamic, whole windows):
//       for each channel tile ct:
//         for each depth slice s:  pack_a_windows → macro_kernel into the tile (accumulate s > 0)
//         pool_epilogue(tile) → y          the tile never leaves this thread's cache
void run(const ConvPoolProblem& p, const Args<ConvPoolProblem>& a) {
  const float* x = static_cast<const float*>(a.x);          // [N, H, W, C]         NHWC
  const float* w = static_cast<const float*>(a.w);          // [K, R, S, C/groups]  KRSC = [K, RST] row-major
  const float* scale = static_cast<const float*>(a.scale);  // [K]
  const float* bias = static_cast<const float*>(a.bias);    // [K]
  float* y = static_cast<float*>(a.y);                      // [N, P2, Q2, K]       NHWC = [windows, K]
  const ConvProblem c = p.conv();
  const Plan plan(p);
  const MicroKernel kernel = selected_micro_kernel().kernel;
  const int threads = thread_count();
  float* b_all = static_cast<float*>(a.workspace);
  float* per_thread = b_all + plan.b_floats;

  const int64_t blocks_wanted = std::max<int64_t>(threads, ceil_div(plan.rows, kMC));
  const int block_rows =
      int(std::min<int64_t>(kMC, ceil_div(ceil_div(plan.rows, blocks_wanted), kRowQuantum) * kRowQuantum));
  const int64_t row_blocks = ceil_div(plan.rows, block_rows);

#pragma omp parallel num_threads(threads)
  {
    float* ap = per_thread + std::size_t(omp_get_thread_num()) * (plan.a_floats + plan.tile_floats);
    float* tile = ap + plan.a_floats;  // [block_rows, nc_slot] row-major
    for (int g = 0; g < p.groups; ++g) {
      const float* wg = w + std::ptrdiff_t(g) * plan.Kg * plan.depth;  // the group's Kg rows of w
      const int panels_per_slot = int(ceil_div(plan.nc_slot, kNR));
      const int64_t panel_jobs = int64_t(plan.channel_tiles) * plan.slices * panels_per_slot;
#pragma omp for schedule(static)
      for (int64_t job = 0; job < panel_jobs; ++job) {
        const int ct = int(job / (int64_t(plan.slices) * panels_per_slot));
        const int s = int(job / panels_per_slot % plan.slices);
        const int panel = int(job % panels_per_slot);
        const int col = ct * kTileChannels + panel * kNR;
        const int pc = s * plan.kc_max, kc = std::min(plan.kc_max, plan.depth - pc);
        float* bp = b_all + plan.b_slot(g, ct, s) + std::ptrdiff_t(panel) * kNR * kc;
        const int cols = std::max(0, std::min(kNR, plan.Kg - col));
        pack_bt_micropanel(kc, cols, wg + std::ptrdiff_t(std::min(col, plan.Kg - 1)) * plan.depth + pc, plan.depth, bp);
      }
      // (implicit barrier: all of w is packed)
      const WindowView view{x, p.H, p.W, p.C, p.P2(), p.Q2(), p.S, c.T(), p.stride, p.pad, g * c.T()};
#pragma omp for schedule(dynamic, 1)
      for (int64_t blk = 0; blk < row_blocks; ++blk) {
        const int64_t m0 = blk * block_rows;
        const int mc = int(std::min<int64_t>(block_rows, plan.rows - m0));  // a multiple of 4: whole windows
        for (int ct = 0; ct < plan.channel_tiles; ++ct) {
          const int k0 = ct * kTileChannels, nc = std::min(kTileChannels, plan.Kg - k0);
          for (int s = 0; s < plan.slices; ++s) {
            const int pc = s * plan.kc_max, kc = std::min(plan.kc_max, plan.depth - pc);
            pack_a_windows(view, m0, mc, pc, kc, ap);
            macro_kernel(mc, nc, kc, ap, b_all + plan.b_slot(g, ct, s), tile, plan.nc_slot, /*accumulate=*/s > 0,
                         kernel);
          }
          const int kglobal = g * plan.Kg + k0;
          pool_epilogue(tile, plan.nc_slot, mc / kWindowRows, nc, scale + kglobal, bias + kglobal,
                        y + (m0 / kWindowRows) * p.K + kglobal, p.K);
        }
      }
      // (implicit barrier: nobody repacks w for the next group while it is read)
    }
  }
}

const Register<ConvPoolProblem> reg{{
    .name = "07b_fused",
    .device = Device::cpu,
    .lesson = 7,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "implicit GEMM with rows in pooling-window order: scale/bias/ReLU and the 2x2 max on each "
            "thread's output tile; only the pooled y is stored",
}};

}  // namespace
}  // namespace convlab
