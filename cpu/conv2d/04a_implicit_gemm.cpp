// cpu/conv2d/04a_implicit_gemm.cpp — lesson 04, CPU rung 04a: GEMM on a matrix that is never written.
//
// Idea over 02b_im2col_gemm: the convolution is the GEMM
//
//   Y[M, K] = A[M, RST] · B[RST, K]      M = N·P·Q output pixels, RST = R·S·T reduction
//
//   A[m, (r,s,t)] = x[n, p·stride + r − pad, q·stride + s − pad, g·T + t]   (0 outside the image)
//   B[(r,s,t), k] = w[k, r, s, t]      KRSC w is already [K, RST] row-major = B column-major
//   Y = y as [N·P·Q, K] row-major      NHWC y is exactly that matrix
//
// and rung 02b writes A (the im2col matrix, R·S times the size of x) to memory
// before multiplying. But lesson 03's GEMM (rung 03f_openmp) already copies A,
// one MC × KC block at a time, into a small packed buffer before the
// micro-kernel sees it. So let THAT copy read x directly: the packing routine
// gets the address map (m, r, s, t) → x[...] — a "virtual im2col view" — in
// place of a pointer to a stored A. Everything after packing (micro-kernel,
// macro-kernel, threads) is lesson 03's code, called, not copied.
//
// The packed block is NOT an im2col matrix: it holds MC × KC ≤ 144 × 256
// floats (144 KiB) per thread whatever the problem, and is overwritten for
// every block. The workspace this variant reports is exactly those buffers —
// one packed A block per thread plus one packed B panel (KC × ≤ NC columns of
// wᵀ) shared by all — and does not grow with R·S, N or the image size.
//
// Cost: the same 2·N·P·Q·K·R·S·T FLOPs as the GEMM rungs. The address
// arithmetic (one pixel decode per row per depth slice, one bounds test per
// (row, tap)) is paid once per run of T contiguous channels, so it is
// amortised over T copies — cheap for T ≥ 16, visible for T = 3 (stems) and
// dominant for depthwise (T = 1), which runs correctly but slowly: that case
// has its own kernels in lesson 06. x is re-read R·S times through the cache
// instead of once from a materialised A; for NHWC with C·4 bytes per pixel the
// R·S re-reads of one block touch the same few image rows, which stay in L2.
// Supported: f32, any shape, stride, pad and groups (each group is its own
// GEMM over its T channels and K/groups outputs); N·P·Q < 2³¹.
// Run just this: build/convlab run conv2d/cpu/04a_implicit_gemm
#include <omp.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "ops/conv2d.hpp"
#include "cpu/lib/threads.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;  // kMR, kNR, kKC, kMC, kNC, pack_bt_micropanel, macro_kernel: lesson 03's

// ---- tunables ------------------------------------------------------------------
// All the blocking sizes are lesson 03's (cpu/lib/gemm_kernels.hpp), on purpose:
// implicit GEMM changes where A comes from, not how the GEMM is blocked. The one
// choice made here is how the reduction RST is cut into depth slices.
constexpr bool kBalancedSlices = true;  // RST = 576 → 3 slices of 192, not 256 + 256 + 64
static_assert(kMC % kMR == 0 && kNC % kNR == 0, "lesson 03's blocks are whole micro-panels (see its asserts)");

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

using cpu::thread_count;

// The GEMM whose shape sizes the packed buffers: per group, M × (K/groups) × RST.
GemmProblem gemm_view(const ConvProblem& p) {
  const int64_t rows = int64_t(p.N) * p.P() * p.Q();
  return {int(std::min<int64_t>(rows, INT_MAX)), p.K_per_group(), p.R * p.S * p.T(), DType::f32};
}

// Depth of each slice: at most KC, and (balanced) as even as possible.
int slice_depth(int depth) {
  if (!kBalancedSlices) return std::min(depth, kKC);
  return ceil_div(depth, ceil_div(depth, kKC));
}

// ---- the virtual im2col view -------------------------------------------------
//
// A[m, j] for one group, computed from x on demand. j = (r·S + s)·T + t runs
// over the reduction; for a fixed row m and tap (r, s) the T values of t are T
// consecutive floats of x (NHWC: channels innermost), or all zero when the tap
// falls in the padding. That run of T is the unit the packing copies.
struct Im2colView {
  const float* x;                   // [N, H, W, C] NHWC
  int H, W, C, P, Q, S, T;
  int stride, pad;
  int channel0;                     // g·T: the group's first input channel
};

