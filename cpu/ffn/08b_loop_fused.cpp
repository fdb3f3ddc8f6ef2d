// cpu/ffn/08b_loop_fused.cpp — lesson 08, rung 08b: loop fusion, the hidden tensor never exists.
//
// Idea over 08a_layer_by_layer: Eq. 32. φ acts on each hidden channel on its
// own, so the columns of U can be taken a chunk at a time, and each chunk's
// hidden values used at once by the matching rows of V:
//
//   FFN(X) = Σ_r φ(X·U^r + a_r)·V_r + b       r over chunks of TH hidden channels
//
// It is exact, not an approximation: the sum over hidden channels inside
// H·V is merely split into partial sums, and φ never mixes channels. Per row
// tile of TM rows (all on one thread, all in its own L2):
//
//   for each row tile X_t [TM, C]:                 (OpenMP: tiles dealt out dynamically)
//     pack X_t once                                A operand of GEMM 1, reused by every chunk
//     for r in chunks of TH hidden channels:
//       H_r = X_t · U^r                            [TM, TH]  micro-kernel GEMM, lesson 03's
//       H_r = φ(H_r + a_r)                         in place, still in L1/L2
//       Z_t += H_r · V_r                           [TM, C_out], accumulated in z's own rows
//     Z_t += b
//
// Plain loop equivalent (what a student would write first):
//   for i < P: for r < hidden: h = φ(Σ_c x[i,c]·u[c,r] + a[r]); for j: z[i,j] += h·v[r,j]
//
// The weights are packed once per run into micro-panels (shared, read by all
// threads); per thread a packed X tile, one H tile and its packed copy.
// Workspace: C·hidden + hidden·C_out floats of packed weights plus a few
// TM × max(C, TH) tiles per thread — independent of P. The layer-by-layer
// rung needed P·hidden floats (6.4 MB at P = 6272, hidden = 256; 411 MB at
// P = 401408); this one needs ~0.37 MB at any P (2 threads, C = 64: 128 KiB of packed
// weights and 120 KiB of tiles per thread).
//
// Cost: the same FLOPs, plus re-packing each H tile (TM·hidden floats per
// tile, 1/(2·C_out) of the tile's FLOPs in copies), and the GEMMs run on
// TM-row tiles, short enough that the micro-kernel's edge handling and call
// overhead show. DRAM traffic drops to x, z and the weights.
//
// Supported: f32, any sizes. Run just this: build/convlab run ffn/cpu/08b_loop_fused
#include <omp.h>

#include <algorithm>
#include <cstddef>

#include "ops/ffn.hpp"
#include "cpu/lib/threads.hpp"
#include "cpu/lib/ffn_cpu.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;

// ---- tunables ---------------------------------------------------------------
constexpr int kRowTile = 96;      // TM: rows of X and Z per tile (one thread's share at a time)
constexpr int kHiddenChunk = 128;  // TH: hidden channels per step of the fused loop

static_assert(kRowTile % kMR == 0, "row tiles of whole MR-row micro-panels: no padded rows inside a tile");
static_assert(kHiddenChunk % kNR == 0, "a chunk of U is whole NR-column micro-panels");
static_assert(kHiddenChunk <= kKC, "a chunk is one depth slice of GEMM 2 (V_r packed in one panel)");
static_assert(std::size_t(kRowTile) * kHiddenChunk * sizeof(float) * 2 <= kL2Bytes / 4,
              "the H tile and its packed copy stay in a quarter of L2");

// ---- workspace layout -------------------------------------------------------
//   shared:     packed U   chunks × depth slices of [KCmax × TH] micro-panels
//               packed V   chunks of [TH × C_out padded to NR] micro-panels
//   per thread: packed X tile (depth slices of [TM × KCmax])
//               H tile [TM × TH], row-major
//               packed H tile [TM × TH] micro-panels
struct Layout {
  int chunks, slices, kc_max;   // hidden chunks, depth slices of C, widest slice
  std::size_t u_panel, v_panel;  // floats per packed U panel (chunk, slice) and per packed V chunk
  std::size_t x_slice;           // floats per depth slice of the packed X tile
  std::size_t shared_floats, thread_floats;
  std::size_t h_tile, hp_tile;

  explicit Layout(const FfnProblem& p) {
    chunks = (p.hidden + kHiddenChunk - 1) / kHiddenChunk;
    kc_max = std::min(p.C, kKC);
    slices = (p.C + kKC - 1) / kKC;
    u_panel = round_up(std::size_t(kc_max) * kHiddenChunk, kAlignFloats);
    v_panel = round_up(std::size_t(kHiddenChunk) * round_up(std::size_t(p.C_out), kNR), kAlignFloats);
    shared_floats = std::size_t(chunks) * (std::size_t(slices) * u_panel + v_panel);
    x_slice = round_up(std::size_t(kRowTile) * kc_max, kAlignFloats);
    h_tile = round_up(std::size_t(kRowTile) * kHiddenChunk, kAlignFloats);
    hp_tile = h_tile;
    thread_floats = std::size_t(slices) * x_slice + h_tile + hp_tile;
  }
};

