// cpu/mbconv/11b_fused_two_pass.cpp — lesson 11, CPU rung b: the block in two passes over rows, in cache.
//
// Idea over 11a_layer_by_layer: block fusion around the one global step.
// The SE's mean needs every pixel of an image before any pixel of y can be
// finished, so one pass cannot do it; two passes can, and neither stores e
// or d — pass 2 makes them again (the "recompute" plan of the lesson):
//
//   for each band of kBandRows output rows (OpenMP), for each output row op:
//     E = φ(x[input rows of op not yet made]·We + be)  → ring of K rows [K, W + 2·pad, hidden8]  per thread, L2
//     for each run of kRun output pixels, for each 16 channels (registers):
//       D = φ(dwconv(E) + bd)
//       pass 1: partial[band] += Σ_run D                                      one row per band: no races
//       pass 2: Dt = D ⊙ g  → [kRun, hidden8] per thread, L1;  y[run] = Dt·Wp + bp (+ x), written once
//   between the passes, per image: sums = Σ_band partial (in band order: deterministic); g = SE(sums / (P·Q))
//
// Plain loop it replaces: ref::mbconv_block, which keeps a whole image's e and d.
//
// The arithmetic is mostly the expand (a GEMM of depth C only) and SiLU over
// E and D, so nothing may add a pass over them or make them twice in a pass:
//
// - Every activation is applied in the epilogue of the loop that makes the
//   value, on registers (φ of a whole tile at once: see activate_n):
//     expand, M pixels × 16 channels:              depthwise, kRun pixels × 16 channels:
//       acc[M][2] = Σ_k x[px][k] · We[k][16 ch]      acc[j][2] = bd + Σ_{r,t} E[row r][q_j·s + t] · wt[r,t]
//       E[px][16 ch] = φ(acc + be)   (one store)     D = φ(acc);  pass 1: Σ_j D → partial;  pass 2: D·g → Dt
// - E is a ring of the K input rows the current output row reads (a line
//   buffer: 100 KB at hidden 144, W = 56, in L2); moving down one output row
//   expands only the `stride` new input rows. A thread takes whole images when
//   N ≥ 4·threads, so no input row is expanded twice in a pass; otherwise
//   (single bands) only the K − stride rows above a band whose predecessor
//   went to another thread.
// - Pass 2 never writes D beyond L1: a run's D (kRun × hidden8 floats, 3.4 KB
//   at hidden 144) is projected at once.
// - The ring keeps `pad` zero columns left and right of every row (zeroed once
//   per call), so the depthwise never tests a column; channels are padded to
//   hidden8 (a multiple of 8) with zero weights, so every load is a whole
//   vector and the pad channels of E and D are exactly 0. The weights are
//   packed once per call into 16-column panels, shared and read-only.
//
// Cost: the expand and depthwise MACs twice, the project once; memory
// traffic x twice, y once, the weights once: MBConvProblem::two_pass_recompute_bytes().
// Floor: the FMA pipes, not DRAM — each SiLU of 8 lanes is ~10 FMA-pipe
// instructions, as many as 80 of the block's MACs (the count: NOTES.md).
// Tunables: kBandRows (rows per task), kRun (pixels per depthwise run = rows of
// the project's tile), kTileRows (pixels of the expand's tile).
// Supported: f32, any sizes. The kernels are AVX2/FMA (chosen at run time, as
// the GEMM ladder's micro-kernel is: selected_micro_kernel()); without them
// (or with CONVLAB_NO_AVX2=1) the same two passes run per band on the portable
// GEMM and depthwise loops, with E, D and the biases in passes of their own.
// Workspace: per-band partial sums and gates (with SE), the packed weights, and
// per thread the ring and Dt (portable: a band's E and D, the GEMM's packing);
// the per-thread part does not grow with N, only with W.
// Run just this: build/convlab run mbconv/cpu/11b_fused_two_pass --shape N=32,H=56,C=24
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "cpu/lib/gemm_kernels.hpp"
#include "cpu/lib/mbconv_cpu.hpp"
#include "cpu/lib/threads.hpp"

