// gpu/conv_pool/07b_fused.cu — lesson 07, GPU rung 07b: conv, scale/bias, ReLU and 2x2 max-pool in one kernel.
//
// Idea over 07a_layer_by_layer: rung 07a's kernels 2 and 3 only ever touch
// values that kernel 1 had in registers a moment earlier. So finish the layer
// there: after the implicit GEMM's main loop, each thread scales, biases and
// pools its accumulators, and stores only the pooled outputs. y_full never
// reaches memory; traffic falls to the fused floor (ConvPoolProblem::min_bytes:
// x, w, scale, bias once, y_pool once) — 899 MB → 77 MB on the bench shape.
//
// The main loops are lesson 04's, unchanged and not copied: the fp32 kernel of
// conv2d/gpu/05 (gpu/lib/implicit_gemm_f32.cuh) and the tensor-core kernel
// of conv2d/gpu/06 (gpu/lib/implicit_gemm_tensor_core.cuh), instantiated
// here with an output policy that pools. Two things make that possible:
//
//   1. Row order. A 2x2 window's four pixels are scattered over two image
//      rows, i.e. GEMM rows m and m + Q apart in lesson 04's pixel order —
//      usually in different CTAs. So number the GEMM rows by WINDOW instead.
//      The im2col view just decodes m differently; everything else is the
//      same GEMM. The fp32 kernel uses gpu::window_order:
//        m = 4·window + 2a + b  ↔  pixel (n, 2i+a, 2j+b),  window = (n·P2 + i)·Q2 + j,
//      four consecutive rows are one window, a 128-row CTA tile is 32 whole
//      windows, and the odd last row / column of the conv output (which floor
//      pooling drops) is no GEMM row at all: M = 4·N·P2·Q2. The tensor-core
//      kernel reorders the rows within each 64-row block (point 2).
//
//   2. Where a window's four rows sit.
//        fp32 kernel: a thread owns rows m_piece + 0..3 (m_piece a multiple
//          of 4) of every 4x4 piece: a whole window in ONE thread's registers.
//          The pool is four fmaxf per channel, no communication.
//        tensor-core kernel: a warp owns 64 rows from warp_m, a multiple of
//          64, and the mma.m16n8k16 accumulator gives the lane with group g
//          = lane / 4 eight of them: rows 16·mi + 8·h + g of its four m16
//          tiles mi, halves h (gpu::mma_c_coord). In window order those eight
//          rows are pieces of eight windows, so pooling needed rows from other
//          lanes. gpu::warp_window_order picks the numbering that makes them
//          two WHOLE windows instead: in block b (rows 64b .. 64b+63),
//            m = 64·b + 16·corner + 8·h + g   ↔   corner `corner` of window 16·b + 2g + h,
//          so tile mi IS the corner and half h picks one of the lane's two
//          windows. As in fp32, the pool needs no other lane: three fmaxf per
//          value, and every lane stores. The price is a partial last block:
//          M = 4·N·P2·Q2 rounded up to 64; its rows past the last window decode
//          to a pixel outside the image (they load nothing) and are not stored.
//
// The scale is applied to each of the four values BEFORE the max (a negative
// scale reverses the order); the ReLU may come after (it commutes with max).
// Output stores shrink 4× and are 32-bit (f16 pairs) or float4 (fp32).
//
// Supported: f32 (any shape, vectorized when T, K/groups % 4 == 0 and aligned)
// and f16 (fast loads when T % 8 == 0), within the lesson 04 kernels' limits.
// Run just this: build/convlab run conv_bias_relu_pool/gpu/07b_fused --shape N=64,H=112,C=16,K=128,R=3,pad=1,dtype=f16
#include <cstdint>

#include "ops/conv_pool.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/gemm_tiles.cuh"
#include "gpu/lib/implicit_gemm_f32.cuh"
#include "gpu/lib/implicit_gemm_tensor_core.cuh"

