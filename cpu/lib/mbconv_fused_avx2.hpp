// cpu/lib/mbconv_fused_avx2.hpp — the AVX2/FMA kernels of lesson 11's fused CPU rungs (11b's two
// passes that recompute, 11c's two passes that store D per image): the expand of a row into a
// ring of E rows with φ on the registers, the depthwise in runs of pixels with φ and what the
// rung does with D (sums, gate + project, store), the project of a run from a tile of D, the SiLU
// of many vectors at once, and the weights packed once per call. fp32, NHWC. Header-only,
// registers nothing; every kernel is compiled for AVX2/FMA (target attribute) whatever the build
// flags say, and is called only after the run-time check (cpu_gemm::selected_micro_kernel()).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "core/registry.hpp"
#include "cpu/lib/gemm_kernels.hpp"
#include "cpu/lib/mbconv_cpu.hpp"

namespace convlab::cpu_mbconv::avx2 {

// ---- tunables ----------------------------------------------------------------------
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

inline int round8(int n) { return (n + kVec - 1) / kVec * kVec; }
inline int panels(int n) { return (n + kPanel - 1) / kPanel; }
inline int pad_of(const MBConvProblem& p) { return p.kernel / 2; }
inline int padded_width(const MBConvProblem& p) { return p.W + 2 * pad_of(p); }

// E's ring: the K input rows one output row reads (row h in slot h mod K), padded [K, W + 2·pad, hidden8].
inline std::size_t ring_floats(const MBConvProblem& p) { return std::size_t(p.kernel) * padded_width(p) * round8(p.hidden()); }

// The weights, packed once per call into one shared buffer (counts in floats, each region
// aligned): wt [K·K, Hd8] | bd [Hd8] | be [16·panels] | We [panel][C][16] | Wp [panel][Hd8][16] |
// bp [16·panels]; every pad entry 0.
struct PackedWeights {
  std::size_t wt, bd, be, we, wp, bp;
  explicit PackedWeights(const MBConvProblem& p) {
    const auto up = [](std::size_t f) { return cpu_gemm::round_up(f, cpu_gemm::kAlignFloats); };
    const std::size_t Hd8 = round8(p.hidden()), pe = panels(p.hidden()), pp = panels(p.C_out);
    wt = up(Hd8 * p.kernel * p.kernel);
    bd = up(Hd8);
    be = up(pe * kPanel);
    we = p.has_expand() ? up(pe * kPanel * p.C) : 0;
    wp = up(pp * kPanel * Hd8);
    bp = up(pp * kPanel);
  }
  std::size_t floats() const { return wt + bd + be + we + wp + bp; }
};

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
__attribute__((target("avx2,fma"))) inline void expand_pixels(const Fused& f, const float* a, float* e) {
  constexpr int G = kTileRows / M > 1 ? kTileRows / M : 1;
  int col = 0;
  if constexpr (G > 1)
    for (; col + G * kPanel <= f.Hd8; col += G * kPanel) expand_block<kAct, M, G>(f, a, e, col, true);
  for (; col < f.Hd8; col += kPanel) expand_block<kAct, M, 1>(f, a, e, col, col + kPanel <= f.Hd8);
}

// E of input row h of image n into its ring slot (interior columns; the pad
// columns stay zero): runs of kTileRows pixels, the last run shorter.
template <MBConvActivation kAct>
__attribute__((target("avx2,fma"))) inline void expand_row(const Fused& f, int n, int h, float* ring) {
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
__attribute__((target("avx2,fma"))) inline void project_panel(const Fused& f, const float* dt, int col, float* y,
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
__attribute__((target("avx2,fma"))) inline void project_run(const Fused& f, const float* dt, float* y, const float* xres) {
  for (int col = 0; col < f.p->C_out; col += kPanel)
    if (f.p->C_out - col > kVec)
      project_panel<L, 2>(f, dt, col, y, xres);
    else
      project_panel<L, 1>(f, dt, col, y, xres);
}

// What a depthwise run does with its D: 11b's pass 1 adds it into the channel sums; 11b's pass 2
// gates it into the L1 tile Dt and projects the run at once; 11c's pass 1 stores it into the
// image's D buffer and adds it into the sums.
enum class DwOut { sums, gate_project, store_sums };

// One run: output pixels (op, q0 .. q0 + L) of image n, every channel.
// rows[r] is E's input row op·s + r − pad (padded: column 0 is the first pad column), for r in [r_lo, r_hi).
//   plain loop: for c8 step 8: acc[j] = bd + Σ_{r,t} rows[r][(q0 + j)·s + t][c8..] · wt[r·K + t][c8..]
//               D = φ(acc);  sums: sums[c8..] += Σ_j D[j];  gate_project: Dt[j][c8..] = D[j] · g[c8..]
//               store_sums: D_image[op·Q + q0 + j][c8..] = D[j], sums as above (when sums is given)
// then (gate_project) the run's y from Dt while Dt is in L1. The channels go NV = 2
// vectors at a time (2·L chains of φ side by side), the last 8 of a
// hidden8 = 16·i + 8 alone (NV = 1).
template <int L, int K, MBConvActivation kAct, DwOut kOut, int NV>
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
    if constexpr (kOut == DwOut::store_sums) {
#pragma GCC unroll 8
      for (int j = 0; j < L; ++j) _mm256_store_ps(dt + j * f.Hd8 + cv, acc[j * NV + v]);
    }
    if constexpr (kOut != DwOut::gate_project) {
      if (kOut == DwOut::sums || sums) {
        __m256 sum = acc[v];
#pragma GCC unroll 8
        for (int j = 1; j < L; ++j) sum = _mm256_add_ps(sum, acc[j * NV + v]);
        _mm256_storeu_pd(sums + cv,
                         _mm256_add_pd(_mm256_loadu_pd(sums + cv), _mm256_cvtps_pd(_mm256_castps256_ps128(sum))));
        _mm256_storeu_pd(sums + cv + 4,
                         _mm256_add_pd(_mm256_loadu_pd(sums + cv + 4), _mm256_cvtps_pd(_mm256_extractf128_ps(sum, 1))));
      }
    } else {
      const __m256 g = gate ? _mm256_load_ps(gate + cv) : _mm256_set1_ps(1.0f);
#pragma GCC unroll 8
      for (int j = 0; j < L; ++j) _mm256_store_ps(dt + j * f.Hd8 + cv, _mm256_mul_ps(acc[j * NV + v], g));
    }
  }
}
template <int L, int K, MBConvActivation kAct, DwOut kOut>
__attribute__((target("avx2,fma"))) inline void depthwise_run(const Fused& f, const float* const (&rows)[K], int r_lo,
                                                       int r_hi, int n, int op, int q0, double* sums,
                                                       const float* gate, float* dt) {
  const MBConvProblem& p = *f.p;
  const std::ptrdiff_t first = std::ptrdiff_t(q0) * p.stride * f.Hd8;
  // store_sums: dt is the image's D buffer [P·Q, Hd8]; the run's rows start at its pixel.
  float* dst = kOut == DwOut::store_sums ? dt + (std::ptrdiff_t(op) * f.Q + q0) * f.Hd8 : dt;
  int c = 0;
  for (; c + 2 * kVec <= f.Hd8; c += 2 * kVec)
    depthwise_channels<L, K, kAct, kOut, 2>(f, rows, r_lo, r_hi, first, c, sums, gate, dst);
  if (c < f.Hd8) depthwise_channels<L, K, kAct, kOut, 1>(f, rows, r_lo, r_hi, first, c, sums, gate, dst);
  if constexpr (kOut == DwOut::gate_project) {
    const std::ptrdiff_t px = (std::ptrdiff_t(n) * p.P() + op) * f.Q + q0;
    const float* xres = f.x + ((std::ptrdiff_t(n) * p.H + op) * p.W + q0) * p.C;  // used only with the residual
    project_run<L>(f, dt, f.y + px * p.C_out, xres);
  }
}

// Output row op of image n: its input rows made present in the ring, then runs
// of kRun pixels (the last run shorter).
template <int K, MBConvActivation kAct, DwOut kOut>
__attribute__((target("avx2,fma"))) inline void depthwise_row(const Fused& f, Ring& ring, int n, int op, double* sums,
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
    depthwise_run<kRun, K, kAct, kOut>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt);
  static_assert(kRun <= 8, "the tail switch below covers runs of up to 7 pixels");
  switch (f.Q - q0) {
    case 1: depthwise_run<1, K, kAct, kOut>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 2: depthwise_run<2, K, kAct, kOut>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 3: depthwise_run<3, K, kAct, kOut>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 4: depthwise_run<4, K, kAct, kOut>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 5: depthwise_run<5, K, kAct, kOut>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 6: depthwise_run<6, K, kAct, kOut>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    case 7: depthwise_run<7, K, kAct, kOut>(f, rows, r_lo, r_hi, n, op, q0, sums, gate, dt); break;
    default: break;
  }
}
template <MBConvActivation kAct, DwOut kOut>
inline void output_row(const Fused& f, Ring& ring, int n, int op, double* sums, const float* gate, float* dt) {
  if (f.p->kernel == 3)
    depthwise_row<3, kAct, kOut>(f, ring, n, op, sums, gate, dt);
  else
    depthwise_row<5, kAct, kOut>(f, ring, n, op, sums, gate, dt);
}

// The weights into `shared`, laid out as PackedWeights says; every pad entry 0.
inline void prepare_weights(const MBConvProblem& p, const Args<MBConvProblem>& a, const PackedWeights& l, float* shared) {
  const int Hd = p.hidden(), Hd8 = round8(Hd), taps = p.kernel * p.kernel;
  std::memset(shared, 0, l.floats() * sizeof(float));
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

// The kernels' view of one call: the problem, the packed weights at `packed`, x and y.
inline Fused fused_view(const MBConvProblem& p, const Args<MBConvProblem>& a, const PackedWeights& l,
                        const float* packed) {
  Fused f;
  f.p = &p, f.Hd8 = round8(p.hidden()), f.Wp = padded_width(p), f.pad = pad_of(p), f.Q = p.Q();
  f.wt = packed, f.bd = f.wt + l.wt, f.be = f.bd + l.bd, f.we = f.be + l.be, f.wp = f.we + l.we, f.bp = f.wp + l.wp;
  f.x = static_cast<const float*>(a.x), f.y = static_cast<float*>(a.y);
  return f;
}

}  // namespace convlab::cpu_mbconv::avx2