namespace convlab {
namespace {

using namespace cpu_mbconv;
using cpu::thread_count;

// ---- tunables ----------------------------------------------------------------------
constexpr int kBandRows = 8;   // output rows per task (the unit of work, and of the SE's partial sums)
constexpr int kRun = 6;        // output pixels per depthwise run = rows of the project's tile
constexpr int kTileRows = 6;   // pixels of the expand's register tile
constexpr int kPanel = 16;     // channels of one packed weight panel: two AVX2 vectors
constexpr int kVec = 8;        // floats in one AVX2 register

static_assert(kTileRows * (kPanel / kVec) + kPanel / kVec + 1 <= 16,
              "expand tile: accumulators + one weight row + one broadcast of x within the 16 ymm registers");
static_assert(kRun * (kPanel / kVec) + kPanel / kVec + 1 <= 16,
              "project tile (kRun pixels × one panel): accumulators + a weight row + a broadcast in 16 ymm registers");
static_assert(2 * kRun + 3 <= 16, "depthwise run: 2·kRun accumulators, two weights and an input vector");
static_assert(kPanel % kVec == 0, "a panel is whole vectors");

int round8(int n) { return (n + kVec - 1) / kVec * kVec; }
int panels(int n) { return (n + kPanel - 1) / kPanel; }
int pad_of(const MBConvProblem& p) { return p.kernel / 2; }
int padded_width(const MBConvProblem& p) { return p.W + 2 * pad_of(p); }

// Input rows a band of `rows` output rows reads: (rows − 1)·stride + K.
int input_rows_for(const MBConvProblem& p, int rows) { return std::min(p.H, (rows - 1) * p.stride + p.kernel); }
int band_rows(const MBConvProblem& p) { return std::min(p.P(), kBandRows); }
int bands_per_image(const MBConvProblem& p) { return (p.P() + band_rows(p) - 1) / band_rows(p); }
// E's ring: the K input rows one output row reads (row h in slot h mod K), padded [K, W + 2·pad, hidden8].
std::size_t ring_floats(const MBConvProblem& p) { return std::size_t(p.kernel) * padded_width(p) * round8(p.hidden()); }

// Workspace. Shared: [ wt [K·K, hidden8] | bd [hidden8] | be [panels·16] | We packed [panels][C][16] |
//   Wp packed [panels_out][hidden8][16] | bp [panels_out·16] | partial sums (double) [N·bands, hidden8] |
//   gates [N, hidden8] ]. Per thread: [ z | E's ring (portable path: E of a band) | Dt |
//   (portable path) D of a band and the GEMM's packing ].
struct Layout {
  std::size_t wt, bd, be, we, wp, bp, partial, gates;  // floats (partial: counted in floats)
  std::size_t z, e, dt, d, gemm_bytes;                 // floats ..., bytes
  explicit Layout(const MBConvProblem& p) {
    const auto up = [](std::size_t f) { return cpu_gemm::round_up(f, cpu_gemm::kAlignFloats); };
    const std::size_t Hd8 = round8(p.hidden()), pe = panels(p.hidden()), pp = panels(p.C_out);
    wt = up(Hd8 * p.kernel * p.kernel);
    bd = up(Hd8);
    be = up(pe * kPanel);
    we = p.has_expand() ? up(pe * kPanel * p.C) : 0;
    wp = up(pp * kPanel * Hd8);
    bp = up(pp * kPanel);
    partial = p.has_se() ? up(2 * std::size_t(p.N) * bands_per_image(p) * Hd8) : 0;
    gates = p.has_se() ? up(std::size_t(p.N) * Hd8) : 0;
    z = up(std::max(1, p.se_channels()));
    e = up(std::max(ring_floats(p), std::size_t(input_rows_for(p, band_rows(p))) * p.W * p.hidden()));
    dt = up(std::size_t(kRun) * Hd8);
    // The portable path: D of a band, and the GEMM's packing buffers.
    d = up(std::size_t(band_rows(p)) * p.Q() * p.hidden());
    const GemmProblem ge{input_rows_for(p, band_rows(p)) * p.W, p.hidden(), p.C, DType::f32};
    const GemmProblem gp{band_rows(p) * p.Q(), p.C_out, p.hidden(), DType::f32};
    gemm_bytes = cpu_gemm::round_up(std::max(p.has_expand() ? cpu_gemm::packed_workspace_bytes(ge, 1) : 0,
                                             cpu_gemm::packed_workspace_bytes(gp, 1)),
                                    std::size_t(64));
  }
  std::size_t shared_bytes() const { return (wt + bd + be + we + wp + bp + partial + gates) * sizeof(float); }
  std::size_t thread_bytes() const { return (z + e + dt + d) * sizeof(float) + gemm_bytes; }
  std::size_t bytes(int threads) const { return shared_bytes() + std::size_t(threads) * thread_bytes(); }
};

bool supports(const MBConvProblem& p) { return p.dtype == DType::f32; }

std::size_t workspace_bytes(const MBConvProblem& p) { return Layout(p).bytes(thread_count()); }

// Band b of an image: output rows [p0, p1), input rows [h0, h1).
struct Band {
  int n, p0, p1, h0, h1;
  Band(const MBConvProblem& p, int task, int bands, int rows) {
    n = task / bands;
    p0 = (task % bands) * rows, p1 = std::min(p.P(), p0 + rows);
    h0 = std::max(0, p0 * p.stride - pad_of(p)), h1 = std::min(p.H, (p1 - 1) * p.stride - pad_of(p) + p.kernel);
  }
};

// The gate of every image from the bands' partial sums, added in band order.
// `partial` and `gates` rows are `ld` apart; gates' pad entries are left as they are.
void gates_from_partials(const MBConvProblem& p, const Args<MBConvProblem>& a, int bands, std::size_t ld,
                         double* partial, float* z, float* gates) {
#pragma omp for schedule(static)
  for (int n = 0; n < p.N; ++n) {
    double* total = partial + std::ptrdiff_t(n) * bands * ld;  // band 0's row accumulates the rest
    for (int b = 1; b < bands; ++b)
      for (int j = 0; j < p.hidden(); ++j) total[j] += total[std::ptrdiff_t(b) * ld + j];
    se_gate(p, total, static_cast<const float*>(a.se1_w), static_cast<const float*>(a.se1_b),
            static_cast<const float*>(a.se2_w), static_cast<const float*>(a.se2_b), z, gates + std::ptrdiff_t(n) * ld);
  }
}

// =====================================================================================
// The AVX2/FMA path.
// =====================================================================================
// Every function below is compiled for AVX2/FMA whatever the build flags say (target
// attribute) and is only called after the run-time check in run().

// φ on N vectors of 8 lanes, in place: v / (1 + e^−v) (1/∞ = 0 gives SiLU's
// −0 tail), e^x as exp_fast (cpu/lib/mbconv_cpu.hpp) computes it — x = n·ln2
// + r with ln2 in two parts, the clamp on n, 2^n put into the exponent bits —
// but e^r = 1 + r + r²·P4(r) with P4 minimax for relative error on |r| ≤ ln2/2
// (3e-9, far below fp32's rounding) where exp_fast has a degree-5 P: one FMA
// less per vector, the same accuracy. Relative error of the SiLU against
// double below 2e-7 for |v| < 80.
// Every step is done for all N vectors before the next one, so the N
// independent chains of ~20 instructions sit side by side in the code (longer
// batches run faster per element: lessons/11-mbconv/NOTES.md).
//   plain loop: for i < N: v[i] = v[i] / (1 + exp_fast(−v[i]))     (per lane)
template <MBConvActivation kAct, int N> __attribute__((target("avx2,fma"))) inline void activate_n(__m256 (&v)[N]) {
  if constexpr (kAct == MBConvActivation::relu) {
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) v[i] = _mm256_max_ps(v[i], _mm256_setzero_ps());
  } else {
    __m256 n[N], r[N], q[N];
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) {
      r[i] = _mm256_sub_ps(_mm256_setzero_ps(), v[i]);  // x = −v
      n[i] = _mm256_round_ps(_mm256_mul_ps(r[i], _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) {
      n[i] = _mm256_max_ps(_mm256_min_ps(n[i], _mm256_set1_ps(127.0f)), _mm256_set1_ps(-126.0f));
      r[i] = _mm256_fnmadd_ps(n[i], _mm256_set1_ps(0.693359375f), r[i]);
    }
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) {
      r[i] = _mm256_fmadd_ps(n[i], _mm256_set1_ps(2.12194440e-4f), r[i]);
      q[i] = _mm256_fmadd_ps(_mm256_set1_ps(1.3814612757e-3f), r[i], _mm256_set1_ps(8.3687100559e-3f));
    }
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) q[i] = _mm256_fmadd_ps(q[i], r[i], _mm256_set1_ps(4.1668388993e-2f));
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) q[i] = _mm256_fmadd_ps(q[i], r[i], _mm256_set1_ps(1.6666521132e-1f));
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) q[i] = _mm256_fmadd_ps(q[i], r[i], _mm256_set1_ps(4.9999994040e-1f));
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) q[i] = _mm256_fmadd_ps(_mm256_mul_ps(q[i], r[i]), r[i], r[i]);
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) {  // den = 1 + (q + 1)·2^n
      const __m256 two_n = _mm256_castsi256_ps(
          _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n[i]), _mm256_set1_epi32(127)), 23));
      q[i] = _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(q[i], two_n, two_n));
    }
