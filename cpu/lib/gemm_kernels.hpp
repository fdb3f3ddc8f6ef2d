// cpu/lib/gemm_kernels.hpp — the shared pieces of lesson 03's CPU GEMM
// ladder: every tunable (one block, below), the cache-block routines of rungs
// 03–04, and the packing routines, micro-kernels (AVX2/FMA and portable),
// macro-kernel and one-thread driver of rungs 03e–03f, and (for lesson 02's
// im2col convolution) packing from a transposed B plus rung 03f's OpenMP
// driver on strided views. Header-only, registers nothing; each rung's file
// says which idea it adds and calls these, so a later rung reuses an earlier
// one's code instead of copying it.
//
// Rungs 03c–03d: 02's (i, k, j) loops run inside blocks that fit the caches;
// 04 first copies each block into a contiguous buffer.
//
//   for jb step BN:  for kb step BK:  [04: pack B block]      B block: L2
//     for ib step BM:  [04: pack A block]
//       block_multiply_add: for i, k, j: C(i,j) += A(i,k)·B(k,j)   row of C: L1
//
// Rungs 03e–03f: Goto's structure (K. Goto, R. van de Geijn, "Anatomy of
// high-performance matrix multiplication", 2008) as BLIS spells it out: five
// loops around a tiny register-resident kernel, each loop choosing which
// operand stays in which level of the memory hierarchy.
//
//   for jc in [0, N) step NC:                 loop 5: a column panel of B and C
//     for pc in [0, K) step KC:               loop 4: a depth slice
//       pack B[pc:pc+KC, jc:jc+NC] -> Bp      KC × NC, lives in L3
//       for ic in [0, M) step MC:             loop 3: a row block of A and C
//         pack A[ic:ic+MC, pc:pc+KC] -> Ap    MC × KC, lives in L2
//         for jr in [0, NC) step NR:          loop 2 (macro-kernel): one B micro-panel, stays in L1
//           for ir in [0, MC) step MR:        loop 1 (macro-kernel): one A micro-panel, streams from L2
//             C[ir:ir+MR, jr:jr+NR] (+)= Ap[ir] · Bp[jr]     micro-kernel: MR×NR in registers
#pragma once

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/probe.hpp"  // cpu_has_avx2_fma
#include "ops/gemm.hpp"

