// gpu/lib/hopper/convfirst_pair.cuh — the steps of lesson 10's cluster rung cut by hidden column
// (gpu/convfirst/10g_fused_cluster_split_hidden.cu) that are the same as in the rung cut by
// output channel (gpu/convfirst/10e_fused_cluster.cu): a CTA's constants staged once, the
// grouped conv of one warp's 16 pixels into T, Z's start from the residual, one expand piece on
// wgmma, the store of y's channels of this CTA, and the cluster launch. 10e keeps its own
// inline copy of them: built on this header it measured slower at C = 256 (lesson 10's NOTES).
// L is a layout of gpu/lib/hopper/convfirst_cluster_layout.hpp (Layout or SplitLayout): both
// place T, the staged halo rows and the conv weights the same way; CTA `rank` owns channels
// [rank·kOwn, (rank + 1)·kOwn) of x, T and y.
// CUDA only, header-only, registers nothing.
#pragma once

#if defined(__CUDACC__)
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ops/convfirst.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/hopper/cluster.cuh"
#include "gpu/lib/hopper/convfirst_cluster_layout.hpp"
#include "gpu/lib/hopper/convfirst_wgmma_layout.hpp"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/wgmma_epilogue.cuh"

namespace convlab::convfirst_cluster {

inline constexpr int kGroupsPerPanel = kPanelCols / kGroupWidth;  // 8: one 16-byte chunk of a staged line each
// Conv groups per pass: eight independent mma chains per warp, one 64-channel panel of x.
// All sixteen of a CTA's 128 channels at once (64 accumulators) would not fit the registers.
inline constexpr int kPassGroups = 8;
static_assert(kGroupsPerPanel % kPassGroups == 0, "a pass stays inside one 64-channel panel of x");

// Once per CTA, every thread (tid of `threads`): this CTA's conv weights (its kOwn channels,
// [kOwn][3][3][8]) into `weights`, its fp32 biases at a_s (gpu::stage_biases: its 64 columns
// of each chunk, then b and conv_b of its channels), and the zero lines after each panel of
// every halo buffer (the buffers start at x_base). All of a thread's weight words are loaded
// before any is stored: the stores are asm volatile with a memory clobber, so a load after one
// cannot be hoisted above it, and a loop of load-store pairs paid one round trip per word.
// Readers need a barrier after it (the kernels' cluster barrier).
template <class L, class Element>
__device__ __forceinline__ void stage_cta_constants(uint32_t weights, float* a_s, uint32_t x_base,
                                                    const convfirst_wgmma::XStaging& sg, int hidden, int rank,
                                                    const Element* __restrict__ conv_w,
                                                    const Element* __restrict__ conv_b,
                                                    const Element* __restrict__ a, const Element* __restrict__ b) {
  const unsigned* w_words = reinterpret_cast<const unsigned*>(conv_w) + rank * L::kWeightWords;
  constexpr int kWordsPerThread = (L::kWeightWords + L::kThreads - 1) / L::kThreads;
  unsigned w_staged[kWordsPerThread];
#pragma unroll
  for (int k = 0; k < kWordsPerThread; ++k) {
    const int i = int(threadIdx.x) + k * L::kThreads;
    w_staged[k] = i < L::kWeightWords ? __ldg(w_words + i) : 0u;
  }
#pragma unroll
  for (int k = 0; k < kWordsPerThread; ++k) {
    const int i = int(threadIdx.x) + k * L::kThreads;
    if (i < L::kWeightWords) gpu::st_shared_u32(weights + 4 * i, w_staged[k]);
  }
  gpu::stage_biases(a_s, a, hidden, gpu::ceil_div(hidden, L::kChunk), L::kChunk, kSliceCols, rank * kSliceCols, b,
                    conv_b, rank * L::kOwn, L::kOwn, threadIdx.x, L::kThreads);
  constexpr int kZeroWords = convfirst_wgmma::kZeroLines * 128 / 4;
  for (int i = threadIdx.x; i < L::kXBuffers * sg.panels * kZeroWords; i += L::kThreads) {
    const int panel = i / kZeroWords % sg.panels, buffer = i / kZeroWords / sg.panels;
    gpu::st_shared_u32(x_base + buffer * sg.buffer_bytes + panel * sg.panel_bytes + sg.zero_index * 128 +
                           4 * (i % kZeroWords),
                       0u);
  }
}

// One consumer thread's share of a tile's grouped conv and of Z's start: thread `thread`
// (0..127) of consumer warpgroup `consumer` (pixels 64·consumer .. of the tile) in CTA `rank`.
template <class L, class Element> struct PairConv {
  uint32_t weights;             // the staged conv weights (stage_cta_constants)
  const float2* conv_b_pairs;   // this CTA's conv_b, fp32 pairs in shared memory
  const float2* b_pairs;        // this CTA's b, the same
  int consumer, thread, rank;
  int warp, g, tq;
  gpu::MatrixCoord a_row;       // the pixel and k-half this lane hands ldmatrix

  __device__ __forceinline__ PairConv(uint32_t weights_, const float2* conv_b_pairs_, const float2* b_pairs_,
                                      int consumer_, int thread_, int rank_)
      : weights(weights_), conv_b_pairs(conv_b_pairs_), b_pairs(b_pairs_), consumer(consumer_), thread(thread_),
        rank(rank_), warp(thread_ / 32), g(thread_ % 32 / 4), tq(thread_ % 4),
        a_row(gpu::ldmatrix_x4_row_address(thread_ % 32)) {}

  // Staged index of the pixel this lane hands ldmatrix at k-step j of tile t's conv:
  // pixel lane % 16 of the warp, tap 2j + lane / 16 (tap 9 does not exist: the zero pixel).
  __device__ __forceinline__ void taps(int t, int M, int H, int W, const convfirst_wgmma::XStaging& sg,
                                       int (&tap)[kConvSteps]) const {
    const int first_row = t * L::kTileRows / W - 1;
    const int pixel = t * L::kTileRows + consumer * kWgmmaM + 16 * warp + a_row.row;
#pragma unroll
    for (int j = 0; j < kConvSteps; ++j) {
      const int k = 2 * j + a_row.col / 8;
      tap[j] = k < 9 ? convfirst_wgmma::tap_index(pixel, k / 3 - 1, k % 3 - 1, M, H, W, first_row, sg.zero_index)
                     : sg.zero_index;
    }
  }

  // One mma of (this CTA's) group grp at k-step j, as 10c: B from the staged weights, A
  // straight from the staged pixels by ldmatrix. `line` is the address of the tap's staged
  // pixel in the group's panel with the swizzle's row term already in: line = panel +
  // 128·tap + 16·(tap % 8); chunk grp % 8 of the pixel sits at line ^ 16·(grp % 8) (the line
  // is 128-aligned, so the XOR is 16·((grp % 8) ^ (tap % 8)) added to its start).
  __device__ __forceinline__ void mma(float (&acc)[4], uint32_t line, int j, int grp) const {
    const int word = ((grp * kGroupWidth + g) * 72 + 2 * j * 8 + 2 * tq) / 2;
    const uint32_t bfrag[2] = {gpu::ld_shared_u32(weights + 4 * word),
                               j < 4 ? gpu::ld_shared_u32(weights + 4 * (word + 4)) : 0u};
    uint32_t afrag[4];
    gpu::ldmatrix_x4(afrag, line ^ uint32_t((grp % kGroupsPerPanel) << 4));
    gpu::mma_m16n8k16<Element>(acc, afrag, bfrag);
  }

  // The conv of this warp's 16 pixels x this CTA's channels from the halo buffer at xb, in
  // passes of kPassGroups groups: the pass's accumulators are live at once and the five
  // k-steps run outermost, so kPassGroups independent mma chains are in flight (10b's
  // order). After each pass its words of T, rounded and packed, go to
  // emit(byte offset in T, word): 16 words per pass, each two neighbouring channels of one pixel.
  template <class Emit>
  __device__ __forceinline__ void run(uint32_t xb, const convfirst_wgmma::XStaging& sg, const int (&tap)[kConvSteps],
                                      Emit&& emit) const {
#pragma unroll 1
    for (int pass = 0; pass < L::kGroups / kPassGroups; ++pass) {
      float acc[kPassGroups][4];
#pragma unroll
      for (int i = 0; i < kPassGroups; ++i) {  // the conv bias starts the sums
        const int grp = pass * kPassGroups + i;
        const float2 cb = conv_b_pairs[(grp * kGroupWidth) / 2 + tq];
        acc[i][0] = cb.x, acc[i][1] = cb.y, acc[i][2] = cb.x, acc[i][3] = cb.y;
      }
#pragma unroll
      for (int j = 0; j < kConvSteps; ++j) {
        const uint32_t line = xb + (pass * kPassGroups / kGroupsPerPanel) * sg.panel_bytes +
                              uint32_t(tap[j]) * 128u + uint32_t((tap[j] & 7) << 4);
#pragma unroll
        for (int i = 0; i < kPassGroups; ++i) mma(acc[i], line, j, pass * kPassGroups + i);
      }
#pragma unroll
      for (int i = 0; i < kPassGroups / 2; ++i) {
        const float(&lo)[4] = acc[2 * i];
        const float(&hi)[4] = acc[2 * i + 1];
        const uint32_t words[4] = {gpu::pack_pair<Element>(lo[0], lo[1]), gpu::pack_pair<Element>(lo[2], lo[3]),
                                   gpu::pack_pair<Element>(hi[0], hi[1]), gpu::pack_pair<Element>(hi[2], hi[3])};
#pragma unroll
        for (int reg = 0; reg < 4; ++reg) {
          const gpu::MatrixCoord at = L::t_fragment_coord(consumer, thread, rank, pass * kPassGroups / 2 + i, reg);
          emit(uint32_t(L::TTile::byte_offset(at.row, at.col)), words[reg]);
        }
      }
    }
  }

  // Z's start for this CTA's channels: the residual plus b. zacc[4j + c] is row
  // 16·warp + g + 8(c >> 1), column 8j + 2tq + (c & 1) of this CTA's kOwn channels
  // (kOwn / 2 registers, wgmma's accumulator layout).
  __device__ __forceinline__ void residual(float* zacc, uint32_t xb, const convfirst_wgmma::XStaging& sg, int t,
                                           int M, int H, int W) const {
    const int first_row = t * L::kTileRows / W - 1;
    const int pixel0 = t * L::kTileRows + consumer * kWgmmaM + 16 * warp;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int centre = convfirst_wgmma::tap_index(pixel0 + g + 8 * hh, 0, 0, M, H, W, first_row, sg.zero_index);
#pragma unroll
      for (int j = 0; j < L::kOwn / 8; ++j) {
        const int col = 8 * j + 2 * tq;
        const float2 xv = gpu::unpack_pair<Element>(gpu::ld_shared_u32(xb + convfirst_wgmma::x_offset(sg, centre, col)));
        const float2 bv = b_pairs[col / 2];
        zacc[4 * j + 2 * hh] = xv.x + bv.x;
        zacc[4 * j + 2 * hh + 1] = xv.y + bv.y;
      }
    }
  }