#pragma GCC unroll 16
    for (int i = 0; i < N; ++i) v[i] = _mm256_div_ps(v[i], q[i]);
  }
}

// Everything a band's kernels read, once per call.
struct Fused {
  const MBConvProblem* p;
  int Hd8, Wp, pad, Q;
  const float *wt, *bd, *be, *we, *wp, *bp;  // see Layout
  const float* x;                            // [N, H, W, C]
  float* y;                                  // [N, P, Q, C_out]
};

// E of M consecutive pixels of one input row, channels [col, col + 16·G):
// G panels of 16 columns of We at once in an M × 16·G register tile, then
// + be and φ on the registers, then one store per vector.
//   plain loop: for i < M, c in the panels: e[i·hidden8 + c] = φ(be[c] + Σ_k a[i·C + k] · We[k][c])
// (We packed: panel c/16 holds We[k][c .. c + 16) at wep[k·16], zero past hidden.)
// `two` = false: a single panel of which only the first 8 columns exist (hidden8 = 16·j + 8).
template <MBConvActivation kAct, int M, int G>
__attribute__((target("avx2,fma"))) inline void expand_block(const Fused& f, const float* a, float* e, int col,
                                                             bool two) {
  constexpr int V = 2 * G;  // vectors per pixel in the tile
  const int C = f.p->C;
  const float* wep = f.we + std::ptrdiff_t(col) * C;
  __m256 acc[M][V];
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[i][v] = _mm256_setzero_ps();
  // Vector v of the tile is panel v/2, half v%2. Per k, whichever operand has
  // fewer vectors is held in registers (M·V accumulators + min(M, V) + 1 ≤ 16).
  const auto weight = [&](int v, int k) {
    return _mm256_load_ps(wep + (std::ptrdiff_t(v / 2) * C + k) * kPanel + (v % 2) * kVec);
  };
  for (int k = 0; k < C; ++k) {
    if constexpr (V <= M) {
      __m256 b[V];
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) b[v] = weight(v, k);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        const __m256 ai = _mm256_broadcast_ss(a + i * C + k);
#pragma GCC unroll 8
        for (int v = 0; v < V; ++v) acc[i][v] = _mm256_fmadd_ps(ai, b[v], acc[i][v]);
      }
    } else {
      __m256 ai[M];
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) ai[i] = _mm256_broadcast_ss(a + i * C + k);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) {
        const __m256 b = weight(v, k);
#pragma GCC unroll 8
        for (int i = 0; i < M; ++i) acc[i][v] = _mm256_fmadd_ps(ai[i], b, acc[i][v]);
      }
    }
  }
  __m256 out[M * V];  // the whole tile in one call: M·V independent chains