namespace convlab::cpu_gemm {

// ============================================================================
// Tunables — every one of the ladder, in one place. Sized for this machine
// (AMD EPYC Zen 4: 32 KiB L1d and 1 MiB L2 per core, 32 MiB shared L3, two
// 256-bit FMA pipes with a 4-cycle latency). Change them here and every rung
// follows; the static_asserts say which constraint each one must respect.
// ============================================================================
// Rungs 03c–03d: cache blocks.
inline constexpr int kBlockM = 64;   // rows of A and C per block (the A block is BM × BK)
inline constexpr int kBlockN = 512;  // columns of B and C per block
inline constexpr int kBlockK = 128;  // depth per block (the B block is BK × BN)

// Rungs 03e–03f: register tile and packed panels.
inline constexpr int kMR = 6;     // rows of the C micro-tile: one broadcast of A per row per k
inline constexpr int kNR = 16;    // columns of the C micro-tile: NR/8 AVX2 vectors per row
inline constexpr int kKC = 256;   // depth of the packed panels (k per micro-kernel call)
inline constexpr int kMC = 144;   // rows of the packed A block (kept in L2)
inline constexpr int kNC = 4080;  // columns of the packed B panel (kept in L3)

// The machine facts the constraints refer to.
inline constexpr int kSimdFloats = 8;                  // floats in one AVX2 register (__m256)
inline constexpr int kVectorRegisters = 16;            // ymm0–ymm15 in AVX2 code
inline constexpr int kFmaLatencyCycles = 4;            // Zen 4 / Haswell-class FMA latency
inline constexpr int kFmaPipes = 2;                    // FMAs started per cycle
inline constexpr std::size_t kL1Bytes = 32 * 1024;     // per core
inline constexpr std::size_t kL2Bytes = 1024 * 1024;   // per core
inline constexpr int kAlignFloats = 16;                // 64 bytes: every packed buffer starts on a cache line

inline constexpr int kVectorsPerRow = kNR / kSimdFloats;   // 2 for the 6×16 tile

// Another micro-tile (lesson 03, exercise 6: 6 × 32 or 14 × 32 for AVX-512)
// goes through the very same packing, macro-kernel and five loops: they take
// the tile as template parameters <MR, NR>, which default to kMR, kNR. The
// static_asserts below are about the default tile; a student's tile brings
// its own. Blocks are cut to whole micro-panels of that tile:
template <int MR> inline constexpr int kMCFor = kMC / MR * MR;  // rows of the packed A block
template <int NR> inline constexpr int kNCFor = kNC / NR * NR;  // columns of the packed B panel

static_assert(std::size_t(kBlockK) * kBlockN * sizeof(float) <= kL2Bytes / 2,
              "the B block (BK × BN) is reused by every row of A: it must stay in L2, with room for A and C");
static_assert(2 * std::size_t(kBlockN) * sizeof(float) <= kL1Bytes / 4,
              "a row segment of C and the row of B added into it (BN floats each) should share L1 comfortably");
static_assert(std::size_t(kBlockM) * kBlockK * sizeof(float) <= kL2Bytes / 4,
              "the A block (BM × BK) is reread for every column block: keep it in L2 beside B");

static_assert(kNR % kSimdFloats == 0,
              "a row of the micro-tile must be whole AVX2 vectors (the AVX2 kernel loads B in 8-float pieces)");
static_assert(kMR * kVectorsPerRow + kVectorsPerRow + 1 <= kVectorRegisters,
              "accumulators (MR·NR/8) + one row of B (NR/8) + one broadcast of A must fit the 16 ymm registers, "
              "or the compiler spills accumulators to the stack inside the hot loop");
static_assert(kMR * kVectorsPerRow >= kFmaLatencyCycles * kFmaPipes,
              "need at least latency × pipes independent accumulators, or the FMA pipes wait on their own results");
static_assert(kMC % kMR == 0 && kNC % kNR == 0,
              "blocks must be whole micro-panels, so that only the matrix edge produces partial tiles");
static_assert(std::size_t(kKC) * kNR * sizeof(float) <= kL1Bytes / 2,
              "one packed B micro-panel (KC × NR) must stay in half of L1, the other half streams A micro-panels");
static_assert(std::size_t(kMC) * kKC * sizeof(float) <= kL2Bytes / 2,
              "the packed A block (MC × KC) must stay in half of L2, the rest holds B micro-panels passing through");

constexpr std::size_t round_up(std::size_t x, std::size_t multiple) { return (x + multiple - 1) / multiple * multiple; }

// ============================================================================
// Rungs 03c–03d: one block product, and copying a block out of a matrix.
// ============================================================================

// C block (bm × bn) += A block (bm × bk) · B block (bk × bn), all row-major
// with their own leading dimensions — 02's loop order inside the block:
//
//   for i < bm:  for k < bk:  for j < bn:  C(i,j) += A(i,k) · B(k,j)
//
// Row i of the C block (bn floats) stays in L1 through the k loop; the B block
// is reread from L2 for every i. `omp simd` tells the compiler the j
// iterations are independent (C and B never overlap), so it emits one SIMD
// FMA per vector of j without a run-time overlap check. Additions into each
// C(i, j) still come in increasing k, as in 01 and 02.
inline void block_multiply_add(int bm, int bn, int bk, const float* a, std::ptrdiff_t lda, const float* b,
                               std::ptrdiff_t ldb, float* c, std::ptrdiff_t ldc) {
  for (int i = 0; i < bm; ++i) {
    float* c_row = c + i * ldc;            // bn floats of row i of C: in L1
    for (int k = 0; k < bk; ++k) {
      const float a_ik = a[i * lda + k];
      const float* b_row = b + k * ldb;    // bn floats of row k of the B block: in L2
#pragma omp simd
      for (int j = 0; j < bn; ++j) c_row[j] += a_ik * b_row[j];
    }
  }
}

// Copies rows × cols of a row-major matrix (leading dimension ld) into `dst`,
// densely (leading dimension cols). Plain loop: dst[r·cols + c] = src[r·ld + c].
inline void pack_block(int rows, int cols, const float* src, std::ptrdiff_t ld, float* dst) {
  for (int r = 0; r < rows; ++r) std::memcpy(dst + std::ptrdiff_t(r) * cols, src + r * ld, sizeof(float) * cols);
}

// Floats of rung 03d's two block buffers: B block (BK × BN), then A block (BM × BK).
inline std::size_t packed_block_b_floats(const GemmProblem& p) {
  return round_up(std::size_t(std::min(p.K, kBlockK)) * std::min(p.N, kBlockN), kAlignFloats);
}
inline std::size_t packed_block_a_floats(const GemmProblem& p) {
  return round_up(std::size_t(std::min(p.M, kBlockM)) * std::min(p.K, kBlockK), kAlignFloats);
}

// ============================================================================
// Rungs 03e–03f. Workspace: the packed buffers live in the harness's scratch
// buffer (Variant::workspace_bytes), never allocated inside run().
// ============================================================================

// Floats of one packed A block (MC × KC, rows rounded up to whole micro-panels).
template <int MR = kMR> inline std::size_t packed_a_floats(const GemmProblem& p) {
  const std::size_t rows = round_up(std::size_t(std::min(p.M, kMCFor<MR>)), MR);
  return round_up(rows * std::size_t(std::min(p.K, kKC)), kAlignFloats);
}
// Floats of one packed B panel (KC × NC, columns rounded up to whole micro-panels).
template <int NR = kNR> inline std::size_t packed_b_floats(const GemmProblem& p) {
  const std::size_t cols = round_up(std::size_t(std::min(p.N, kNCFor<NR>)), NR);
  return round_up(std::size_t(std::min(p.K, kKC)) * cols, kAlignFloats);
}
// One B panel shared by all threads, one A block per thread.
template <int MR = kMR, int NR = kNR> inline std::size_t packed_workspace_bytes(const GemmProblem& p, int threads) {
  return (packed_b_floats<NR>(p) + std::size_t(threads) * packed_a_floats<MR>(p)) * sizeof(float);
}

// ============================================================================
// Packing into micro-panels. Rung 03d copied blocks as they were (row-major);
// here a packed buffer holds the operand in exactly the order the
// micro-kernel reads it: unit stride, 64-byte aligned, no TLB misses from
// jumping between rows of a large matrix, and zero-padded to whole
// micro-panels so the micro-kernel never sees an edge.
// ============================================================================

// A block, rows [0, mc) × depth [0, kc) of `a` (row-major, leading dim lda),
// into ceil(mc/MR) micro-panels of MR × kc, each stored k-major:
//
//   Ap[panel][k][i] = A(panel·MR + i, k)        (0 for rows past mc)
//
//        k →                       Ap: | a00 a10 .. a50 | a01 a11 .. a51 | ...   (panel 0)
//   i  [a00 a01 a02 ...]                   one column of the panel per k:
//   ↓  [a10 a11 a12 ...]  --pack-->        the MR values the kernel broadcasts
//      [...           ]                    at step k, side by side
//
// Plain loop: for i, k: Ap[(i/MR)·MR·kc + k·MR + i%MR] = A[i·lda + k]
template <int MR = kMR> inline void pack_a(int mc, int kc, const float* a, std::ptrdiff_t lda, float* ap) {
  for (int i0 = 0; i0 < mc; i0 += MR, ap += std::ptrdiff_t(MR) * kc) {
    const int rows = std::min(MR, mc - i0);
    for (int i = 0; i < rows; ++i) {  // read each row of A contiguously, write with stride MR
      const float* src = a + (i0 + i) * lda;
      for (int k = 0; k < kc; ++k) ap[k * MR + i] = src[k];
    }
    for (int i = rows; i < MR; ++i)  // edge: zero rows, so the kernel's extra rows add nothing
      for (int k = 0; k < kc; ++k) ap[k * MR + i] = 0.f;
  }
}

// B panel, depth [0, kc) × columns [0, nc) of `b` (row-major, leading dim
// ldb), into ceil(nc/NR) micro-panels of kc × NR, each stored k-major:
//
//   Bp[panel][k][j] = B(k, panel·NR + j)        (0 for columns past nc)
//
// A micro-panel is kc consecutive NR-wide row pieces of B: the NR values the
// kernel multiplies at step k are one contiguous, aligned 64-byte line.
// Plain loop: for k, j: Bp[(j/NR)·NR·kc + k·NR + j%NR] = B[k·ldb + j]
template <int NR = kNR> inline void pack_b_micropanel(int kc, int cols, const float* b, std::ptrdiff_t ldb, float* bp) {
  for (int k = 0; k < kc; ++k, bp += NR) {
    const float* src = b + k * ldb;
    std::memcpy(bp, src, sizeof(float) * cols);
    for (int j = cols; j < NR; ++j) bp[j] = 0.f;  // edge: zero columns
  }
}
template <int NR = kNR> inline void pack_b(int kc, int nc, const float* b, std::ptrdiff_t ldb, float* bp) {
  for (int j0 = 0; j0 < nc; j0 += NR)
    pack_b_micropanel<NR>(kc, std::min(NR, nc - j0), b + j0, ldb, bp + std::ptrdiff_t(j0) * kc);
}

// B handed over transposed (lesson 02). Its source is Bᵀ: an [N, K] row-major
// matrix (leading dim ldbt) whose row j is column j of B. A convolution's KRSC
// weights are exactly that — w is [K, R·S·T] row-major, and the GEMM
// y = patches · wᵀ needs B = wᵀ — so instead of transposing w into a buffer
// first, the packing reads it transposed. Packing copies every element of B
// once anyway; only the order of the reads changes:
//
//   Bp[panel][k][j] = Bt(panel·NR + j, k) = B(k, panel·NR + j)   (0 for columns past nc)
//
// Plain loop: for k, j: Bp[(j/NR)·NR·kc + k·NR + j%NR] = Bt[j·ldbt + k]
// Reads run along rows of Bt (contiguous), writes land NR floats apart — the
// mirror image of pack_a, and for the same reason: read the source in order.
inline void pack_bt_micropanel(int kc, int cols, const float* bt, std::ptrdiff_t ldbt, float* bp) {
  for (int j = 0; j < cols; ++j) {
    const float* src = bt + j * ldbt;
    for (int k = 0; k < kc; ++k) bp[k * kNR + j] = src[k];
  }
  for (int j = cols; j < kNR; ++j)  // edge: zero columns
    for (int k = 0; k < kc; ++k) bp[k * kNR + j] = 0.f;
}

// ============================================================================
// The micro-kernel contract (every implementation below obeys it):
//
//   void kernel(int kc, const float* ap, const float* bp, float* c, std::ptrdiff_t ldc, bool accumulate)
//
//   ap: one packed A micro-panel, kc × MR, k-major (see pack_a), 64-byte aligned
//   bp: one packed B micro-panel, kc × NR, k-major (see pack_b), 64-byte aligned
//   c:  an MR × NR tile of C, row-major with leading dimension ldc, any alignment
//
//                 NR
//            ┌─────────┐
//            │ bp[k]   │  one row of B per k (NR floats)
//            └─────────┘
//     MR ┌─┐ ┌─────────┐
//        │a│ │         │
//        │p│ │  C tile │  += ap[k][i] · bp[k][j]  for k < kc
//        │ │ │  MR×NR  │
//        └─┘ └─────────┘
//
//   accumulate == false: c = ap·bp   (c is only written: it may hold NaN poison)
//   accumulate == true:  c += ap·bp
//
// Edge duties: none. The kernel always computes a full MR × NR tile with any
// kc ≥ 1; partial tiles at the matrix edge are the macro-kernel's job (the
// packed panels are zero-padded, and it routes partial tiles through a
// buffer), so the kernel's hot loop has no branches.
// ============================================================================
using MicroKernel = void (*)(int kc, const float* ap, const float* bp, float* c, std::ptrdiff_t ldc, bool accumulate);

// Portable register-tile micro-kernel: rung 03e's idea in plain C++, for CPUs
// without AVX2/FMA. The MR × NR accumulator is a local array — the compiler
// can keep it in registers, because nothing else can point to it — and the
// j loop is marked `omp simd` so it becomes one SIMD operation per row on
// whatever vector ISA the build targets (SSE2 at least on x86-64; with this
// project's -march=native on an AVX-512 CPU, one 16-float FMA per row).
// Without the pragma GCC 12 vectorises across i instead and buries the
// FMAs in shuffles, at a tenth of the speed.
// A template over the tile, like the driver: micro_kernel_portable_tile<6, 32>
// is another tile's kernel; micro_kernel_portable (below) is the default tile's.
template <int MR = kMR, int NR = kNR>
inline void micro_kernel_portable_tile(int kc, const float* __restrict ap, const float* __restrict bp, float* c,
                                  std::ptrdiff_t ldc, bool accumulate) {
  float acc[MR][NR] = {};
  for (int k = 0; k < kc; ++k, ap += MR, bp += NR)
    for (int i = 0; i < MR; ++i) {
      const float a = ap[i];
#pragma omp simd
      for (int j = 0; j < NR; ++j) acc[i][j] += a * bp[j];  // rank-1 update of the tile, row i
    }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}

// AVX2/FMA micro-kernel: the same rank-1 updates, but with the tile pinned in
// MR × NR/8 = 12 ymm registers. Per step k it loads NR/8 = 2 vectors of B,
// broadcasts each of the MR = 6 values of A once, and issues 12 independent
// FMAs — enough to keep both FMA pipes busy through the 4-cycle latency (the
// portable kernel leaves that to the compiler; here it is guaranteed).
//
//   plain loop, one k step:               the same step in registers:
//     for i < 6:                            b0 = load(bp), b1 = load(bp + 8)
//       for j < 16:                         for i < 6:  a = broadcast(ap[i])
//         acc[i][j] += ap[i] * bp[j]          c[i][0] = fma(a, b0, c[i][0]); c[i][1] = fma(a, b1, c[i][1])
//
// Compiled for AVX2+FMA whatever the build flags say (target attribute); it
// must only be called after a run-time check (selected_micro_kernel below).
// The loops over i and v have constant trip counts and are fully unrolled, so
// `acc` is 12 registers, not memory.
template <int MR = kMR, int NR = kNR>
__attribute__((target("avx2,fma"))) inline void micro_kernel_avx2_tile(int kc, const float* __restrict ap,
                                                                      const float* __restrict bp, float* c,
                                                                      std::ptrdiff_t ldc, bool accumulate) {
  static_assert(NR % kSimdFloats == 0, "a row of the tile must be whole AVX2 vectors");
  constexpr int kVectorsPerRow = NR / kSimdFloats;  // this tile's, which may not be the default's
  // Ask for the C tile now (MR rows of 64 bytes, ldc apart): by the time the
  // k loop is done it is in L1, and the final load/store does not stall.
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);

