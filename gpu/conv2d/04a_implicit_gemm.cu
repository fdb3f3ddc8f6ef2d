// gpu/conv2d/04a_implicit_gemm.cu — lesson 04, GPU rung 04a: implicit GEMM, fp32 on the CUDA cores.
//
// Idea over 01d_smem_tile (and over lesson 02's im2col + GEMM): a convolution
// IS a GEMM, per group g,
//
//   Y[M, Kg] = A[M, RST] · B[RST, Kg]     M = N·P·Q output pixels, Kg = K/groups, RST = R·S·T
//
//   A[m, j] = x[n, p·stride + r − pad, q·stride + s − pad, g·T + t]   (0 in the padding)
//             with m = (n·P + p)·Q + q and j = (r·S + s)·T + t
//   B[j, k] = w[g·Kg + k, j]              KRSC w is [K, RST] row-major: B column-major
//   Y[m, k] = y[m, g·Kg + k]              NHWC y is [N·P·Q, K] row-major
//
// so take lesson 03's best SIMT GEMM (gpu/gemm/03m_double_buffering as it was
// written: 128×128 block tiles, K slices of 8, 8×8 outputs per thread, two
// shared stages, register prefetch; rung 03m has since been re-tiled to
// 128×128×16 with 8×16 per lane, which this kernel has not tried) and change
// only its two tile loaders. A's loader no
// longer reads a stored matrix: it computes, for its row m and its 4 columns
// j..j+3, where in x those values live — the im2col matrix is a virtual view,
// never written (workspace 0; lesson 02 wrote R·S copies of x first). B's
// loader reads w's rows, i.e. B's columns, so B is transposed on its way into
// shared memory exactly as A already was in rung 03m.
//
// Cost of the view, and how it is amortised: a thread's row m is fixed for the
// whole kernel, so (n, p, q) — two divisions — is decoded once. Its column j
// advances by 8 per K slice, so the tap (r, s) and channel t are carried as a
// cursor and stepped forward by additions (no division in the loop). What is
// left per slice and thread is a bounds test and one address for 4 floats,
// next to the 512 FMAs the thread does on that slice: a few per cent.
// The reads of x are less regular than a GEMM's: a warp's 16 rows are 16
// neighbouring output pixels, whose inputs sit C·4 bytes apart (stride 1), one
// 32-byte sector each — every sector fully used, but spread over 16 lines.
//
// Supported: fp32, any N, H, W, C, K, R, S, stride, pad, groups; float4 path
// when T % 4 == 0 and K/groups % 4 == 0 (16-byte aligned buffers), predicated
// scalar path otherwise. Limits: N·P·Q < 2³¹ with ceil(N·P·Q/128) ≤ 65535,
// H·W·C < 2³¹, groups ≤ 65535.
// The kernel itself lives in gpu/lib/implicit_gemm_f32.cuh (tile diagram,
// contract, tunables), shared with lesson 07's fused conv + pool; this file
// instantiates it with the plain output policy, StoreY.
// Run just this: build/convlab run conv2d/gpu/04a_implicit_gemm
#include <climits>
#include <cstdint>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/gemm_tiles.cuh"
#include "gpu/lib/implicit_gemm_f32.cuh"  // the kernel (shared with lesson 07's fused layer)

namespace convlab {
namespace {

using gpu::ConvGeometry;

int64_t gemm_rows(const ConvProblem& p) { return int64_t(p.N) * p.P() * p.Q(); }

bool supports(const ConvProblem& p) { return p.dtype == DType::f32 && gpu::igemm_f32::fits(gemm_rows(p), p); }

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const auto* x = static_cast<const float*>(a.x);
  const auto* w = static_cast<const float*>(a.w);
  auto* y = static_cast<float*>(a.y);
  const ConvGeometry cg = gpu::geometry_of(p);
  const bool vectorized = cg.T % 4 == 0 && cg.K_per_group % 4 == 0 && gpu::aligned_16(x) && gpu::aligned_16(w) &&
                          gpu::aligned_16(y);
  gpu::igemm_f32::launch(cg, int(gemm_rows(p)), x, w, gpu::igemm_f32::StoreY{y}, vectorized);
}

const Register<ConvProblem> reg{{
    .name = "04a_implicit_gemm",
    .device = Device::gpu,
    .lesson = 4,
    .supports = supports,
    .run = run,
    .idea = "gemm rung 03m's pipeline with its first tiles (128x128x8, 8x8/thread, double-buffered) with an A loader that reads x through "
            "the im2col address map; no workspace",
}};

}  // namespace
}  // namespace convlab