#pragma GCC unroll 8
  for (int v = 0; v < V; ++v) {
    const __m256 bias = _mm256_load_ps(f.be + col + v * kVec);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) out[i * V + v] = _mm256_add_ps(acc[i][v], bias);
  }
  activate_n<kAct>(out);
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v)
      if (v == 0 || two) _mm256_store_ps(e + std::ptrdiff_t(i) * f.Hd8 + col + v * kVec, out[i * V + v]);
}
// All channels of M pixels. A tile keeps ~12 accumulators whatever M is: the
// M < kTileRows pixels at the end of a row take G = kTileRows / M panels at a
// time (2 pixels × 48 channels), so the FMAs of the short tile still overlap.
template <MBConvActivation kAct, int M>
__attribute__((target("avx2,fma"))) void expand_pixels(const Fused& f, const float* a, float* e) {
  constexpr int G = kTileRows / M > 1 ? kTileRows / M : 1;
  int col = 0;
  if constexpr (G > 1)
    for (; col + G * kPanel <= f.Hd8; col += G * kPanel) expand_block<kAct, M, G>(f, a, e, col, true);
  for (; col < f.Hd8; col += kPanel) expand_block<kAct, M, 1>(f, a, e, col, col + kPanel <= f.Hd8);
}

// E of input row h of image n into its ring slot (interior columns; the pad
// columns stay zero): runs of kTileRows pixels, the last run shorter.
template <MBConvActivation kAct>
__attribute__((target("avx2,fma"))) void expand_row(const Fused& f, int n, int h, float* ring) {
  const MBConvProblem& p = *f.p;
  const float* xr = f.x + (std::ptrdiff_t(n) * p.H + h) * p.W * p.C;
  float* er = ring + (std::ptrdiff_t(h % p.kernel) * f.Wp + f.pad) * f.Hd8;
  if (!p.has_expand()) {  // e = 1: the depthwise reads x; copy it into the padded layout (pad channels stay 0)
    for (int w = 0; w < p.W; ++w) std::memcpy(er + std::ptrdiff_t(w) * f.Hd8, xr + std::ptrdiff_t(w) * p.C, sizeof(float) * p.C);
    return;
  }
  int w = 0;
  for (; w + kTileRows <= p.W; w += kTileRows)
    expand_pixels<kAct, kTileRows>(f, xr + std::ptrdiff_t(w) * p.C, er + std::ptrdiff_t(w) * f.Hd8);
  static_assert(kTileRows <= 8, "the tail switch below covers runs of up to 7 pixels");
  const float* a = xr + std::ptrdiff_t(w) * p.C;
  float* e = er + std::ptrdiff_t(w) * f.Hd8;
  switch (p.W - w) {
    case 1: expand_pixels<kAct, 1>(f, a, e); break;
    case 2: expand_pixels<kAct, 2>(f, a, e); break;
    case 3: expand_pixels<kAct, 3>(f, a, e); break;
    case 4: expand_pixels<kAct, 4>(f, a, e); break;
    case 5: expand_pixels<kAct, 5>(f, a, e); break;
    case 6: expand_pixels<kAct, 6>(f, a, e); break;
    case 7: expand_pixels<kAct, 7>(f, a, e); break;
    default: break;
  }
}