  __m256 acc[MR][kVectorsPerRow];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kVectorsPerRow; ++v) acc[i][v] = _mm256_setzero_ps();

#pragma GCC unroll 4
  for (int k = 0; k < kc; ++k, ap += MR, bp += NR) {
    __m256 b[kVectorsPerRow];
#pragma GCC unroll 4
    for (int v = 0; v < kVectorsPerRow; ++v) b[v] = _mm256_load_ps(bp + v * kSimdFloats);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m256 a = _mm256_broadcast_ss(ap + i);
#pragma GCC unroll 4
      for (int v = 0; v < kVectorsPerRow; ++v) acc[i][v] = _mm256_fmadd_ps(a, b[v], acc[i][v]);
    }
  }

#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kVectorsPerRow; ++v) {
      float* dst = c + i * ldc + v * kSimdFloats;
      const __m256 sum = accumulate ? _mm256_add_ps(acc[i][v], _mm256_loadu_ps(dst)) : acc[i][v];
      _mm256_storeu_ps(dst, sum);
    }
}

// The default tile's kernels (6 × 16), as the rungs and the dispatch below use them.
inline constexpr MicroKernel micro_kernel_portable = micro_kernel_portable_tile<kMR, kNR>;
inline constexpr MicroKernel micro_kernel_avx2 = micro_kernel_avx2_tile<kMR, kNR>;

