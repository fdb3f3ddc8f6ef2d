// gpu/lib/conv_geometry.cuh — a ConvProblem's sizes as plain ints a kernel can take.
//
// ConvProblem's member functions are host code; a kernel gets this flat copy,
// with the derived sizes (P, Q, T, K per group) computed once on the host.
#pragma once

#include "ops/conv2d.hpp"

// The row-order maps below are plain arithmetic, callable on the host too so
// that tests (tests/lesson07_fusion_test.cpp) can check them without a GPU.
// Same definition as gpu/lib/mma.cuh's (an identical redefinition is allowed).
#if defined(__CUDACC__)
#define CONVLAB_HOST_DEVICE __host__ __device__
#else
#define CONVLAB_HOST_DEVICE
#endif

namespace convlab::gpu {

struct ConvGeometry {
  int N, H, W, C;         // input  x [N, H, W, C]          NHWC
  int K, R, S;            // weights w [K, R, S, T]          KRSC
  int P, Q;               // output y [N, P, Q, K]          NHWC
  int stride, pad, groups;
  int T;                  // input channels per group  (C / groups)
  int K_per_group;        // output channels per group (K / groups)
};

inline ConvGeometry geometry_of(const ConvProblem& p) {
  return {p.N, p.H, p.W, p.C, p.K, p.R, p.S, p.P(), p.Q(), p.stride, p.pad, p.groups, p.T(), p.K_per_group()};
}

// ---- which output pixel a GEMM row is ------------------------------------------
// An implicit-GEMM conv computes Y[m, k] for GEMM rows m; the row order is a
// choice. Lesson 04 numbers pixels row by row; lesson 07 numbers them by 2x2
// pooling window: four consecutive rows are one window (fp32), or a warp's
// 64 rows are 16 whole windows laid out for the mma accumulators (tensor cores).
struct OutputPixel {
  int n, p, q;  // y[n, p, q, ·]
};

// m = (n·P + p)·Q + q, all N·P·Q pixels.
CONVLAB_HOST_DEVICE inline OutputPixel pixel_order(const ConvGeometry& cg, int m) {
  const int pq = m % (cg.P * cg.Q);
  return {m / (cg.P * cg.Q), pq / cg.Q, pq % cg.Q};
}

// The 2x2 windows of a floor pooling: N·P2·Q2 of them, P2 = P/2, Q2 = Q/2, numbered
// like the pooled output's pixels, window = (n·P2 + i)·Q2 + j. Corner 2a + b of
// window (n, i, j) is the conv output pixel (n, 2i + a, 2j + b).
CONVLAB_HOST_DEVICE inline int window_count(const ConvGeometry& cg) { return cg.N * (cg.P / 2) * (cg.Q / 2); }

CONVLAB_HOST_DEVICE inline OutputPixel window_corner(const ConvGeometry& cg, int window, int corner) {
  const int P2 = cg.P / 2, Q2 = cg.Q / 2;
  const int ij = window % (P2 * Q2);
  return {window / (P2 * Q2), 2 * (ij / Q2) + corner / 2, 2 * (ij % Q2) + corner % 2};
}

// m = window·4 + corner: only the 4·N·P2·Q2 pixels a floor 2x2 pooling reads
// (an odd last row / column is no row).
CONVLAB_HOST_DEVICE inline OutputPixel window_order(const ConvGeometry& cg, int m) {
  return window_corner(cg, m / 4, m % 4);
}

// The tensor-core kernel's order (lesson 07, gpu/conv_pool/07b_fused.cu). A warp
// there owns 64 GEMM rows from a multiple of 64, and its lane with group g holds
// rows 16·mi + 8·h + g of them (m16 tile mi = 0..3, h = 0..1; gpu::mma_c_coord).
// Number those rows so that the tile index is the corner:
//
//   m = 64·block + 16·corner + 8·h + g   ↔   window 16·block + 2·g + h, corner
//
// and each lane holds the four corners of two whole windows, 16·block + 2g and
// 16·block + 2g + 1. GEMM rows come in whole blocks: M = 4·window_count rounded
// up to 64. A row whose window is past the last one is given a pixel just right
// of the first image row (n = 0, p = 0, q·stride − pad ≥ W): its receptive field
// is all padding, so it loads nothing and computes 0. Its offset into x lies
// between pixel (0, 0, 0)'s and (2W + 2·pad)·C (Q ≥ 2 implies stride ≤ W + 2·pad),
// well inside what gpu::igemm_tc::fits allows.
constexpr int kWarpWindows = 16;                   // windows per block; rows per corner (an m16 tile)
constexpr int kWarpWindowRows = 4 * kWarpWindows;  // rows per block: 4 corners × 16 windows

CONVLAB_HOST_DEVICE inline OutputPixel warp_window_order(const ConvGeometry& cg, int m) {
  const int block = m / kWarpWindowRows, corner = m % kWarpWindowRows / kWarpWindows;
  const int h = m % kWarpWindows / 8, g = m % 8;
  const int window = kWarpWindows * block + 2 * g + h;
  if (window >= window_count(cg)) return {0, 0, (cg.W + cg.pad + cg.stride - 1) / cg.stride};
  return window_corner(cg, window, corner);
}

}  // namespace convlab::gpu