  // One store of y's channels of this CTA from zacc (kOwn / 2 registers as residual() left
  // them), rows of tile t: per row and 32 channels, the quad turns its four 8-channel blocks
  // around (gpu::quad_transpose) and each thread stores one block, 16 bytes; rows ≥ M are
  // not stored. Every lane must call it (the shuffles need the whole warp).
  __device__ __forceinline__ void store_y(const float* zacc, Element* __restrict__ y, int t, int M) const {
    const int row0 = t * L::kTileRows + consumer * kWgmmaM + 16 * warp + g;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int row = row0 + 8 * hh;
      Element* out = y + int64_t(row) * L::kC + rank * L::kOwn + 8 * tq;
#pragma unroll
      for (int m = 0; m < L::kOwn / 32; ++m) {
        uint32_t w[4];
#pragma unroll
        for (int q = 0; q < 4; ++q)
          w[q] = gpu::pack_pair<Element>(zacc[4 * (4 * m + q) + 2 * hh], zacc[4 * (4 * m + q) + 2 * hh + 1]);
        gpu::quad_transpose(w, tq);
        if (row < M) *reinterpret_cast<uint4*>(out + 32 * m) = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
  }
};

// One piece of the expand, issued and committed: S (+)= T[this warpgroup's 64 pixels,
// channels of U piece q] · U^r[those channels, this CTA's 64 columns] (kPieceSteps k-steps,
// both operands in shared memory; U piece q in ring slot `slot`). The first k-step of piece 0
// overwrites S (the previous chunk's values are dead), the others accumulate.
template <class L, class Element>
__device__ __forceinline__ void expand_piece(float (&s)[L::kSRegs], uint32_t t_base, int consumer, uint32_t slot,
                                             int q) {
  const uint64_t t_desc = L::t_descriptor(t_base, consumer, q * L::kPieceSteps);
  const uint64_t u_desc = L::u_descriptor(slot, 0);
  gpu::wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < L::kPieceSteps; ++ks) {
    const uint64_t td = gpu::wgmma_advance(t_desc, gpu::k_major_step_bytes<typename L::TTile>(ks * kWgmmaK));
    const uint64_t ud = gpu::wgmma_advance(u_desc, gpu::mn_major_step_bytes<typename L::UTile>(ks * kWgmmaK));
    if (q == 0 && ks == 0)
      gpu::wgmma_m64n64k16_ss_mn_major_b_overwrite<Element>(s, td, ud);
    else
      gpu::wgmma_m64nNk16_ss_mn_major_b<Element, kSliceCols>(s, td, ud, true);
  }
  gpu::wgmma_commit_group();
}

