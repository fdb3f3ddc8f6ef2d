// cpu/mbconv/11c_fused_store.cpp — lesson 11, CPU rung c: the block in two passes per image, D
// stored in the thread's buffer between them.
//
// Idea over 11b_fused_two_pass: 11b makes E and D twice (pass 2 recomputes them, SiLUs and all,
// which is most of its time); here pass 1 keeps D. One thread takes one whole image: pass 1 makes
// E row by row in the ring (cpu/lib/mbconv_fused_avx2.hpp) and the depthwise stores each run of
// D into the image's buffer while adding it into the channel sums; then the gate; then pass 2
// projects straight from that buffer. The gate is folded into the project's weights —
// (D ⊙ g)·Wp = D·(diag(g)·Wp): per image Hd × C_out multiplies instead of a pass over D.
//
//   for each image n (OpenMP, dynamic):
//     for each output row op: E = φ(x[new input rows]·We + be) → ring   (as 11b)
//                             D = φ(dwconv(E) + bd) → Dn[op·Q .. op·Q + Q)   [P·Q, hidden8], per thread
//                             sums += Σ D
//     g = SE(sums / (P·Q));  Wg = diag(g)·Wp (packed as Wp)
//     for each run of 6 pixels i: y[n, i] = Dn[i]·Wg + bp (+ x[n, i])
//
// Plain loop it replaces: ref::mbconv_block, which keeps a whole image's e and d.
//
// Cost: the expand and depthwise MACs once (11b: twice), the project once. Memory traffic: x and
// y once and the weights, when D of an image (P·Q·hidden8 floats, 1.8 MB at 56² × 144) stays in
// the cache: it is written in pass 1 and read in pass 2 by the same thread, so it needs threads ×
// that in the last-level cache (past it, D goes to DRAM and back: the GPU store plan's traffic).
// Tunables: kRun, kTileRows (cpu/lib/mbconv_fused_avx2.hpp); the unit of work is one image.
// Supported: f32, any sizes. The kernels are AVX2/FMA (chosen at run time); without them (or with
// CONVLAB_NO_AVX2=1) the same plan runs per image on the portable GEMM and depthwise loops.
// Parallel over images only: N below the thread count leaves threads idle.
// Workspace: the packed weights; per thread E's ring, one image's D, its sums, gate and gated Wp
// (portable: the image's E and D and the GEMM's packing).
// Run just this: build/convlab run mbconv/cpu/11c_fused_store --shape N=32,H=56,C=24
#include <omp.h>

#include <algorithm>
#include <cstddef>

#include "cpu/lib/gemm_kernels.hpp"
#include "cpu/lib/mbconv_cpu.hpp"
#include "cpu/lib/mbconv_fused_avx2.hpp"
#include "cpu/lib/threads.hpp"

