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
// Tunables: kBandRows (rows per task) here; kRun (pixels per depthwise run = rows
// of the project's tile) and kTileRows (pixels of the expand's tile) in the
// kernels' header, cpu/lib/mbconv_fused_avx2.hpp, which 11c shares.
// Supported: f32, any sizes. The kernels are AVX2/FMA (chosen at run time, as
// the GEMM ladder's micro-kernel is: selected_micro_kernel()); without them
// (or with CONVLAB_NO_AVX2=1) the same two passes run per band on the portable
// GEMM and depthwise loops, with E, D and the biases in passes of their own.
// Workspace: per-band partial sums and gates (with SE), the packed weights, and
// per thread the ring and Dt (portable: a band's E and D, the GEMM's packing);
// the per-thread part does not grow with N, only with W.
// Run just this: build/convlab run mbconv/cpu/11b_fused_two_pass --shape N=32,H=56,C=24
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "cpu/lib/gemm_kernels.hpp"
#include "cpu/lib/mbconv_cpu.hpp"
#include "cpu/lib/mbconv_fused_avx2.hpp"
#include "cpu/lib/threads.hpp"

namespace convlab {
namespace {

using namespace cpu_mbconv;
using namespace cpu_mbconv::avx2;
using cpu::thread_count;

// ---- tunables (the kernels' own: cpu/lib/mbconv_fused_avx2.hpp) ------------------------
constexpr int kBandRows = 8;   // output rows per task (the unit of work, and of the SE's partial sums)

// Input rows a band of `rows` output rows reads: (rows − 1)·stride + K.
int input_rows_for(const MBConvProblem& p, int rows) { return std::min(p.H, (rows - 1) * p.stride + p.kernel); }
int band_rows(const MBConvProblem& p) { return std::min(p.P(), kBandRows); }
int bands_per_image(const MBConvProblem& p) { return (p.P() + band_rows(p) - 1) / band_rows(p); }

// Workspace. Shared: [ wt [K·K, hidden8] | bd [hidden8] | be [panels·16] | We packed [panels][C][16] |
//   Wp packed [panels_out][hidden8][16] | bp [panels_out·16] | partial sums (double) [N·bands, hidden8] |
//   gates [N, hidden8] ]. Per thread: [ z | E's ring (portable path: E of a band) | Dt |
//   (portable path) D of a band and the GEMM's packing ].
struct Layout {
  PackedWeights packed;
  std::size_t wt, bd, be, we, wp, bp, partial, gates;  // floats (partial: counted in floats)
  std::size_t z, e, dt, d, gemm_bytes;                 // floats ..., bytes
  explicit Layout(const MBConvProblem& p) : packed(p) {
    const auto up = [](std::size_t f) { return cpu_gemm::round_up(f, cpu_gemm::kAlignFloats); };
    const std::size_t Hd8 = round8(p.hidden());
    wt = packed.wt, bd = packed.bd, be = packed.be, we = packed.we, wp = packed.wp, bp = packed.bp;
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
// The kernels (expand, depthwise, project, φ, the packing): cpu/lib/mbconv_fused_avx2.hpp.

template <MBConvActivation kAct> void run_avx2(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const Layout l(p);
  const int threads = thread_count();
  float* shared = static_cast<float*>(a.workspace);
  prepare_weights(p, a, l.packed, shared);
  const Fused f = fused_view(p, a, l.packed, shared);
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
        for (int op = b.p0; op < b.p1; ++op) output_row<kAct, DwOut::sums>(f, ring, b.n, op, s, nullptr, dt);
      }
      gates_from_partials(p, a, bands, f.Hd8, partial, z, gates);  // (implied barriers before and after)
    }

    // ---- pass 2: recompute, gate, project, bias, residual, store ----
    ring.n = -1;
#pragma omp for schedule(dynamic, chunk)
    for (int task = 0; task < tasks; ++task) {
      const Band b(p, task, bands, rows);
      const float* g = p.has_se() ? gates + std::ptrdiff_t(b.n) * f.Hd8 : nullptr;
      for (int op = b.p0; op < b.p1; ++op) output_row<kAct, DwOut::gate_project>(f, ring, b.n, op, nullptr, g, dt);
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
      const float* xb = static_cast<const float*>(a.x) + first * p.C;
      add_bias_residual(p, pixels, yb, bp, xb);
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