// ---- host: the launch -------------------------------------------------------------------

// Does the problem's halo staging (and biases) fit one CTA's shared memory under layout L?
template <class L> bool pair_fits(const ConvFirstProblem& p) {
  return cluster_shared_bytes<L>(cluster_staging<L>(p.W, int64_t(p.N) * p.H), p.hidden) <= std::size_t(kMaxShared);
}

// Launch `kernel` (either rung's: the same parameters) in clusters of L::kCluster along x,
// as many clusters as can be resident at once (at most one per tile): x in halo boxes of
// this CTA's 64-channel panels, U in {kURows, 64} boxes, V in {kVRows, 64} boxes.
template <class L, class Element, class Kernel>
void launch_pair_kernel(Kernel kernel, const ConvFirstProblem& p, const Args<ConvFirstProblem>& args,
                        const char* kernel_name, const char* variant) {
  constexpr int kE = 2;
  const int M = int(p.input_pixels());
  const convfirst_wgmma::XStaging sg = cluster_staging<L>(p.W, int64_t(p.N) * p.H);
  const CUtensorMap x_map = gpu::hopper::cached_tma_tile_2d(
      {.base = reinterpret_cast<uint64_t>(args.x), .rows = uint64_t(M), .cols = uint64_t(p.C),
       .row_stride_bytes = uint64_t(p.C) * kE, .elem_bytes = kE, .box_rows = sg.box_rows, .box_cols = kPanelCols});
  const CUtensorMap u_map = gpu::hopper::cached_tma_tile_2d(
      {.base = reinterpret_cast<uint64_t>(args.u), .rows = uint64_t(p.C), .cols = uint64_t(p.hidden),
       .row_stride_bytes = uint64_t(p.hidden) * kE, .elem_bytes = kE, .box_rows = L::kURows, .box_cols = kPanelCols});
  const CUtensorMap v_map = gpu::hopper::cached_tma_tile_2d(
      {.base = reinterpret_cast<uint64_t>(args.v), .rows = uint64_t(p.hidden), .cols = uint64_t(p.C_out),
       .row_stride_bytes = uint64_t(p.C_out) * kE, .elem_bytes = kE, .box_rows = L::kVRows, .box_cols = kPanelCols});
  const std::size_t shared = cluster_shared_bytes<L>(sg, p.hidden);
  gpu::allow_dynamic_shared(kernel, shared, kernel_name);

  gpu::hopper::ClusterLaunch launcher(L::kCluster, dim3(L::kThreads), shared);
  const int tiles = gpu::ceil_div(M, L::kTileRows);
  // 0 (a cluster the device cannot co-schedule) is refused inside with a DeviceError
  const int clusters = std::min(tiles, launcher.max_active_clusters(kernel, variant));
  launcher.launch(dim3(L::kCluster * clusters), kernel, (std::string("launching ") + kernel_name).c_str(), x_map,
                  u_map, v_map, sg, M, p.H, p.W, p.hidden, static_cast<const Element*>(args.conv_w),
                  static_cast<const Element*>(args.conv_b), static_cast<const Element*>(args.a),
                  static_cast<const Element*>(args.b), static_cast<Element*>(args.y));
}

}  // namespace convlab::convfirst_cluster
#endif  // __CUDACC__