// The rows of E a thread holds: input rows [lo, hi) of image n, row h in ring slot h mod K.
struct Ring {
  float* e;
  int n = -1, lo = 0, hi = 0;
  // Makes rows [first, last) of image n present, expanding only those it lacks.
  // last − first ≤ K; the slots of rows below last − K are reused.
  template <MBConvActivation kAct> void make(const Fused& f, int image, int first, int last) {
    if (image != n || first < lo || first > hi) n = image, lo = hi = first;  // nothing to keep
    for (int h = std::max(hi, first); h < last; ++h) expand_row<kAct>(f, n, h, e);
    hi = std::max(hi, last);
    lo = std::max(lo, hi - f.p->kernel);
  }
};

// y of a run of L pixels from Dt [L, Hd8], columns [col, col + 8·NV):
//   y[i][o] = bp[o] + Σ_k Dt[i][k]·Wp[k][o] (+ x[i][o])
// NV = 2 for a whole 16-column panel, 1 for a last panel of at most 8 columns
// (C_out = 24: 16 + 8, not 16 + 16 with half of the second panel zeros).
template <int L, int NV>
__attribute__((target("avx2,fma"))) void project_panel(const Fused& f, const float* dt, int col, float* y,
                                                       const float* xres) {
  const MBConvProblem& p = *f.p;
  const bool residual = p.has_residual();
  const float* wpp = f.wp + std::ptrdiff_t(col) * f.Hd8;
  __m256 acc[L][NV];
#pragma GCC unroll 8
  for (int i = 0; i < L; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();
  for (int k = 0; k < f.Hd8; ++k, wpp += kPanel) {
    __m256 b[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) b[v] = _mm256_load_ps(wpp + v * kVec);
#pragma GCC unroll 8
    for (int i = 0; i < L; ++i) {
      const __m256 ai = _mm256_broadcast_ss(dt + i * f.Hd8 + k);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(ai, b[v], acc[i][v]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < L; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const int o = col + v * kVec;
      float* dst = y + std::ptrdiff_t(i) * p.C_out + o;
      const float* xo = xres + std::ptrdiff_t(i) * p.C + o;
      __m256 out = _mm256_add_ps(acc[i][v], _mm256_load_ps(f.bp + o));
      if (o + kVec <= p.C_out) {
        if (residual) out = _mm256_add_ps(out, _mm256_loadu_ps(xo));
        _mm256_storeu_ps(dst, out);
      } else if (o < p.C_out) {  // the last columns of a C_out that is not a multiple of 8
        alignas(32) float tail[kVec];
        _mm256_store_ps(tail, out);
        for (int j = 0; j < p.C_out - o; ++j) dst[j] = tail[j] + (residual ? xo[j] : 0.0f);
      }
    }
}
template <int L>
__attribute__((target("avx2,fma"))) void project_run(const Fused& f, const float* dt, float* y, const float* xres) {
  for (int col = 0; col < f.p->C_out; col += kPanel)
    if (f.p->C_out - col > kVec)
      project_panel<L, 2>(f, dt, col, y, xres);
    else
      project_panel<L, 1>(f, dt, col, y, xres);
}

// One run: output pixels (op, q0 .. q0 + L) of image n, every channel.
// rows[r] is E's input row op·s + r − pad (padded: column 0 is the first pad column), for r in [r_lo, r_hi).
//   plain loop: for c8 step 8: acc[j] = bd + Σ_{r,t} rows[r][(q0 + j)·s + t][c8..] · wt[r·K + t][c8..]
//               D = φ(acc);  pass 1: sums[c8..] += Σ_j D[j];  pass 2: Dt[j][c8..] = D[j] · g[c8..]
// then (pass 2) the run's y from Dt while Dt is in L1. The channels go NV = 2
// vectors at a time (2·L chains of φ side by side), the last 8 of a
// hidden8 = 16·i + 8 alone (NV = 1).
template <int L, int K, MBConvActivation kAct, bool kProject, int NV>
__attribute__((target("avx2,fma"))) inline void depthwise_channels(const Fused& f, const float* const (&rows)[K],
                                                                   int r_lo, int r_hi, std::ptrdiff_t first,
                                                                   int c, double* sums, const float* gate,
                                                                   float* dt) {
  const std::ptrdiff_t step = std::ptrdiff_t(f.p->stride) * f.Hd8;  // one output pixel to the next, in E
  __m256 acc[L * NV];                                               // acc[j·NV + v]: pixel j, channels c + 8v
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    const __m256 bias = _mm256_load_ps(f.bd + c + v * kVec);
#pragma GCC unroll 8
    for (int j = 0; j < L; ++j) acc[j * NV + v] = bias;
  }
  for (int r = r_lo; r < r_hi; ++r) {
    const float* row = rows[r] + first + c;
    const float* w = f.wt + std::ptrdiff_t(r) * K * f.Hd8 + c;
#pragma GCC unroll 5
    for (int t = 0; t < K; ++t, row += f.Hd8, w += f.Hd8)
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) {
        const __m256 wv = _mm256_load_ps(w + v * kVec);
#pragma GCC unroll 8
        for (int j = 0; j < L; ++j)
          acc[j * NV + v] = _mm256_fmadd_ps(_mm256_load_ps(row + j * step + v * kVec), wv, acc[j * NV + v]);
      }
  }
  activate_n<kAct>(acc);
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    const int cv = c + v * kVec;
    if constexpr (!kProject) {
      __m256 sum = acc[v];
#pragma GCC unroll 8
      for (int j = 1; j < L; ++j) sum = _mm256_add_ps(sum, acc[j * NV + v]);
      _mm256_storeu_pd(sums + cv, _mm256_add_pd(_mm256_loadu_pd(sums + cv), _mm256_cvtps_pd(_mm256_castps256_ps128(sum))));
      _mm256_storeu_pd(sums + cv + 4,
                       _mm256_add_pd(_mm256_loadu_pd(sums + cv + 4), _mm256_cvtps_pd(_mm256_extractf128_ps(sum, 1))));
    } else {
      const __m256 g = gate ? _mm256_load_ps(gate + cv) : _mm256_set1_ps(1.0f);
#pragma GCC unroll 8
      for (int j = 0; j < L; ++j) _mm256_store_ps(dt + j * f.Hd8 + cv, _mm256_mul_ps(acc[j * NV + v], g));
    }
  }
}
template <int L, int K, MBConvActivation kAct, bool kProject>
__attribute__((target("avx2,fma"))) void depthwise_run(const Fused& f, const float* const (&rows)[K], int r_lo,
                                                       int r_hi, int n, int op, int q0, double* sums,
                                                       const float* gate, float* dt) {
  const MBConvProblem& p = *f.p;
  const std::ptrdiff_t first = std::ptrdiff_t(q0) * p.stride * f.Hd8;
  int c = 0;
  for (; c + 2 * kVec <= f.Hd8; c += 2 * kVec)
    depthwise_channels<L, K, kAct, kProject, 2>(f, rows, r_lo, r_hi, first, c, sums, gate, dt);
  if (c < f.Hd8) depthwise_channels<L, K, kAct, kProject, 1>(f, rows, r_lo, r_hi, first, c, sums, gate, dt);
  if constexpr (kProject) {
    const std::ptrdiff_t px = (std::ptrdiff_t(n) * p.P() + op) * f.Q + q0;
    const float* xres = f.x + ((std::ptrdiff_t(n) * p.H + op) * p.W + q0) * p.C;  // used only with the residual
    project_run<L>(f, dt, f.y + px * p.C_out, xres);
  }
}

