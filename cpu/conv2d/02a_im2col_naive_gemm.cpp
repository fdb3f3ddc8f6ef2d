// cpu/conv2d/02a_im2col_naive_gemm.cpp — lesson 02, rung 02a: convolution as a matrix product.
//
// Idea over lesson 01's direct loops: copy, for every output pixel, the R·S·T
// inputs its window covers into one row of a "patch matrix" (im2col, see
// cpu/lib/im2col.hpp), zero padding written out explicitly. Then the whole
// convolution is ONE matrix product per group,
//
//   y_g [N·P·Q, K/G]  =  patches_g [N·P·Q, R·S·T]  ·  w_gᵀ      (w_g = [K/G, R·S·T], KRSC rows)
//
// and y_g is a column slice of NHWC y, written in place. The GEMM here is the
// plain three-loop definition (lesson 03's rung 03a): its point is the
// *structure*, not the speed — once a convolution is a GEMM, all of lesson 03
// applies to it unchanged (rung 02b_im2col_gemm does exactly that).
//
// Both operands of every dot product are contiguous: a patch row and a KRSC
// weight row both run along (r, s, t). Compare 01a_seven_loop, where the
// window's R·S pieces are scattered through x and the padding test sits in
// the loop: here the gather happened once, up front, for all K channels.
//
// Cost: the same 2·N·P·Q·K·R·S·T FLOPs, plus writing and reading the patch
// matrix. Workspace: one group's patch matrix, N·P·Q·R·S·T floats — about
// R·S times the input for stride 1 (9× for 3x3), reported by the harness as
// workspace_bytes. For 1x1, stride 1, pad 0 the patch matrix IS x (viewed as
// [N·H·W, C]): no copy and workspace 0. One thread, like 01a_seven_loop; the
// naive GEMM's single dependency chain per output (one `acc`) is lesson 03's
// first problem, not this lesson's.
// Run just this: build/convlab run conv2d/cpu/02a_im2col_naive_gemm
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ops/conv2d.hpp"
#include "cpu/lib/im2col.hpp"

namespace convlab {
namespace {

using namespace cpu_conv;

std::size_t workspace_bytes(const ConvProblem& p) { return patch_matrix_floats(p) * sizeof(float); }

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* x = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const float* w = static_cast<const float*>(a.w);  // [K, R, S, C/groups] KRSC = per group [K/G, R·S·T]
  float* y = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC = [N·P·Q, K]
  const bool view = patch_matrix_is_a_view(p);
  float* ws = static_cast<float*>(a.workspace);     // [N·P·Q, R·S·T] one group's patch matrix
  if (!view && !ws) throw std::runtime_error("conv2d/cpu/02a_im2col_naive_gemm: missing workspace");

  const int64_t M = patch_rows(p);                  // GEMM rows: output pixels
  const int64_t depth = patch_cols(p);              // GEMM depth: R·S·T
  const int Kg = p.K_per_group();                   // GEMM columns: this group's output channels

  for (int g = 0; g < p.groups; ++g) {
    // A = group g's patch matrix: built in the workspace, or x itself (1x1 view).
    const float* A = ws;
    int64_t lda = depth;
    if (view) {
      A = x + int64_t(g) * p.T();                   // x as [N·H·W, C], columns g·T … g·T + T − 1
      lda = p.C;
    } else {
      im2col_rows(p, x, g, 0, M, ws, /*parallel=*/false);  // the whole [N·P·Q, R·S·T] matrix
    }
    const float* Wg = w + int64_t(g) * Kg * depth;  // [K/G, R·S·T]: row k = column k of B
    float* Yg = y + int64_t(g) * Kg;                // [N·P·Q, K/G] slice of y, leading dimension K

    // The naive GEMM: Y_g(i, k) = Σ_j A(i, j) · W_g(k, j) — one dot product per output.
    for (int64_t i = 0; i < M; ++i)
      for (int k = 0; k < Kg; ++k) {
        const float* a_row = A + i * lda;
        const float* w_row = Wg + k * depth;
        float acc = 0.f;
        for (int64_t j = 0; j < depth; ++j) acc += a_row[j] * w_row[j];
        Yg[i * p.K + k] = acc;
      }
  }
}

const Register<ConvProblem> reg{{
    .name = "02a_im2col_naive_gemm",
    .device = Device::cpu,
    .lesson = 2,
    .supports = f32_only<ConvProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::single,
    .idea = "im2col into a [N·P·Q, R·S·T] workspace, then y = patches·wᵀ as a naive GEMM (1x1: x is the matrix)",
}};

}  // namespace
}  // namespace convlab
