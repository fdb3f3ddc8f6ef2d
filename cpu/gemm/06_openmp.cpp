// cpu/gemm/06_openmp.cpp — lesson 03, rung 6: every core, one shared B panel.
//
// Idea over 05_microkernel: the same five loops, kernel and blocking, on all
// OpenMP threads. Which loop to split decides who shares what:
//
//   for jc step NC:                          (all threads together)
//     for pc step KC:
//       pack B panel             <- split over threads by micro-panel: each packs a share
//       -- barrier: the whole panel is packed before anyone reads it --
//       for ic step MC           <- split over threads: each row block to whichever thread is free
//         pack A block           <- into that thread's own buffer (its own L2)
//         macro-kernel           (05's, unchanged)
//       -- barrier: nobody repacks B while another thread still reads it --
//
// Splitting loop 3 (ic) matches this machine: each core has a private 1 MiB
// L2 that holds its own packed A block, and the one packed B panel is shared
// through the L3. A row block of C belongs to one thread, so no two threads
// ever touch the same output, and there are only two barriers per depth
// slice. The row blocks are cut to a multiple of the thread count (each at
// most MC rows, a whole number of MR-row micro-panels, so the only partial
// tiles are still at the matrix edge) and handed out first come, first served.
//
// Plain loop equivalent (what the threads compute between them):
//   #pragma omp parallel for schedule(dynamic)   // over row blocks of C
//   for each row block [r0, r1):  C[r0:r1, :] = A[r0:r1, :] · B   (05's algorithm)
// except that B is packed once per slice for all threads, not once per thread.
//
// Cost: 05's work plus two barriers per KC slice; a skinny M (fewer than
// MR × threads rows) leaves threads idle, as loop 3 then has too few blocks.
// Workspace: the B panel once and one A block per thread, sized for
// omp_get_max_threads() when the case is built (run() uses the same count,
// so OMP_NUM_THREADS must not change in between).
// Run just this: build/convlab run gemm/cpu/06_openmp   (OMP_NUM_THREADS=n to choose n)
#include <omp.h>

#include <algorithm>
#include <cstddef>

#include "core/ops/gemm.hpp"
#include "cpu/gemm/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;

int thread_count() { return omp_get_max_threads(); }

constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

std::size_t workspace_bytes(const GemmProblem& p) { return packed_workspace_bytes(p, thread_count()); }

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  const float* A = static_cast<const float*>(args.a);  // [M, K] row-major
  const float* B = static_cast<const float*>(args.b);  // [K, N] row-major
  float* C = static_cast<float*>(args.c);              // [M, N] row-major
  const std::ptrdiff_t lda = p.K, ldb = p.N, ldc = p.N;
  const MicroKernel kernel = selected_micro_kernel().kernel;

  const int threads = thread_count();                      // as many as the workspace has A blocks for
  float* bp = static_cast<float*>(args.workspace);         // the shared packed B panel
  float* ap_all = bp + packed_b_floats(p);                 // then one packed A block per thread
  const std::size_t ap_floats = packed_a_floats(p);

  // Loop 3's row blocks, dealt out evenly: a multiple of `threads` blocks of
  // at most MC rows, each a whole number of MR-row micro-panels.
  const int row_blocks = ceil_div(ceil_div(p.M, kMC), threads) * threads;
  const int block_rows = ceil_div(ceil_div(p.M, row_blocks), kMR) * kMR;  // ≤ MC

#pragma omp parallel num_threads(threads)
  {
    float* ap = ap_all + std::size_t(omp_get_thread_num()) * ap_floats;  // this thread's A block

    for (int jc = 0; jc < p.N; jc += kNC) {                // loop 5
      const int nc = std::min(kNC, p.N - jc);
      const int n_panels = ceil_div(nc, kNR);
      for (int pc = 0; pc < p.K; pc += kKC) {              // loop 4
        const int kc = std::min(kKC, p.K - pc);
        // Pack B together: micro-panel jp goes to Bp + jp·NR·kc, whoever packs it.
#pragma omp for schedule(static)
        for (int jp = 0; jp < n_panels; ++jp)
          pack_b_micropanel(kc, std::min(kNR, nc - jp * kNR), B + pc * ldb + jc + jp * kNR, ldb,
                            bp + std::ptrdiff_t(jp) * kNR * kc);
        // (implicit barrier at the end of `omp for`: the panel is complete)

        // Loop 3, shared out: a thread takes the next row block when it is
        // done with its last (dynamic), so a core slowed by something else
        // running on it does fewer blocks instead of holding the others up.
#pragma omp for schedule(dynamic, 1) nowait
        for (int blk = 0; blk < row_blocks; ++blk) {
          const int ic = blk * block_rows;
          if (ic >= p.M) continue;                         // rounding left a spare block
          const int mc = std::min(block_rows, p.M - ic);
          pack_a(mc, kc, A + ic * lda + pc, lda, ap);
          macro_kernel(mc, nc, kc, ap, bp, C + ic * ldc + jc, ldc, /*accumulate=*/pc > 0, kernel);  // loops 2, 1
        }
#pragma omp barrier  // nobody repacks B while another thread still reads it
      }
    }
  }
}

const Register<GemmProblem> reg{{
    .name = "06_openmp",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "05 on all threads: rows of C split over threads, B panel packed together and shared",
}};

}  // namespace
}  // namespace convlab