// ============================================================================
// Choosing the micro-kernel at run time. The binary may run on a CPU without
// AVX2/FMA (or be asked not to use them), so the check is made on the CPU
// that runs it, never assumed from how it was compiled. Setting the
// environment variable CONVLAB_NO_AVX2=1 forces the portable kernel, so the
// fallback path can be tested and timed on any machine.
// ============================================================================
struct MicroKernelChoice {
  MicroKernel kernel;
  const char* name;  // "avx2_fma_6x16" or "portable"
  bool avx2;
};

inline bool avx2_disabled_by_environment() {
  const char* v = std::getenv("CONVLAB_NO_AVX2");
  return v && *v && std::string_view(v) != "0";
}

inline MicroKernelChoice choose_micro_kernel(bool has_avx2_fma, bool forbid_avx2) {
  if (has_avx2_fma && !forbid_avx2) return {micro_kernel_avx2, "avx2_fma_6x16", true};
  return {micro_kernel_portable, "portable", false};
}

// Looks at the CPU and the environment now (tests use this one).
inline MicroKernelChoice detect_micro_kernel() {
  return choose_micro_kernel(cpu_has_avx2_fma(), avx2_disabled_by_environment());
}

// The choice for this process: made once, on first use, then fixed. A slow
// fallback should never be a mystery, so choosing it is said on stderr.
inline const MicroKernelChoice& selected_micro_kernel() {
  static const MicroKernelChoice choice = [] {
    const MicroKernelChoice c = detect_micro_kernel();
    if (!c.avx2)
      std::fprintf(stderr, "gemm/cpu: AVX2/FMA %s: using the portable micro-kernel\n",
                   cpu_has_avx2_fma() ? "disabled by CONVLAB_NO_AVX2" : "not available on this CPU");
    return c;
  }();
  return choice;
}