// TUTORIAL: the heart of this rung. Lesson 03's pack_a reads a stored matrix:
//
//   for i < mc, k < kc:  Ap[(i/MR)·MR·kc + k·MR + i%MR] = A[(m0+i)·lda + k0 + k]
//
// Here the same buffer, in the same order, is filled from x:
//
//   for i < mc:
//     (n, p, q) = decode(m0 + i)                      once per row and slice
//     for each tap (r, s) the slice [k0, k0+kc) touches:
//       if (p·stride+r−pad, q·stride+s−pad) is inside the image:
//         copy the run of t (≤ T floats, contiguous in x) into Ap with stride MR
//       else: write zeros (the padding of the virtual A)
//
// Rows past mc are zero, as in pack_a, so the micro-kernel never sees an edge.
void pack_a_implicit(const Im2colView& v, int64_t m0, int mc, int k0, int kc, float* ap) {
  const int64_t pixels_per_image = int64_t(v.P) * v.Q;
  for (int i0 = 0; i0 < mc; i0 += kMR, ap += std::ptrdiff_t(kMR) * kc) {
    const int rows = std::min(kMR, mc - i0);
    for (int i = 0; i < rows; ++i) {
      const int64_t m = m0 + i0 + i;
      const int n = int(m / pixels_per_image);
      const int pq = int(m % pixels_per_image);
      const int ih0 = (pq / v.Q) * v.stride - v.pad;  // the input row tap r = 0 reads
      const int iw0 = (pq % v.Q) * v.stride - v.pad;
      const float* image = v.x + int64_t(n) * v.H * v.W * v.C + v.channel0;

      int tap = k0 / v.T, t = k0 % v.T;  // where the slice starts: tap r·S + s, channel t
      for (int k = 0; k < kc; t = 0, ++tap) {
        const int run = std::min(v.T - t, kc - k);  // this tap's channels that fall in the slice
        const int ih = ih0 + tap / v.S, iw = iw0 + tap % v.S;
        float* dst = ap + std::ptrdiff_t(k) * kMR + i;
        if (ih >= 0 && ih < v.H && iw >= 0 && iw < v.W) {
          const float* src = image + (int64_t(ih) * v.W + iw) * v.C + t;
          for (int e = 0; e < run; ++e) dst[e * kMR] = src[e];
        } else {
          for (int e = 0; e < run; ++e) dst[e * kMR] = 0.f;  // padding: the view's zeros
        }
        k += run;
      }
    }
    for (int i = rows; i < kMR; ++i)  // edge: zero rows, as in lesson 03's pack_a
      for (int k = 0; k < kc; ++k) ap[k * kMR + i] = 0.f;
  }
}

// B = wᵀ is packed by lesson 03's pack_bt_micropanel (added for lesson 02's
// 02b_im2col_gemm): it reads w's rows as B's columns, so no transpose is stored.

std::size_t workspace_bytes(const ConvProblem& p) { return packed_workspace_bytes(gemm_view(p), thread_count()); }

bool supports(const ConvProblem& p) {
  return p.dtype == DType::f32 && int64_t(p.N) * p.P() * p.Q() <= INT_MAX;
}

// ---- the driver: lesson 03's rung 03f, one GEMM per group ---------------------------
//
//   for g < groups:                                  (all threads together)
//     for jc step NC:  for pc step depth slice:
//       pack B panel from w (split over threads)     -- barrier --
//       for ic step block rows (split over threads):
//         pack_a_implicit(ic, pc) -> own buffer       x read through the view
//         macro_kernel -> y[ic.., g·K/groups + jc..]   lesson 03's, unchanged
//       -- barrier --
void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* x = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const float* w = static_cast<const float*>(a.w);  // [K, R, S, C/groups] KRSC = [K, RST] row-major
  float* y = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC = [N·P·Q, K] row-major
  const GemmProblem gp = gemm_view(p);
  const int M = gp.M, Kg = gp.N, depth = gp.K;      // per group: M × Kg outputs, depth RST
  const std::ptrdiff_t ldw = depth, ldc = p.K;      // C's rows are whole y rows (all K channels)
  const int kc_max = slice_depth(depth);
  const MicroKernel kernel = selected_micro_kernel().kernel;

  const int threads = thread_count();
  float* bp = static_cast<float*>(a.workspace);     // the shared packed B panel
  float* ap_all = bp + packed_b_floats(gp);         // one packed A block per thread
  const std::size_t ap_floats = packed_a_floats(gp);

  const int row_blocks = ceil_div(ceil_div(M, kMC), threads) * threads;
  const int block_rows = ceil_div(ceil_div(M, row_blocks), kMR) * kMR;  // ≤ MC

#pragma omp parallel num_threads(threads)
  {
    float* ap = ap_all + std::size_t(omp_get_thread_num()) * ap_floats;
    for (int g = 0; g < p.groups; ++g) {
      const Im2colView view{x, p.H, p.W, p.C, p.P(), p.Q(), p.S, p.T(), p.stride, p.pad, g * p.T()};
      const float* wg = w + std::ptrdiff_t(g) * Kg * ldw;  // the group's Kg rows of w
      float* yg = y + std::ptrdiff_t(g) * Kg;               // the group's Kg columns of y
      for (int jc = 0; jc < Kg; jc += kNC) {
        const int nc = std::min(kNC, Kg - jc);
        const int n_panels = ceil_div(nc, kNR);
        for (int pc = 0; pc < depth; pc += kc_max) {
          const int kc = std::min(kc_max, depth - pc);
#pragma omp for schedule(static)
          for (int jp = 0; jp < n_panels; ++jp)
            pack_bt_micropanel(kc, std::min(kNR, nc - jp * kNR), wg + (jc + jp * kNR) * ldw + pc, ldw,
                               bp + std::ptrdiff_t(jp) * kNR * kc);
          // (implicit barrier: the panel is complete)
#pragma omp for schedule(dynamic, 1) nowait
          for (int blk = 0; blk < row_blocks; ++blk) {
            const int ic = blk * block_rows;
            if (ic >= M) continue;  // rounding left a spare block
            const int mc = std::min(block_rows, M - ic);
            pack_a_implicit(view, ic, mc, pc, kc, ap);
            macro_kernel(mc, nc, kc, ap, bp, yg + std::ptrdiff_t(ic) * ldc + jc, ldc, /*accumulate=*/pc > 0,
                         kernel);
          }
#pragma omp barrier  // nobody repacks B while another thread still reads it
        }
      }
    }
  }
}

const Register<ConvProblem> reg{{
    .name = "04a_implicit_gemm",
    .device = Device::cpu,
    .lesson = 4,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "lesson 03's packed GEMM whose A packing reads x through the im2col address map: no im2col matrix",
}};

}  // namespace
}  // namespace convlab
