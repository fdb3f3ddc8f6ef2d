// gpu/common/conv_geometry.cuh — a ConvProblem's sizes as plain ints a kernel can take.
//
// ConvProblem's member functions are host code; a kernel gets this flat copy,
// with the derived sizes (P, Q, T, K per group) computed once on the host.
#pragma once

#include "core/problems.hpp"

// The row-order maps below are plain arithmetic, callable on the host too so
// that tests (tests/lesson07_fusion_test.cpp) can check them without a GPU.
// Same definition as gpu/common/mma.cuh's (an identical redefinition is allowed).
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
// pooling window, so four consecutive rows are one window.
struct OutputPixel {
  int n, p, q;  // y[n, p, q, ·]
};

// m = (n·P + p)·Q + q, all N·P·Q pixels.
CONVLAB_HOST_DEVICE inline OutputPixel pixel_order(const ConvGeometry& cg, int m) {
  const int pq = m % (cg.P * cg.Q);
  return {m / (cg.P * cg.Q), pq / cg.Q, pq % cg.Q};
}

// m = ((n·P2 + i)·Q2 + j)·4 + 2a + b  →  pixel (n, 2i + a, 2j + b), P2 = P/2, Q2 = Q/2:
// only the 4·N·P2·Q2 pixels a floor 2x2 pooling reads (an odd last row / column is no row).
CONVLAB_HOST_DEVICE inline OutputPixel window_order(const ConvGeometry& cg, int m) {
  const int P2 = cg.P / 2, Q2 = cg.Q / 2;
  const int window = m / 4, corner = m % 4;
  const int ij = window % (P2 * Q2);
  return {window / (P2 * Q2), 2 * (ij / Q2) + corner / 2, 2 * (ij % Q2) + corner % 2};
}

}  // namespace convlab::gpu