// Output row op of image n: its input rows made present in the ring, then runs
// of kRun pixels (the last run shorter).
template <int K, MBConvActivation kAct, bool kProject>
__attribute__((target("avx2,fma"))) void depthwise_row(const Fused& f, Ring& ring, int n, int op, double* sums,
                                                       const float* gate, float* dt) {
  const MBConvProblem& p = *f.p;
  const int ih0 = op * p.stride - f.pad;
  const int r_lo = std::max(0, -ih0), r_hi = std::min(K, p.H - ih0);  // kernel rows inside the image
  ring.make<kAct>(f, n, ih0 + r_lo, ih0 + r_hi);
  const float* rows[K];
  for (int r = 0; r < K; ++r)
    rows[r] = r < r_lo || r >= r_hi ? nullptr : ring.e + std::ptrdiff_t((ih0 + r) % K) * f.Wp * f.Hd8;
  int q0 = 0;
  for (; q0 + kRun <= f.Q; q0 += kRun)
    depthwise_run<kRun, K, kAct, kProject>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt);
  static_assert(kRun <= 8, "the tail switch below covers runs of up to 7 pixels");
  switch (f.Q - q0) {
    case 1: depthwise_run<1, K, kAct, kProject>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 2: depthwise_run<2, K, kAct, kProject>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 3: depthwise_run<3, K, kAct, kProject>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 4: depthwise_run<4, K, kAct, kProject>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 5: depthwise_run<5, K, kAct, kProject>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 6: depthwise_run<6, K, kAct, kProject>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 7: depthwise_run<7, K, kAct, kProject>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    default: break;
  }
}
template <MBConvActivation kAct, bool kProject>
void output_row(const Fused& f, Ring& ring, int n, int op, double* sums, const float* gate, float* dt) {
  if (f.p->kernel == 3)
    depthwise_row<3, kAct, kProject>(f, ring, n, op, sums, gate, dt);
  else
    depthwise_row<5, kAct, kProject>(f, ring, n, op, sums, gate, dt);
}