using cpu::thread_count;

std::size_t workspace_bytes(const FfnProblem& p) {
  const Layout l(p);
  return (l.shared_floats + std::size_t(thread_count()) * l.thread_floats) * sizeof(float);
}

void run(const FfnProblem& p, const Args<FfnProblem>& args) {
  const Layout l(p);
  const int threads = thread_count();
  const auto* x = static_cast<const float*>(args.x);  // [P, C]
  const auto* u = static_cast<const float*>(args.u);  // [C, hidden]
  const auto* a = static_cast<const float*>(args.a);  // [hidden]
  const auto* v = static_cast<const float*>(args.v);  // [hidden, C_out]
  const auto* b = static_cast<const float*>(args.b);  // [C_out]
  float* z = static_cast<float*>(args.z);             // [P, C_out]
  float* u_packed = static_cast<float*>(args.workspace);
  float* v_packed = u_packed + std::size_t(l.chunks) * l.slices * l.u_panel;
  float* per_thread = static_cast<float*>(args.workspace) + l.shared_floats;
  const MicroKernel kernel = selected_micro_kernel().kernel;
  const auto chunk_width = [&](int r) { return std::min(kHiddenChunk, p.hidden - r * kHiddenChunk); };
  const int row_tiles = (p.P + kRowTile - 1) / kRowTile;

#pragma omp parallel num_threads(threads)
  {
    // Pack the weights once, together: U^r (depth slice s) and V_r per chunk r.
#pragma omp for schedule(static)
    for (int r = 0; r < l.chunks; ++r) {
      const int th = chunk_width(r);
      for (int s = 0; s < l.slices; ++s) {
        const int kc = std::min(kKC, p.C - s * kKC);
        pack_b(kc, th, u + std::ptrdiff_t(s) * kKC * p.hidden + r * kHiddenChunk, p.hidden,
               u_packed + (std::size_t(r) * l.slices + s) * l.u_panel);
      }
      pack_b(th, p.C_out, v + std::ptrdiff_t(r) * kHiddenChunk * p.C_out, p.C_out,
             v_packed + std::size_t(r) * l.v_panel);
    }
    // (implicit barrier: every panel is packed before any tile reads it)

    float* mine = per_thread + std::size_t(omp_get_thread_num()) * l.thread_floats;
    float* x_packed = mine;                                  // slices × [TM × kc] micro-panels
    float* h = x_packed + std::size_t(l.slices) * l.x_slice;  // [TM, TH] row-major, ld = TH
    float* h_packed = h + l.h_tile;                           // the same as A micro-panels

#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < row_tiles; ++t) {
      const int i0 = t * kRowTile;
      const int tm = std::min(kRowTile, p.P - i0);
      float* z_tile = z + std::ptrdiff_t(i0) * p.C_out;
      for (int s = 0; s < l.slices; ++s) {
        const int kc = std::min(kKC, p.C - s * kKC);
        pack_a(tm, kc, x + std::ptrdiff_t(i0) * p.C + s * kKC, p.C, x_packed + s * l.x_slice);
      }
      for (int r = 0; r < l.chunks; ++r) {
        const int th = chunk_width(r);
        // H_r = X_t · U^r: the first depth slice writes, the later ones add.
        for (int s = 0; s < l.slices; ++s) {
          const int kc = std::min(kKC, p.C - s * kKC);
          macro_kernel(tm, th, kc, x_packed + s * l.x_slice, u_packed + (std::size_t(r) * l.slices + s) * l.u_panel,
                       h, kHiddenChunk, /*accumulate=*/s > 0, kernel);
        }
        // H_r = φ(H_r + a_r): element-wise on hidden channels, so chunk by chunk is exact.
        cpu_ffn::bias_activate(tm, th, h, kHiddenChunk, a + r * kHiddenChunk, p.activation);
        // Z_t += H_r · V_r: the first chunk writes z (poison-safe), the later ones add.
        pack_a(tm, th, h, kHiddenChunk, h_packed);
        macro_kernel(tm, p.C_out, th, h_packed, v_packed + std::size_t(r) * l.v_panel, z_tile, p.C_out,
                     /*accumulate=*/r > 0, kernel);
      }
      cpu_ffn::add_bias(tm, p.C_out, z_tile, p.C_out, b);
    }
  }
}

const Register<FfnProblem> reg{{
    .name = "08b_loop_fused",
    .device = Device::cpu,
    .lesson = 8,
    .supports = f32_only<FfnProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "Eq. 32: per row tile, loop over hidden chunks, H_r = φ(X·U^r + a_r) in cache, Z += H_r·V_r",
}};

}  // namespace
}  // namespace convlab
