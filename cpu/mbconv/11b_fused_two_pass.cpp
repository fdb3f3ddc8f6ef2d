// cpu/mbconv/11b_fused_two_pass.cpp — lesson 11, CPU rung b: the block in two passes over bands of rows, in cache.
//
// Idea over 11a_layer_by_layer: block fusion around the one global step.
// The SE's mean needs every pixel of an image before any pixel of y can be
// finished, so one pass cannot do it; two passes can, and neither stores e
// or d — pass 2 makes them again (the "recompute" plan of the lesson):
//
//   pass 1, for each band of whole output rows (E and D within kBandBytes), OpenMP:
//     E = φ(x[band's input rows + halo]·We + be)      [rows_in, W, hidden]   per-thread buffer, in L2
//     D = φ(dwconv(E) + bd)                           [band, hidden]         per-thread buffer, in L2
//     partial[band] = Σ_pixels D                       [hidden]               one row per band: no races
//   gate, per image: sums = Σ_band partial (in band order: deterministic); g = SE(sums / (P·Q))
//   pass 2, for each band: E, D again; D ⊙= g; y[band] = D·Wp + bp (+ x)   written once, straight into y
//
// Plain loop it replaces: ref::mbconv_block, which keeps a whole image's e and d.
// Cost: the expand and depthwise MACs twice (the project once); memory
// traffic x twice, y once, the weights (packed per band by the GEMM:
// small). MBConvProblem::two_pass_recompute_bytes() is the floor.
// Tunables: kBandBytes (the bytes of E and D a band of whole output rows may take).
// Supported: f32, any sizes. Workspace: per-band partial sums, gates, and per
// thread E, D and the GEMM's packing buffers — it does not grow with N, only
// with the band's width W.
// Run just this: build/convlab run mbconv/cpu/11b_fused_two_pass --shape N=8,H=56,C=24
#include <omp.h>

#include <algorithm>
#include <cstddef>

#include "cpu/lib/gemm_kernels.hpp"
#include "cpu/lib/mbconv_cpu.hpp"
#include "cpu/lib/threads.hpp"