namespace convlab {
namespace {

using gpu::ConvGeometry;
using gpu::OutputPixel;

constexpr int kWindowRows = 4;  // GEMM rows per 2x2 window: its four corners
static_assert(gpu::igemm_f32::kPiece == kWindowRows,
              "fp32 kernel: a thread's 4-row piece must be exactly one window");
static_assert(gpu::igemm_f32::kBlockM % kWindowRows == 0, "fp32 kernel: CTA tiles must hold whole windows");
static_assert(gpu::igemm_tc::kWarpM == gpu::kWarpWindowRows && gpu::igemm_tc::kBlockM % gpu::kWarpWindowRows == 0,
              "tensor-core kernel: a warp's rows must be exactly one block of warp_window_order");
static_assert(gpu::igemm_tc::kMmaTilesM == kWindowRows && gpu::igemm_tc::kMmaM == gpu::kWarpWindows,
              "tensor-core kernel: a warp's m16 tile mi must be corner mi of the block's 16 windows");

// ---- the pooling epilogue of the fp32 kernel ----------------------------------------------
//
// Plain form, for the thread's piece of rows m0 .. m0+3 (= window m0 / 4) and column k:
//   y[window, g·Kg + k] = max(max_d (acc[m0 + d][k]·scale + bias), 0)
struct PoolF32 {
  float* y;            // [N, P/2, Q/2, K] NHWC = [windows, K]
  const float* scale;  // [K]
  const float* bias;   // [K]

  __device__ static OutputPixel pixel(const ConvGeometry& cg, int m) { return gpu::window_order(cg, m); }

  template <bool kVectorized>
  __device__ void store(const ConvGeometry& cg, int M, int group,
                        const float (&acc)[gpu::igemm_f32::kThreadM][gpu::igemm_f32::kThreadN],
                        const int (&m_piece)[gpu::igemm_f32::kRepeatM],
                        const int (&k_piece)[gpu::igemm_f32::kRepeatN]) const {
    using namespace gpu::igemm_f32;  // kRepeatM, kRepeatN, kPiece
    const int Kg = cg.K_per_group;
    const float* group_scale = scale + group * Kg;
    const float* group_bias = bias + group * Kg;
#pragma unroll
    for (int ip = 0; ip < kRepeatM; ++ip) {
      const int m0 = m_piece[ip];  // a multiple of 4; M is too: the piece is all in or all out
      if (m0 >= M) continue;
      float* y_row = y + int64_t(m0 / kWindowRows) * cg.K + group * Kg;
#pragma unroll
      for (int jp = 0; jp < kRepeatN; ++jp) {
        const int k = k_piece[jp];
        float v[kPiece];
#pragma unroll
        for (int e = 0; e < kPiece; ++e) {
          const int col = jp * kPiece + e;
          const float s = k + e < Kg ? group_scale[k + e] : 0.f, b = k + e < Kg ? group_bias[k + e] : 0.f;
          float best = acc[ip * kPiece][col] * s + b;
#pragma unroll
          for (int d = 1; d < kWindowRows; ++d) best = fmaxf(best, acc[ip * kPiece + d][col] * s + b);
          v[e] = fmaxf(best, 0.f);
        }
        if constexpr (kVectorized) {  // Kg % 4 == 0: all four inside or none; K % 4 == 0 and y aligned
          if (k < Kg) *reinterpret_cast<float4*>(y_row + k) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int e = 0; e < kPiece; ++e)
            if (k + e < Kg) y_row[k + e] = v[e];
        }
      }
    }
  }
};

// ---- the pooling epilogue of the tensor-core kernel ----------------------------------------
//
// Rows in gpu::warp_window_order. Lane 4g + t holds acc[mi][ni][2h + e]: warp row
// 16·mi + 8·h + g, column 2t + e of n8 tile ni (gpu::mma_c_coord), which is corner
// mi of window 16·block + 2g + h (block = warp_m / 64). Plain form, per lane:
//
//   for ni, h, e:   window = 16·block + 2g + h,  k = warp_n + 8·ni + 2t + e
//     if window < N·P2·Q2:
//       y[window, k] = max(max_mi (acc[mi][ni][2h + e]·scale[k] + bias[k]), 0)
//
// Every value a max needs is in the lane's own registers: three fmaxf per output,
// no shuffles, and every lane stores its (k, k + 1) pair of each of its two windows.
template <class Element> struct PoolTensorCore {
  Element* y;            // [N, P/2, Q/2, K] NHWC = [windows, K]
  const Element* scale;  // [K]
  const Element* bias;   // [K]
  bool pair_stores;      // Kg even and y 4-byte aligned: (k, k+1) is one aligned 32-bit store

  __device__ static OutputPixel pixel(const ConvGeometry& cg, int m) { return gpu::warp_window_order(cg, m); }

  // M, whole 64-row blocks, bounds nothing here: the window count does.
  __device__ void store(const ConvGeometry& cg, int /*M*/, int group, int warp_m, int warp_n, int lane,
                        const float (&acc)[gpu::igemm_tc::kMmaTilesM][gpu::igemm_tc::kMmaTilesN][4]) const {
    using namespace gpu::igemm_tc;  // kMmaTilesM, kMmaTilesN, kMmaN
    const int Kg = cg.K_per_group;
    const int g = lane / 4, t = lane % 4;
    const int windows = gpu::window_count(cg);
    const int first_window = warp_m / gpu::kWarpWindowRows * gpu::kWarpWindows + 2 * g;  // h = 0; h = 1 is next
    Element* y_group = y + int64_t(group) * Kg;
#pragma unroll
    for (int ni = 0; ni < kMmaTilesN; ++ni) {
      const int k = warp_n + ni * kMmaN + 2 * t;  // this lane's two columns k, k + 1 (within the group)
      const bool in0 = k < Kg, in1 = k + 1 < Kg;
      const float s0 = in0 ? gpu::to_float(scale[group * Kg + k]) : 0.f;
      const float b0 = in0 ? gpu::to_float(bias[group * Kg + k]) : 0.f;
      const float s1 = in1 ? gpu::to_float(scale[group * Kg + k + 1]) : 0.f;
      const float b1 = in1 ? gpu::to_float(bias[group * Kg + k + 1]) : 0.f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int window = first_window + h;
        if (window >= windows) continue;  // a padding row of the last block
        float v0 = acc[0][ni][2 * h] * s0 + b0, v1 = acc[0][ni][2 * h + 1] * s1 + b1;
#pragma unroll
        for (int corner = 1; corner < kMmaTilesM; ++corner) {
          v0 = fmaxf(v0, acc[corner][ni][2 * h] * s0 + b0);
          v1 = fmaxf(v1, acc[corner][ni][2 * h + 1] * s1 + b1);
        }
        v0 = fmaxf(v0, 0.f);
        v1 = fmaxf(v1, 0.f);
        Element* y_row = y_group + int64_t(window) * cg.K;
        if (pair_stores) {
          if (in0) *reinterpret_cast<uint32_t*>(y_row + k) = gpu::pack_pair<Element>(v0, v1);
        } else {
          if (in0) y_row[k] = gpu::from_float<Element>(v0);
          if (in1) y_row[k + 1] = gpu::from_float<Element>(v1);
        }
      }
    }
  }
};