// Weights into the shared buffers: wt [K·K, Hd8], bd [Hd8], be [16·panels],
// We [panel][C][16], Wp [panel][Hd8][16], bp [16·panels]; every pad entry 0.
void prepare_weights(const MBConvProblem& p, const Args<MBConvProblem>& a, const Layout& l, float* shared) {
  const int Hd = p.hidden(), Hd8 = round8(Hd), taps = p.kernel * p.kernel;
  std::memset(shared, 0, (l.wt + l.bd + l.be + l.we + l.wp + l.bp) * sizeof(float));
  float *wt = shared, *bd = wt + l.wt, *be = bd + l.bd, *we = be + l.be, *wp = we + l.we, *bp = wp + l.wp;
  const auto* dw = static_cast<const float*>(a.dw_w);
  for (int j = 0; j < Hd; ++j) {
    for (int t = 0; t < taps; ++t) wt[std::ptrdiff_t(t) * Hd8 + j] = dw[std::ptrdiff_t(j) * taps + t];
    bd[j] = static_cast<const float*>(a.dw_b)[j];
  }
  if (p.has_expand()) {
    const auto* w = static_cast<const float*>(a.expand_w);  // [C, Hd]
    for (int k = 0; k < p.C; ++k)
      for (int j = 0; j < Hd; ++j) we[(std::ptrdiff_t(j / kPanel) * p.C + k) * kPanel + j % kPanel] = w[std::ptrdiff_t(k) * Hd + j];
    for (int j = 0; j < Hd; ++j) be[j] = static_cast<const float*>(a.expand_b)[j];
  }
  const auto* w = static_cast<const float*>(a.project_w);  // [Hd, C_out]
  for (int k = 0; k < Hd; ++k)
    for (int o = 0; o < p.C_out; ++o)
      wp[(std::ptrdiff_t(o / kPanel) * Hd8 + k) * kPanel + o % kPanel] = w[std::ptrdiff_t(k) * p.C_out + o];
  for (int o = 0; o < p.C_out; ++o) bp[o] = static_cast<const float*>(a.project_b)[o];
}

template <MBConvActivation kAct> void run_avx2(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const Layout l(p);
  const int threads = thread_count();
  float* shared = static_cast<float*>(a.workspace);
  prepare_weights(p, a, l, shared);
  Fused f;
  f.p = &p, f.Hd8 = round8(p.hidden()), f.Wp = padded_width(p), f.pad = pad_of(p), f.Q = p.Q();
  f.wt = shared, f.bd = f.wt + l.wt, f.be = f.bd + l.bd, f.we = f.be + l.be, f.wp = f.we + l.we, f.bp = f.wp + l.wp;
  f.x = static_cast<const float*>(a.x), f.y = static_cast<float*>(a.y);
  double* partial = reinterpret_cast<double*>(shared + l.wt + l.bd + l.be + l.we + l.wp + l.bp);
  float* gates = reinterpret_cast<float*>(partial) + l.partial;
  if (p.has_se()) std::fill(gates, gates + l.gates, 0.0f);  // pad channels: 0 (D is 0 there too)
  char* per_thread = reinterpret_cast<char*>(a.workspace) + l.shared_bytes();
  const int rows = band_rows(p), bands = bands_per_image(p), tasks = p.N * bands;

  // A thread takes whole images when there are enough of them (its ring then
  // carries E's rows from one band to the next: no row is expanded twice in a
  // pass), single bands otherwise.
  const int chunk = p.N >= 4 * threads ? bands : 1;

#pragma omp parallel num_threads(threads)
  {
    char* mine = per_thread + std::size_t(omp_get_thread_num()) * l.thread_bytes();
    float* z = reinterpret_cast<float*>(mine);
    Ring ring;
    ring.e = z + l.z;
    float* dt = ring.e + l.e;
    std::fill(ring.e, ring.e + l.e, 0.0f);  // the pad columns stay 0 from here on

    // ---- pass 1: per-band channel sums of D (only with SE) ----
    if (p.has_se()) {
#pragma omp for schedule(dynamic, chunk)
      for (int task = 0; task < tasks; ++task) {
        const Band b(p, task, bands, rows);
        double* s = partial + std::ptrdiff_t(task) * f.Hd8;
        std::fill(s, s + f.Hd8, 0.0);
        for (int op = b.p0; op < b.p1; ++op) output_row<kAct, false>(f, ring, b.n, op, s, nullptr, dt);
      }
      gates_from_partials(p, a, bands, f.Hd8, partial, z, gates);  // (implied barriers before and after)
    }

    // ---- pass 2: recompute, gate, project, bias, residual, store ----
    ring.n = -1;
#pragma omp for schedule(dynamic, chunk)
    for (int task = 0; task < tasks; ++task) {
      const Band b(p, task, bands, rows);
      const float* g = p.has_se() ? gates + std::ptrdiff_t(b.n) * f.Hd8 : nullptr;
      for (int op = b.p0; op < b.p1; ++op) output_row<kAct, true>(f, ring, b.n, op, nullptr, g, dt);
    }
  }
}

// =====================================================================================
// The portable path: the same passes on the GEMM ladder's portable micro-kernel
// and the shared depthwise loop, E and D as whole bands, bias and φ in passes.
// =====================================================================================