// ============================================================================
// Macro-kernel: loops 2 and 1 around the micro-kernel, over one packed A
// block (mc × kc) and one packed B panel (kc × nc), updating the mc × nc
// block of C at `c`. jr outside ir: one B micro-panel (KC × NR = 16 KiB) is
// reused from L1 by every A micro-panel of the block, which stream from L2.
//
// Edge handling lives here, once, for every micro-kernel: a full MR × NR
// tile is written straight into C; a partial one (last rows or columns of the
// matrix) is computed into a local buffer by the very same kernel — its
// packed panels are zero-padded, so the extra rows and columns are harmless —
// and only the valid m × n corner is copied out.
// ============================================================================
template <int MR = kMR, int NR = kNR>
inline void macro_kernel(int mc, int nc, int kc, const float* ap, const float* bp, float* c, std::ptrdiff_t ldc,
                         bool accumulate, MicroKernel kernel) {
  for (int jr = 0; jr < nc; jr += NR) {
    const int n = std::min(NR, nc - jr);
    const float* b_micro = bp + std::ptrdiff_t(jr) * kc;
    for (int ir = 0; ir < mc; ir += MR) {
      const int m = std::min(MR, mc - ir);
      const float* a_micro = ap + std::ptrdiff_t(ir) * kc;
      float* c_tile = c + ir * ldc + jr;
      if (m == MR && n == NR) {
        kernel(kc, a_micro, b_micro, c_tile, ldc, accumulate);
      } else {
        alignas(64) float tile[MR * NR];
        kernel(kc, a_micro, b_micro, tile, NR, /*accumulate=*/false);
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j)
            c_tile[i * ldc + j] = accumulate ? c_tile[i * ldc + j] + tile[i * NR + j] : tile[i * NR + j];
      }
    }
  }
}