namespace convlab {
namespace {

using namespace cpu_mbconv;
using cpu::thread_count;

// ---- tunables ----------------------------------------------------------------------
constexpr std::size_t kBandBytes = 512 * 1024;  // E and D of one band: half of a core's L2
static_assert(kBandBytes <= cpu_gemm::kL2Bytes / 2, "E and D of a band share L2 with the GEMM's packed panels");

// Input rows a band of `rows` output rows reads, and the most output rows per
// band whose E and D fit kBandBytes (at least one). Tall bands matter: a band
// of R rows recomputes (R − 1)·stride + K input rows of the expand, K/R more
// than the R·stride it owns (3x at R = 1, K = 3).
int input_rows_for(const MBConvProblem& p, int rows) { return std::min(p.H, (rows - 1) * p.stride + p.kernel); }
int band_rows(const MBConvProblem& p) {
  const auto bytes = [&](int rows) {
    const double e = p.has_expand() ? double(input_rows_for(p, rows)) * p.W * p.hidden() : 0.0;
    return (e + double(rows) * p.Q() * p.hidden()) * sizeof(float);
  };
  int rows = 1;
  while (rows < p.P() && bytes(rows + 1) <= double(kBandBytes)) ++rows;
  return rows;
}
int input_rows(const MBConvProblem& p) { return input_rows_for(p, band_rows(p)); }
int bands_per_image(const MBConvProblem& p) { return (p.P() + band_rows(p) - 1) / band_rows(p); }

// Workspace: shared [ wt (depthwise, transposed) | partial sums (double) | gates ],
// per thread [ E | D | GEMM packing ].
struct Layout {
  std::size_t wt, partial, gates, z, e, d, gemm_bytes;  // floats (partial: counted in floats), bytes
  explicit Layout(const MBConvProblem& p) {
    const auto up = [](std::size_t f) { return cpu_gemm::round_up(f, cpu_gemm::kAlignFloats); };
    const std::size_t Hd = p.hidden();
    wt = up(Hd * p.kernel * p.kernel);
    partial = p.has_se() ? up(2 * std::size_t(p.N) * bands_per_image(p) * Hd) : 0;
    gates = p.has_se() ? up(std::size_t(p.N) * Hd) : 0;
    z = up(std::max(1, p.se_channels()));
    e = p.has_expand() ? up(std::size_t(input_rows(p)) * p.W * Hd) : 0;
    d = up(std::size_t(band_rows(p)) * p.Q() * Hd);
    const GemmProblem ge{input_rows(p) * p.W, p.hidden(), p.C, DType::f32};
    const GemmProblem gp{band_rows(p) * p.Q(), p.C_out, p.hidden(), DType::f32};
    gemm_bytes = cpu_gemm::round_up(std::max(p.has_expand() ? cpu_gemm::packed_workspace_bytes(ge, 1) : 0,
                                             cpu_gemm::packed_workspace_bytes(gp, 1)),
                                    std::size_t(64));
  }
  std::size_t shared_bytes() const { return (wt + partial + gates) * sizeof(float); }
  std::size_t thread_bytes() const { return (z + e + d) * sizeof(float) + gemm_bytes; }
  std::size_t bytes(int threads) const { return shared_bytes() + std::size_t(threads) * thread_bytes(); }
};

bool supports(const MBConvProblem& p) { return p.dtype == DType::f32; }

std::size_t workspace_bytes(const MBConvProblem& p) { return Layout(p).bytes(thread_count()); }

// E and D of band b of image n into the thread's buffers: D holds output rows [p0, p1).
void expand_depthwise(const MBConvProblem& p, const Args<MBConvProblem>& a, const float* wt, int n, int p0, int p1,
                      float* e, float* d, void* gemm_ws, cpu_gemm::MicroKernel kernel) {
  const int pad = p.kernel / 2, Hd = p.hidden();
  const int h0 = std::max(0, p0 * p.stride - pad), h1 = std::min(p.H, (p1 - 1) * p.stride - pad + p.kernel);
  const float* image = static_cast<const float*>(a.x) + std::ptrdiff_t(n) * p.H * p.W * p.C;
  const float* in = image + std::ptrdiff_t(h0) * p.W * p.C;  // no expand: the depthwise reads x's rows directly
  if (p.has_expand()) {
    // E = x[h0..h1) · We: one GEMM of (h1 − h0)·W rows, then + be, φ while it is in cache.
    const GemmProblem g{(h1 - h0) * p.W, Hd, p.C, DType::f32};
    cpu_gemm::gemm_packed(g, in, static_cast<const float*>(a.expand_w), e, gemm_ws, kernel);
    bias_activate(int64_t(h1 - h0) * p.W, Hd, e, static_cast<const float*>(a.expand_b), p.activation);
    in = e;
  }
  depthwise_band(p, in, h0, wt, static_cast<const float*>(a.dw_b), p0, p1, d);
}

void run(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const Layout l(p);
  const int threads = thread_count();
  float* wt = static_cast<float*>(a.workspace);
  double* partial = reinterpret_cast<double*>(wt + l.wt);
  float* gates = wt + l.wt + l.partial;
  char* per_thread = reinterpret_cast<char*>(a.workspace) + l.shared_bytes();
  const cpu_gemm::MicroKernel kernel = cpu_gemm::selected_micro_kernel().kernel;
  const int Hd = p.hidden(), rows = band_rows(p), bands = bands_per_image(p), P = p.P(), Q = p.Q();
  const int tasks = p.N * bands;
  transpose_depthwise(p, static_cast<const float*>(a.dw_w), wt);

#pragma omp parallel num_threads(threads)
  {
    char* mine = per_thread + std::size_t(omp_get_thread_num()) * l.thread_bytes();
    float* z = reinterpret_cast<float*>(mine);
    float* e = z + l.z;
    float* d = e + l.e;
    void* gemm_ws = d + l.d;

    // ---- pass 1: per-band channel sums of D (only with SE) ----
    if (p.has_se()) {
#pragma omp for schedule(dynamic)
      for (int task = 0; task < tasks; ++task) {
        const int n = task / bands, b = task % bands, p0 = b * rows, p1 = std::min(P, p0 + rows);
        expand_depthwise(p, a, wt, n, p0, p1, e, d, gemm_ws, kernel);
        double* s = partial + std::ptrdiff_t(task) * Hd;
        std::fill(s, s + Hd, 0.0);
        for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(p1 - p0) * Q; ++i)
          for (int j = 0; j < Hd; ++j) s[j] += d[i * Hd + j];
      }
      // ---- the gate: per image, the bands' sums in band order ----
#pragma omp for schedule(static)
      for (int n = 0; n < p.N; ++n) {
        double* total = partial + std::ptrdiff_t(n) * bands * Hd;  // band 0's row accumulates the rest
        for (int b = 1; b < bands; ++b)
          for (int j = 0; j < Hd; ++j) total[j] += total[std::ptrdiff_t(b) * Hd + j];
        se_gate(p, total, static_cast<const float*>(a.se1_w), static_cast<const float*>(a.se1_b),
                static_cast<const float*>(a.se2_w), static_cast<const float*>(a.se2_b), z, gates + std::ptrdiff_t(n) * Hd);
      }
    }

    // ---- pass 2: recompute, gate, project, bias, residual, store ----
#pragma omp for schedule(dynamic)
    for (int task = 0; task < tasks; ++task) {
      const int n = task / bands, b = task % bands, p0 = b * rows, p1 = std::min(P, p0 + rows);
      expand_depthwise(p, a, wt, n, p0, p1, e, d, gemm_ws, kernel);
      const int pixels = (p1 - p0) * Q;
      if (p.has_se()) {
        const float* g = gates + std::ptrdiff_t(n) * Hd;
        for (std::ptrdiff_t i = 0; i < pixels; ++i) {
          float* row = d + i * Hd;
#pragma omp simd
          for (int j = 0; j < Hd; ++j) row[j] *= g[j];
        }
      }
      // The band's output rows are contiguous in y: the GEMM writes them in place.
      const std::ptrdiff_t first = (std::ptrdiff_t(n) * P + p0) * Q;
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

const Register<MBConvProblem> reg{{
    .name = "11b_fused_two_pass",
    .device = Device::cpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "two passes over bands of rows: pass 1 expand + depthwise in cache -> per-band channel sums; SE gate; "
            "pass 2 recomputes, gates, projects and stores y once",
    .model_bytes = [](const MBConvProblem& p) {
      return p.has_se() ? p.two_pass_recompute_bytes() : p.min_bytes();
    },
}};

}  // namespace
}  // namespace convlab