// E and D of band b of image n into the thread's buffers: D holds output rows [p0, p1).
void expand_depthwise(const MBConvProblem& p, const Args<MBConvProblem>& a, const float* wt, const Band& b, float* e,
                      float* d, void* gemm_ws, cpu_gemm::MicroKernel kernel) {
  const int Hd = p.hidden();
  const float* in = static_cast<const float*>(a.x) + (std::ptrdiff_t(b.n) * p.H + b.h0) * p.W * p.C;
  if (p.has_expand()) {
    const GemmProblem g{(b.h1 - b.h0) * p.W, Hd, p.C, DType::f32};
    cpu_gemm::gemm_packed(g, in, static_cast<const float*>(a.expand_w), e, gemm_ws, kernel);
    bias_activate(int64_t(b.h1 - b.h0) * p.W, Hd, e, static_cast<const float*>(a.expand_b), p.activation);
    in = e;
  }
  depthwise_band(p, in, b.h0, wt, static_cast<const float*>(a.dw_b), b.p0, b.p1, d);
}

void run_portable(const MBConvProblem& p, const Args<MBConvProblem>& a, cpu_gemm::MicroKernel kernel) {
  const Layout l(p);
  const int threads = thread_count();
  float* wt = static_cast<float*>(a.workspace);  // [K·K, hidden], the shared layout's first buffer
  transpose_depthwise(p, static_cast<const float*>(a.dw_w), wt);
  double* partial = reinterpret_cast<double*>(wt + l.wt + l.bd + l.be + l.we + l.wp + l.bp);
  float* gates = reinterpret_cast<float*>(partial) + l.partial;
  char* per_thread = reinterpret_cast<char*>(a.workspace) + l.shared_bytes();
  const int Hd = p.hidden(), rows = band_rows(p), bands = bands_per_image(p), Q = p.Q();
  const int tasks = p.N * bands;

#pragma omp parallel num_threads(threads)
  {
    char* mine = per_thread + std::size_t(omp_get_thread_num()) * l.thread_bytes();
    float* z = reinterpret_cast<float*>(mine);
    float* e = z + l.z;
    float* d = e + l.e + l.dt;
    void* gemm_ws = d + l.d;
    if (p.has_se()) {
#pragma omp for schedule(dynamic)
      for (int task = 0; task < tasks; ++task) {
        const Band b(p, task, bands, rows);
        expand_depthwise(p, a, wt, b, e, d, gemm_ws, kernel);
        double* s = partial + std::ptrdiff_t(task) * Hd;
        std::fill(s, s + Hd, 0.0);
        for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(b.p1 - b.p0) * Q; ++i)
          for (int j = 0; j < Hd; ++j) s[j] += d[i * Hd + j];
      }
      gates_from_partials(p, a, bands, Hd, partial, z, gates);
    }
#pragma omp for schedule(dynamic)
    for (int task = 0; task < tasks; ++task) {
      const Band b(p, task, bands, rows);
      expand_depthwise(p, a, wt, b, e, d, gemm_ws, kernel);
      const int pixels = (b.p1 - b.p0) * Q;
      if (p.has_se()) {
        const float* g = gates + std::ptrdiff_t(b.n) * Hd;
        for (std::ptrdiff_t i = 0; i < pixels; ++i) {
          float* row = d + i * Hd;
#pragma omp simd
          for (int j = 0; j < Hd; ++j) row[j] *= g[j];
        }
      }
      // The band's output rows are contiguous in y: the GEMM writes them in place.
      const std::ptrdiff_t first = (std::ptrdiff_t(b.n) * p.P() + b.p0) * Q;
      float* yb = static_cast<float*>(a.y) + first * p.C_out;
      const GemmProblem g{pixels, p.C_out, Hd, DType::f32};
      cpu_gemm::gemm_packed(g, d, static_cast<const float*>(a.project_w), yb, gemm_ws, kernel);
      const auto* bp = static_cast<const float*>(a.project_b);
      const float* xb = static_cast<const float*>(a.x) + first * p.C;  // residual: P, Q == H, W and C_out == C
      for (std::ptrdiff_t i = 0; i < pixels; ++i)
        for (int o = 0; o < p.C_out; ++o)
          yb[i * p.C_out + o] += bp[o] + (p.has_residual() ? xb[i * p.C + o] : 0.0f);
    }
  }
}

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const cpu_gemm::MicroKernelChoice& k = cpu_gemm::selected_micro_kernel();
  if (!k.avx2)
    run_portable(p, a, k.kernel);
  else if (p.activation == MBConvActivation::relu)
    run_avx2<MBConvActivation::relu>(p, a);
  else
    run_avx2<MBConvActivation::silu>(p, a);
}

const Register<MBConvProblem> reg{{
    .name = "11b_fused_two_pass",
    .device = Device::cpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "two passes over bands of rows: pass 1 expand + depthwise in cache -> per-band channel sums; SE gate; "
            "pass 2 recomputes, gates, projects and stores y once; activations in the producing loops' registers",
    .model_bytes = [](const MBConvProblem& p) {
      return p.has_se() ? p.two_pass_recompute_bytes() : p.min_bytes();
    },
}};

}  // namespace
}  // namespace convlab