// ============================================================================
// The five loops on one thread (rung 03e). C = A·B with A [M, K],
// B [K, N], C [M, N] row-major. The first depth slice (pc = 0) writes C, the
// later ones add to it, so C's previous contents are never read.
// `workspace` holds packed_workspace_bytes<MR, NR>(p, 1) bytes, 64-byte aligned.
// <MR, NR>: the micro-tile `kernel` computes (default 6 × 16), e.g.
//   cpu_gemm::gemm_packed<6, 32>(p, a, b, c, ws, my_kernel_6x32);
// ============================================================================
template <int MR = kMR, int NR = kNR>
inline void gemm_packed(const GemmProblem& p, const float* a, const float* b, float* c, void* workspace,
                        MicroKernel kernel) {
  float* bp = static_cast<float*>(workspace);  // packed B panel, kc × nc
  float* ap = bp + packed_b_floats<NR>(p);         // packed A block, mc × kc
  const std::ptrdiff_t lda = p.K, ldb = p.N, ldc = p.N;
  for (int jc = 0; jc < p.N; jc += kNCFor<NR>) {                   // loop 5
    const int nc = std::min(kNCFor<NR>, p.N - jc);
    for (int pc = 0; pc < p.K; pc += kKC) {                 // loop 4
      const int kc = std::min(kKC, p.K - pc);
      pack_b<NR>(kc, nc, b + pc * ldb + jc, ldb, bp);
      for (int ic = 0; ic < p.M; ic += kMCFor<MR>) {               // loop 3
        const int mc = std::min(kMCFor<MR>, p.M - ic);
        pack_a<MR>(mc, kc, a + ic * lda + pc, lda, ap);
        macro_kernel<MR, NR>(mc, nc, kc, ap, bp, c + ic * ldc + jc, ldc, /*accumulate=*/pc > 0, kernel);  // loops 2, 1
      }
    }
  }
}