// GEMM rows: every pixel some window reads, and no other (fp32, window_order) ...
int64_t window_rows(const ConvPoolProblem& p) { return int64_t(kWindowRows) * p.N * p.P2() * p.Q2(); }
// ... rounded up to whole 64-row blocks (tensor cores, warp_window_order).
int64_t warp_window_rows(const ConvPoolProblem& p) {
  return gpu::ceil_div<int64_t>(window_rows(p), gpu::kWarpWindowRows) * gpu::kWarpWindowRows;
}

bool supports(const ConvPoolProblem& p) {
  if (!p.valid()) return false;
  if (p.dtype == DType::f32) return gpu::igemm_f32::fits(window_rows(p), p.conv());
  if (p.dtype == DType::f16) return gpu::igemm_tc::fits(warp_window_rows(p), p.conv());
  return false;
}

void run(const ConvPoolProblem& p, const Args<ConvPoolProblem>& a) {
  const ConvGeometry cg = gpu::geometry_of(p.conv());
  if (p.dtype == DType::f32) {
    const int M = int(window_rows(p));
    const auto* x = static_cast<const float*>(a.x);
    const auto* w = static_cast<const float*>(a.w);
    auto* y = static_cast<float*>(a.y);
    const bool vectorized = cg.T % 4 == 0 && cg.K_per_group % 4 == 0 && gpu::aligned_16(x) && gpu::aligned_16(w) &&
                            gpu::aligned_16(y);
    gpu::igemm_f32::launch(cg, M, x, w,
                           PoolF32{y, static_cast<const float*>(a.scale), static_cast<const float*>(a.bias)},
                           vectorized);
    return;
  }
  gpu::visit_dtype<__half>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    auto* y = static_cast<Element*>(a.y);
    const bool pair_stores = cg.K_per_group % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
    const int M = int(warp_window_rows(p));
    gpu::igemm_tc::launch(cg, M, static_cast<const Element*>(a.x), static_cast<const Element*>(a.w),
                          PoolTensorCore<Element>{y, static_cast<const Element*>(a.scale),
                                                  static_cast<const Element*>(a.bias), pair_stores});
  });
}

const Register<ConvPoolProblem> reg{{
    .name = "07b_fused",
    .device = Device::gpu,
    .lesson = 7,
    .supports = supports,
    .run = run,
    .idea = "lesson 04's implicit-GEMM kernels with GEMM rows in 2x2-window order; scale/bias/ReLU and the "
            "max-pool in registers (f16: rows ordered so each lane holds whole windows), only the pooled y stored",
}};

}  // namespace
}  // namespace convlab
