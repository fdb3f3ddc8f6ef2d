// cpu/gemm/03f_openmp.cpp — lesson 03, rung 03f: every core, one shared B panel.
//
// Idea over 03e_microkernel: the same five loops, kernel and blocking, on all
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
// Run just this: build/convlab run gemm/cpu/03f_openmp   (OMP_NUM_THREADS=n to choose n)
#include <algorithm>
#include <cstddef>

#include "ops/gemm.hpp"
#include "cpu/lib/threads.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;

using cpu::thread_count;

std::size_t workspace_bytes(const GemmProblem& p) { return packed_workspace_bytes(p, thread_count()); }

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  // The parallel five-loop driver lives in gemm_kernels.hpp as
  // gemm_packed_parallel(), because lesson 02's im2col conv calls the very same
  // driver on views into larger tensors. Read it there: loop 5 and loop 4 run
  // on every thread, the B panel is packed by all threads together (`omp for`
  // over its micro-panels, then the implied barrier), and loop 3's row blocks
  // of C are dealt out dynamically, each thread packing its own A block.
  StridedGemm g;
  g.M = p.M, g.N = p.N, g.K = p.K;
  g.a = static_cast<const float*>(args.a), g.lda = p.K;  // [M, K] row-major
  g.b = static_cast<const float*>(args.b), g.ldb = p.N;  // [K, N] row-major
  g.c = static_cast<float*>(args.c), g.ldc = p.N;        // [M, N] row-major
  gemm_packed_parallel(g, args.workspace, thread_count(), selected_micro_kernel().kernel);
}

const Register<GemmProblem> reg{{
    .name = "03f_openmp",
    .device = Device::cpu,
    .lesson = 3,
    .supports = f32_only<GemmProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "03e_microkernel on all threads: rows of C split over threads, B panel packed together and shared",
}};

}  // namespace
}  // namespace convlab
