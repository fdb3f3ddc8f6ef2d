// cpu/conv2d/02b_im2col_gemm.cpp — lesson 02, rung 02b: im2col + the suite's fast GEMM.
//
// Idea over 02a_im2col_naive_gemm: the same patch rows, built by all threads,
// and the product y_g = patches_g · w_gᵀ handed to lesson 03's finished GEMM
// — Goto's five loops, packed micro-panels, the AVX2 6×16 register
// micro-kernel and rung 03f's OpenMP split (cpu/lib/gemm_kernels.hpp,
// gemm_packed_parallel). Nothing convolution-specific is left in the hot
// loop: that is the whole point of im2col. The GEMM sees
//
//   A = patch rows  [rows, R·S·T]  rows R·S·T apart  (1x1: x itself, rows C apart)
//   B = w_gᵀ        given as w_g = [K/G, R·S·T] row-major: "B transposed"
//   C = y_g rows    [rows, K/G]    rows K apart      (a column slice of NHWC y)
//
// The transposed B costs nothing: the GEMM packs B into micro-panels anyway,
// and pack_bt_micropanel reads w's rows where pack_b would read B's.
//
//   plain form (03):                              here:
//     A = im2col(all N·P·Q rows)                    for each slab [i0, i0 + rows) of output pixels:
//     y_g = A · w_gᵀ  (naive loops)                   A = im2col_rows(i0, rows)     rows split over threads
//                                                     y_g[i0 : i0+rows] = A · w_gᵀ  gemm_packed_parallel
//
// Taken to its end — slabs so small they live in registers, built inside the
// GEMM's own A packing — this becomes lesson 04's implicit GEMM, which never
// stores the patch matrix at all.
//
// Cost: the GEMM's FLOPs, plus writing and re-reading the patch rows through
// the caches (≈ R·S × the input, no longer through DRAM), plus repacking B
// once per slab (K/G · R·S·T floats, small). A skinny GEMM (K/G = 64 columns)
// packs each A block for only 64 columns of work, so packing weighs more than
// in a square GEMM. Workspace: one slab (≤ kSlabBytes, rows a multiple of the
// GEMM's MC) + the GEMM's packed B panel and one packed A block per thread,
// sized for omp_get_max_threads() when the case is built. 1x1, stride 1,
// pad 0: x is the patch matrix (a view): one GEMM per group, no slab at all.
// Run just this: build/convlab run conv2d/cpu/02b_im2col_gemm   (OMP_NUM_THREADS=n to choose n)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ops/conv2d.hpp"
#include "cpu/lib/threads.hpp"
#include "cpu/lib/im2col.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_conv;
using namespace cpu_gemm;

constexpr std::size_t kSlabBytes = std::size_t(4) << 20;
constexpr std::size_t kL3Bytes = std::size_t(32) << 20;  // shared by both cores
static_assert(kSlabBytes <= kL3Bytes / 4,
              "a slab must still be in the L3 when the GEMM reads it back, next to x, y's rows and the other "
              "core's working set");
static_assert(kSlabBytes >= std::size_t(kMC) * 64 * sizeof(float),
              "a slab should hold several of the GEMM's MC-row blocks for typical depths, or the threads sit in "
              "barriers");

using cpu::thread_count;

// Output pixels per slab: a whole number of MC-row blocks (at least one),
// no more than the problem has. A row of the patch matrix is R·S·T floats.
int64_t slab_rows(const ConvProblem& p) {
  const int64_t row_bytes = patch_cols(p) * int64_t(sizeof(float));
  const int64_t blocks = std::max<int64_t>(1, int64_t(kSlabBytes) / (row_bytes * kMC));
  return std::min(blocks * kMC, patch_rows(p));
}

// The GEMM of one slab (or, for the 1x1 view, of all rows): M rows, K/G columns, depth R·S·T.
GemmProblem slab_gemm(const ConvProblem& p) {
  const int64_t rows = patch_matrix_is_a_view(p) ? patch_rows(p) : slab_rows(p);
  return {int(rows), p.K_per_group(), int(patch_cols(p)), DType::f32};
}

// Workspace: [slab of patch rows, rounded to a cache line][packed B panel | packed A blocks]
std::size_t slab_floats_aligned(const ConvProblem& p) {
  if (patch_matrix_is_a_view(p)) return 0;
  return round_up(std::size_t(slab_rows(p) * patch_cols(p)), kAlignFloats);
}
std::size_t workspace_bytes(const ConvProblem& p) {
  return slab_floats_aligned(p) * sizeof(float) + packed_workspace_bytes(slab_gemm(p), thread_count());
}

bool supports(const ConvProblem& p) {
  // The GEMM counts rows, columns and depth in int.
  return p.dtype == DType::f32 && patch_rows(p) < (int64_t(1) << 31) && patch_cols(p) < (int64_t(1) << 31);
}

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const float* x = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const float* w = static_cast<const float*>(a.w);  // [K, R, S, C/groups] KRSC = per group [K/G, R·S·T]
  float* y = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC = [N·P·Q, K]
  float* ws = static_cast<float*>(a.workspace);     // [slab | packed B panel | packed A blocks]
  if (!ws) throw std::runtime_error("conv2d/cpu/02b_im2col_gemm: missing workspace");
  float* slab = ws;                                 // [slab rows, R·S·T] patch rows
  void* gemm_ws = ws + slab_floats_aligned(p);      // 64-byte aligned: the slab part is rounded to 16 floats
  const MicroKernel kernel = selected_micro_kernel().kernel;
  const int threads = thread_count();               // as many as the workspace has A blocks for

  const bool view = patch_matrix_is_a_view(p);
  const int64_t M = patch_rows(p), depth = patch_cols(p);
  const int Kg = p.K_per_group();
  const int64_t step = view ? M : slab_rows(p);

  for (int g = 0; g < p.groups; ++g) {
    for (int64_t i0 = 0; i0 < M; i0 += step) {
      const int64_t rows = std::min(step, M - i0);
      StridedGemm m;
      m.M = int(rows);
      m.N = Kg;
      m.K = int(depth);
      if (view) {
        m.a = x + int64_t(g) * p.T();               // x as [N·H·W, C], columns g·T … g·T + T − 1
        m.lda = p.C;
      } else {
        im2col_rows(p, x, g, i0, rows, slab, /*parallel=*/true);
        m.a = slab;                                 // rows i0 … i0 + rows − 1 of the patch matrix
        m.lda = depth;
      }
      m.b = w + int64_t(g) * Kg * depth;            // w_g [K/G, R·S·T] = Bᵀ
      m.ldb = depth;
      m.b_transposed = true;
      m.c = y + i0 * p.K + int64_t(g) * Kg;         // rows i0 …, columns g·K/G … of y as [N·P·Q, K]
      m.ldc = p.K;
      gemm_packed_parallel(m, gemm_ws, threads, kernel);
    }
  }
}

const Register<ConvProblem> reg{{
    .name = "02b_im2col_gemm",
    .device = Device::cpu,
    .lesson = 2,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "im2col in cache-sized slabs on all threads + lesson 03's packed AVX2 GEMM (B = wᵀ packed from KRSC)",
}};

}  // namespace
}  // namespace convlab