namespace convlab {
namespace {

using namespace cpu_mbconv;
using namespace cpu_mbconv::avx2;
using cpu::thread_count;

// Workspace, AVX2 path: [ the packed weights (PackedWeights) ], then per thread [ z [Cr] | sums
// (double) [Hd8] | gate [Hd8] | E's ring | D of one image [P·Q, Hd8] | Wg [panels_out][Hd8][16] ].
// Portable path: [ wt [K·K, hidden] ], then per thread [ z | sums | gate | E and D of one image
// [H·W, hidden], [P·Q, hidden] | the GEMM's packing ].
struct Layout {
  bool avx2;
  PackedWeights packed;
  std::size_t shared;                   // floats
  std::size_t z, e, d, sums, gate, wg;  // floats (sums: counted in floats)
  std::size_t gemm_bytes = 0;
  explicit Layout(const MBConvProblem& p) : avx2(cpu_gemm::selected_micro_kernel().avx2), packed(p) {
    const auto up = [](std::size_t f) { return cpu_gemm::round_up(f, cpu_gemm::kAlignFloats); };
    const std::size_t Hd8 = round8(p.hidden()), Hd = p.hidden(), PQ = std::size_t(p.P()) * p.Q();
    z = up(std::max(1, p.se_channels()));
    sums = up(2 * Hd8);
    gate = up(Hd8);
    if (avx2) {
      shared = packed.floats();
      e = up(ring_floats(p));
      d = up(PQ * Hd8);
      wg = packed.wp;
    } else {
      shared = up(Hd * p.kernel * p.kernel);
      e = p.has_expand() ? up(std::size_t(p.H) * p.W * Hd) : 0;
      d = up(PQ * Hd);
      wg = 0;
      const GemmProblem ge{p.H * p.W, p.hidden(), p.C, DType::f32}, gp{int(PQ), p.C_out, p.hidden(), DType::f32};
      gemm_bytes = cpu_gemm::round_up(std::max(p.has_expand() ? cpu_gemm::packed_workspace_bytes(ge, 1) : 0,
                                               cpu_gemm::packed_workspace_bytes(gp, 1)),
                                      std::size_t(64));
    }
  }
  std::size_t shared_bytes() const { return shared * sizeof(float); }
  std::size_t thread_bytes() const { return (z + sums + gate + e + d + wg) * sizeof(float) + gemm_bytes; }
  std::size_t bytes(int threads) const { return shared_bytes() + std::size_t(threads) * thread_bytes(); }
};

bool supports(const MBConvProblem& p) { return p.dtype == DType::f32; }

std::size_t workspace_bytes(const MBConvProblem& p) { return Layout(p).bytes(thread_count()); }

// y of pixels [i0, i0 + L) of image n from Dn (the project reads f.wp: the gated copy).
template <int L> void project_pixels(const Fused& f, int n, const float* dn, int i0) {
  const MBConvProblem& p = *f.p;
  const std::ptrdiff_t px = std::ptrdiff_t(n) * p.P() * f.Q + i0;
  // With the residual, P·Q = H·W and pixel i of y is pixel i of x.
  project_run<L>(f, dn + std::ptrdiff_t(i0) * f.Hd8, f.y + px * p.C_out, f.x + px * p.C);
}

template <MBConvActivation kAct> void run_avx2(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const Layout l(p);
  const int threads = thread_count();
  float* shared = static_cast<float*>(a.workspace);
  prepare_weights(p, a, l.packed, shared);
  const Fused f = fused_view(p, a, l.packed, shared);
  char* per_thread = reinterpret_cast<char*>(a.workspace) + l.shared_bytes();
  const int pixels = p.P() * p.Q();

#pragma omp parallel num_threads(threads)
  {
    float* z = reinterpret_cast<float*>(per_thread + std::size_t(omp_get_thread_num()) * l.thread_bytes());
    double* sums = reinterpret_cast<double*>(z + l.z);
    float* gate = reinterpret_cast<float*>(sums) + l.sums;
    Ring ring;
    ring.e = gate + l.gate;
    float* dn = ring.e + l.e;
    float* wg = dn + l.d;
    std::fill(ring.e, ring.e + l.e, 0.0f);  // the pad columns stay 0 from here on
    std::fill(gate, gate + f.Hd8, 0.0f);    // past hidden: 0 (se_gate writes the rest; Wp's pad rows are 0)
    Fused fg = f;                            // the project's view: Wp, or the image's gated copy
    if (p.has_se()) fg.wp = wg;

#pragma omp for schedule(dynamic)
    for (int n = 0; n < p.N; ++n) {
      // ---- pass 1: E, D of every output row into dn, and D's channel sums ----
      ring.n = -1;
      std::fill(sums, sums + f.Hd8, 0.0);
      for (int op = 0; op < p.P(); ++op)
        output_row<kAct, DwOut::store_sums>(f, ring, n, op, p.has_se() ? sums : nullptr, nullptr, dn);
      // ---- the gate, into the project's weights: Wg[k][o] = g[k]·Wp[k][o] ----
      if (p.has_se()) {
        se_gate(p, sums, static_cast<const float*>(a.se1_w), static_cast<const float*>(a.se1_b),
                static_cast<const float*>(a.se2_w), static_cast<const float*>(a.se2_b), z, gate);
        for (int pn = 0; pn < panels(p.C_out); ++pn)
          for (int k = 0; k < f.Hd8; ++k) {
            const std::ptrdiff_t row = (std::ptrdiff_t(pn) * f.Hd8 + k) * kPanel;
            for (int o = 0; o < kPanel; ++o) wg[row + o] = f.wp[row + o] * gate[k];
          }
      }
      // ---- pass 2: y from dn in runs of kRun pixels (the last run shorter) ----
      int i0 = 0;
      for (; i0 + kRun <= pixels; i0 += kRun) project_pixels<kRun>(fg, n, dn, i0);
      static_assert(kRun <= 8, "the tail switch below covers runs of up to 7 pixels");
      switch (pixels - i0) {
        case 1: project_pixels<1>(fg, n, dn, i0); break;
        case 2: project_pixels<2>(fg, n, dn, i0); break;
        case 3: project_pixels<3>(fg, n, dn, i0); break;
        case 4: project_pixels<4>(fg, n, dn, i0); break;
        case 5: project_pixels<5>(fg, n, dn, i0); break;
        case 6: project_pixels<6>(fg, n, dn, i0); break;
        case 7: project_pixels<7>(fg, n, dn, i0); break;
        default: break;
      }
    }
  }
}

// The portable path (no AVX2/FMA, or CONVLAB_NO_AVX2=1): the same plan per image on the GEMM
// ladder's portable micro-kernel and the shared depthwise loop, E and D of the whole image in the
// thread's buffers, bias, φ and the gate in passes of their own.
void run_portable(const MBConvProblem& p, const Args<MBConvProblem>& a, cpu_gemm::MicroKernel kernel) {
  const Layout l(p);
  const int threads = thread_count(), Hd = p.hidden(), pixels = p.P() * p.Q();
  float* wt = static_cast<float*>(a.workspace);
  transpose_depthwise(p, static_cast<const float*>(a.dw_w), wt);
  char* per_thread = reinterpret_cast<char*>(a.workspace) + l.shared_bytes();
  const auto* x = static_cast<const float*>(a.x);
  auto* y = static_cast<float*>(a.y);
  const auto* bp = static_cast<const float*>(a.project_b);

#pragma omp parallel num_threads(threads)
  {
    float* z = reinterpret_cast<float*>(per_thread + std::size_t(omp_get_thread_num()) * l.thread_bytes());
    double* sums = reinterpret_cast<double*>(z + l.z);
    float* gate = reinterpret_cast<float*>(sums) + l.sums;
    float* e = gate + l.gate;
    float* d = e + l.e;
    void* gemm_ws = d + l.d;
#pragma omp for schedule(dynamic)
    for (int n = 0; n < p.N; ++n) {
      const float* xn = x + std::ptrdiff_t(n) * p.H * p.W * p.C;
      const float* in = xn;
      if (p.has_expand()) {
        const GemmProblem g{p.H * p.W, Hd, p.C, DType::f32};
        cpu_gemm::gemm_packed(g, xn, static_cast<const float*>(a.expand_w), e, gemm_ws, kernel);
        bias_activate(int64_t(p.H) * p.W, Hd, e, static_cast<const float*>(a.expand_b), p.activation);
        in = e;
      }
      depthwise_band(p, in, 0, wt, static_cast<const float*>(a.dw_b), 0, p.P(), d);
      if (p.has_se()) {
        std::fill(sums, sums + Hd, 0.0);
        for (std::ptrdiff_t i = 0; i < pixels; ++i)
          for (int j = 0; j < Hd; ++j) sums[j] += d[i * Hd + j];
        se_gate(p, sums, static_cast<const float*>(a.se1_w), static_cast<const float*>(a.se1_b),
                static_cast<const float*>(a.se2_w), static_cast<const float*>(a.se2_b), z, gate);
        for (std::ptrdiff_t i = 0; i < pixels; ++i) {
          float* row = d + i * Hd;
#pragma omp simd
          for (int j = 0; j < Hd; ++j) row[j] *= gate[j];
        }
      }
      float* yn = y + std::ptrdiff_t(n) * pixels * p.C_out;
      const GemmProblem g{pixels, p.C_out, Hd, DType::f32};
      cpu_gemm::gemm_packed(g, d, static_cast<const float*>(a.project_w), yn, gemm_ws, kernel);
      add_bias_residual(p, pixels, yn, bp, xn);
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
    .name = "11c_fused_store",
    .device = Device::cpu,
    .lesson = 11,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "two passes per image: pass 1 expand + depthwise in cache, D stored in the thread's buffer, channel sums; "
            "SE gate folded into Wp; pass 2 projects D and stores y once",
    .model_bytes = [](const MBConvProblem& p) { return p.min_bytes(); },
}};

}  // namespace
}  // namespace convlab
