// gpu/lib/im2col.cuh — lesson 02's im2col kernel, shared by
// gpu/conv2d/02b_im2col_gemm.cu (the suite's own SGEMM) and
// gpu/conv2d/02c_im2col_cublas.cu (cuBLAS).
//
// The patch matrix of group g (the CPU side explains it in cpu/lib/im2col.hpp):
//
//   patches[i][j] = x[n, p·stride + r − pad, q·stride + s − pad, g·T + t]   (0 in the padding)
//   i = (n·P + p)·Q + q  ∈ [0, N·P·Q)          a row per output pixel
//   j = (r·S + s)·T + t  ∈ [0, R·S·T)          the same order as a row of KRSC weights
//
// Kernel contract:
//   x [N, H, W, C] NHWC, patches [N·P·Q, R·S·T] row-major, Element = float or __half
//   (copied bit for bit: no arithmetic). 1-D grid of 1-D blocks, a grid-stride
//   loop over the N·P·Q·R·S·T elements in memory order of `patches`, so
//   thread e writes element e: consecutive threads walk along a patch row's
//   (r, s, t) index — the stores of a warp are one contiguous run
//   (coalesced), and so are its loads wherever the run stays inside one tap
//   (t, the fastest index, is the channel: T consecutive Elements of x).
//
//     warp:   t0  t1  t2 … t31
//     stores: patches[i][j0 … j0+31]            contiguous
//     loads:  x[n, ih, iw, g·T + t0 … ]         contiguous within a tap; a new
//                                               pixel (another segment) where j crosses a tap
//
//   Edge duties: every element of `patches` is written — padding taps as 0,
//   explicitly, since the workspace holds whatever the last run left there.
//   Offsets are 64-bit: the matrix passes 2³¹ elements at realistic sizes.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"

namespace convlab::gpu {

// ---- tunables ----------------------------------------------------------------
inline constexpr int kIm2colThreads = 256;        // threads per block
inline constexpr int64_t kIm2colMaxBlocks = 65536;  // the grid-stride loop covers the rest
static_assert(kIm2colThreads % 32 == 0, "whole warps: each warp's 32 stores form one contiguous run");

template <class Element>
__global__ void __launch_bounds__(kIm2colThreads)
    im2col_kernel(ConvGeometry g, int group, const Element* __restrict__ x, Element* __restrict__ patches) {
  const int64_t depth = int64_t(g.R) * g.S * g.T;                // R·S·T: one patch row
  const int64_t total = int64_t(g.N) * g.P * g.Q * depth;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    // Plain loop form: for i, r, s, t: patches[i][(r·S + s)·T + t] = x[...]; e is (i, j) flattened.
    const int64_t i = e / depth;
    const int j = int(e - i * depth);
    const int t = j % g.T, rs = j / g.T, s = rs % g.S, r = rs / g.S;
    const int q = int(i % g.Q);
    const int64_t np = i / g.Q;
    const int p = int(np % g.P), n = int(np / g.P);
    const int ih = p * g.stride + r - g.pad, iw = q * g.stride + s - g.pad;
    Element v = Element(0.f);
    if (ih >= 0 && ih < g.H && iw >= 0 && iw < g.W)
      v = x[((int64_t(n) * g.H + ih) * g.W + iw) * g.C + int64_t(group) * g.T + t];
    patches[e] = v;
  }
}

// Group `group`'s whole patch matrix, [N·P·Q, R·S·T], into `patches`, on the default stream.
template <class Element> void im2col(const ConvGeometry& g, int group, const Element* x, Element* patches) {
  const int64_t total = int64_t(g.N) * g.P * g.Q * g.R * g.S * g.T;
  const int64_t blocks = std::min<int64_t>(ceil_div<int64_t>(total, kIm2colThreads), kIm2colMaxBlocks);
  im2col_kernel<Element><<<unsigned(blocks), kIm2colThreads>>>(g, group, x, patches);
  check_launch("im2col_kernel");
}

}  // namespace convlab::gpu