// ============================================================================
// Rung 03f's OpenMP driver (cpu/gemm/03f_openmp.cpp calls it), written for
// operands that may be views into larger tensors (lesson 02: one group's patch
// matrix, one group's rows of KRSC weights, one group's channel slice of an
// NHWC output): B panel packed by all threads together, row blocks of C dealt
// out dynamically, one A block per thread; explicit leading dimensions, and B
// either as stored ([K, N]) or transposed ([N, K]).
//
//   C[M, N] (rows ldc apart) = A[M, K] (rows lda apart) · B
//   B = b as [K, N], rows ldb apart            (b_transposed == false)
//   B = bᵀ, b as [N, K], rows ldb apart         (b_transposed == true)
//
// C is only written (poison-safe), never read before the first depth slice.
// Call from outside any parallel region: it opens its own, with `threads`
// threads. `workspace` holds packed_workspace_bytes({M, N, K}, threads)
// bytes, 64-byte aligned.
// ============================================================================
struct StridedGemm {
  int M = 0, N = 0, K = 0;
  const float* a = nullptr;      // A [M, K]
  std::ptrdiff_t lda = 0;
  const float* b = nullptr;      // B [K, N], or Bᵀ [N, K] when b_transposed
  std::ptrdiff_t ldb = 0;
  bool b_transposed = false;
  float* c = nullptr;            // C [M, N]
  std::ptrdiff_t ldc = 0;
  GemmProblem problem() const { return {M, N, K, DType::f32}; }
};

inline void gemm_packed_parallel(const StridedGemm& g, void* workspace, int threads, MicroKernel kernel) {
  const auto ceil_div = [](int a, int b) { return (a + b - 1) / b; };
  const GemmProblem p = g.problem();
  float* bp = static_cast<float*>(workspace);              // the shared packed B panel
  float* ap_all = bp + packed_b_floats(p);                 // then one packed A block per thread
  const std::size_t ap_floats = packed_a_floats(p);
  // Row blocks: a multiple of the thread count (every thread gets the same
  // number), each at most MC rows and made of whole MR-row micro-panels.
  const int row_blocks = ceil_div(ceil_div(p.M, kMC), threads) * threads;
  const int block_rows = ceil_div(ceil_div(p.M, row_blocks), kMR) * kMR;   // ≤ MC

#pragma omp parallel num_threads(threads)
  {
    float* ap = ap_all + std::size_t(omp_get_thread_num()) * ap_floats;
    for (int jc = 0; jc < p.N; jc += kNC) {                // loop 5
      const int nc = std::min(kNC, p.N - jc);
      const int n_panels = ceil_div(nc, kNR);
      for (int pc = 0; pc < p.K; pc += kKC) {              // loop 4
        const int kc = std::min(kKC, p.K - pc);
        // Pack B together: micro-panel jp goes to bp + jp·NR·kc, whoever packs it.
#pragma omp for schedule(static)
        for (int jp = 0; jp < n_panels; ++jp) {
          const int j0 = jc + jp * kNR, cols = std::min(kNR, nc - jp * kNR);
          float* dst = bp + std::ptrdiff_t(jp) * kNR * kc;
          if (g.b_transposed)
            pack_bt_micropanel(kc, cols, g.b + j0 * g.ldb + pc, g.ldb, dst);  // Bᵀ rows j0.., columns pc..
          else
            pack_b_micropanel(kc, cols, g.b + pc * g.ldb + j0, g.ldb, dst);
        }
        // (implicit barrier: the panel is complete)
        // Loop 3, shared out: a thread takes the next row block when it is
        // done with its last (dynamic), so a core slowed by something else
        // running on it does fewer blocks instead of holding the others up.
#pragma omp for schedule(dynamic, 1) nowait
        for (int blk = 0; blk < row_blocks; ++blk) {
          const int ic = blk * block_rows;
          if (ic >= p.M) continue;
          const int mc = std::min(block_rows, p.M - ic);
          pack_a(mc, kc, g.a + ic * g.lda + pc, g.lda, ap);
          macro_kernel(mc, nc, kc, ap, bp, g.c + ic * g.ldc + jc, g.ldc, /*accumulate=*/pc > 0, kernel);
        }
#pragma omp barrier  // nobody repacks B while another thread still reads it
      }
    }
  }
}

}  // namespace convlab::cpu_gemm
