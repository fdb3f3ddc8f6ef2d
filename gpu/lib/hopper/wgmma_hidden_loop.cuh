// gpu/lib/hopper/wgmma_hidden_loop.cuh — Eq. 32's loop over hidden chunks on
// wgmma, fed by a TMA ring, written once for the wgmma rungs whose expand A
// operand differs but whose chunk loop is the same: lesson 08's fused FFN
// (gpu/ffn/08d_fused_wgmma.cu, A = the X tile in shared memory) and lesson 10's
// fused ConvFirst block (gpu/convfirst/10c_fused_wgmma.cu, A = T in registers).
//
//   producer (one thread), per tile:          consumer warpgroup, per tile:
//     for r in chunks of TH:                    for r in chunks of TH:
//       acquire slot r % S                        wait slot r % S
//       U^r box(es) [C, TH], V_r box(es) [TH, C]  S = A·U^r                  (the caller's expand)
//                                                 H = φ(S + a_r)             (the caller's bias and φ)
//                                                 Z += H·V_r                 wgmma m64n{C}k16, A = H from registers
//                                                 release slot r % S
//
// The hand-over keeps H in registers: the expand's accumulators of columns
// 16kk .. 16kk+15, rounded and paired, are the project's A fragment of k-step
// kk (gpu::wgmma_d_index_for_a).
//
// Contract.
//   L, the caller's layout: kC (= C_out), kChunk (TH), kStages (ring slots), kStageBytes
//     (one U box set plus one V box set), kSRegs = TH/2, kZRegs = C/2, kHSteps = TH/16,
//     UTile = Sw128Tile<C, TH> and VTile = Sw128Tile<TH, C>, u_slot/v_slot(base, stage),
//     u_box/v_box(slot, panel) and v_descriptor(slot, kk) (MN-major V_r, k-step kk).
//   u_map: U [C, hidden] row-major with a {C rows, 64 columns} box; v_map: V [hidden, C]
//     row-major with a {TH rows, 64 columns} box (cached_uv_maps). A chunk past `hidden`
//     arrives zero-filled by TMA.
//   The ring: one PipelineState per side, carried across tiles by the caller; each call
//     moves it by `chunks` items. Consumers release a slot once the wait_group that
//     retired every wgmma reading it has returned. Or ResidentSlots: every chunk of U and V
//     stays in shared memory (slot = chunk index, the state restarted per tile), nothing
//     to wait for or free.
//   Turns: turns.before() ahead of each batch of wgmma the warpgroup issues, turns.after()
//     once the batch is issued (issue_points(chunks) batches a tile). NoTurns for a
//     warpgroup that runs on its own; 08e's two consumers take turns through it.
//   The consumer loop, two schedules:
//     kOverlap = true:  chunk r's expand is issued before chunk r−1's project, so the bias
//                       and φ of chunk r run while Z += H_{r−1}·V_{r−1} is on the tensor cores
//                       (S and H live at once);
//     kOverlap = false: expand, φ, project of one chunk in turn (H lives only between them).
//   The caller supplies
//     issue_expand(stage):  S = A·U^r into s from slot `stage`, as ONE commit group;
//     load_bias(r):         fetch chunk r's bias a_r (issued before the expand is waited for);
//     activate():           s = φ(s + a_r) in place.
//   On return every wgmma of the call has retired; zacc holds Z + Σ H·V_r.
// CUDA only (device code sm_90a), header-only, registers nothing.
#pragma once

#if defined(__CUDACC__)
#include <cuda.h>

#include <cstdint>

#include "gpu/lib/element.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tma.cuh"

namespace convlab::gpu::hopper {

// ---- host: the tensor maps of U and V ----------------------------------------------------

struct UvMaps {
  CUtensorMap u, v;
};

// U [C, hidden] (boxes of all C rows x 64 hidden columns) and V [hidden, C_out] (boxes of TH
// hidden rows x 64 columns), 16-bit elements, cached per (buffer, shape, box).
template <class L> UvMaps cached_uv_maps(const void* u, const void* v, int C, int hidden, int C_out) {
  constexpr int kE = 2;
  return {cached_tma_tile_2d({.base = reinterpret_cast<uint64_t>(u), .rows = uint64_t(C), .cols = uint64_t(hidden),
                              .row_stride_bytes = uint64_t(hidden) * kE, .elem_bytes = kE, .box_rows = L::kC,
                              .box_cols = L::UTile::kPanelCols}),
          cached_tma_tile_2d({.base = reinterpret_cast<uint64_t>(v), .rows = uint64_t(hidden), .cols = uint64_t(C_out),
                              .row_stride_bytes = uint64_t(C_out) * kE, .elem_bytes = kE, .box_rows = L::kChunk,
                              .box_cols = L::VTile::kPanelCols})};
}

// ---- producer: every chunk's U^r and V_r of one tile -------------------------------------

// One thread: chunk h0 .. h0 + TH of U (all C rows) and of V (all C_out columns) into the
// slots at u_slot and v_slot, the bytes counted on barrier `full`.
template <class L>
__device__ __forceinline__ void load_uv_chunk(uint32_t u_slot, uint32_t v_slot, uint32_t full, const CUtensorMap* u_map,
                                              const CUtensorMap* v_map, int h0) {
#pragma unroll
  for (int p = 0; p < L::UTile::kPanels; ++p)
    tma_load_2d(L::u_box(u_slot, p), u_map, full, h0 + p * L::UTile::kPanelCols, 0);
#pragma unroll
  for (int p = 0; p < L::VTile::kPanels; ++p) tma_load_2d(L::v_box(v_slot, p), v_map, full, p * L::VTile::kPanelCols, h0);
}

// One thread: for r < chunks, wait for slot st, then U^r's panels (hidden columns r·TH + 64p ..)
// and V_r's panels (hidden rows r·TH .., columns 64p ..) onto the slot's full barrier.
template <class L>
__device__ __forceinline__ void load_uv_chunks(const Pipeline<L::kStages>& uv_pipe, PipelineState<L::kStages>& st,
                                               const CUtensorMap* u_map, const CUtensorMap* v_map, uint32_t base,
                                               int chunks) {
  for (int r = 0; r < chunks; ++r, st.advance()) {
    uv_pipe.producer_acquire(st, L::kStageBytes);
    load_uv_chunk<L>(L::u_slot(base, st.stage), L::v_slot(base, st.stage), uv_pipe.full(st.stage), u_map, v_map,
                     r * L::kChunk);
  }
}

// ---- consumer ----------------------------------------------------------------------------

// A warpgroup that takes no turns, and U/V slots that need no waiting (see the contract).
struct NoTurns {
  __device__ void before() const {}
  __device__ void after() const {}
};
template <int kStages> struct ResidentSlots {
  __device__ void consumer_wait(const PipelineState<kStages>&) const {}
  __device__ void consumer_release(const PipelineState<kStages>&) const {}
};

// Batches of wgmma one tile's loop issues (one turn each).
template <bool kOverlap> CONVLAB_HOST_DEVICE constexpr int issue_points(int chunks) {
  return kOverlap ? chunks + 1 : 2 * chunks;
}

// Z += H·V_r from slot `stage`; one commit group.
template <class L, class Element>
__device__ __forceinline__ void issue_project(float (&zacc)[L::kZRegs], const uint32_t (&h)[L::kHSteps][4],
                                              uint32_t base, int stage) {
#pragma unroll
  for (int kk = 0; kk < L::kHSteps; ++kk)
    wgmma_m64nNk16_rs_mn_major_b<Element, L::kC>(zacc, h[kk], L::v_descriptor(L::v_slot(base, stage), kk), true);
  wgmma_commit_group();
}

// H = the expand's accumulators rounded to Element and paired as the project's A fragments.
template <class L, class Element>
__device__ __forceinline__ void pack_h(uint32_t (&h)[L::kHSteps][4], const float (&s)[L::kSRegs]) {
#pragma unroll
  for (int kk = 0; kk < L::kHSteps; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) h[kk][r] = pack_pair<Element>(s[wgmma_d_index_for_a(kk, r, 0)], s[wgmma_d_index_for_a(kk, r, 1)]);
}

// The hidden-chunk loop of one tile (the contract above). s, zacc and h are the caller's
// registers: S, Z and packed H.
template <class L, class Element, bool kOverlap, class Ring, class Turns, class Expand, class LoadBias, class Activate>
__device__ __forceinline__ void wgmma_hidden_loop(const Ring& uv_pipe, PipelineState<L::kStages>& st, uint32_t base,
                                                  int chunks, float (&s)[L::kSRegs], float (&zacc)[L::kZRegs],
                                                  uint32_t (&h)[L::kHSteps][4], Turns& turns, Expand&& issue_expand,
                                                  LoadBias&& load_bias, Activate&& activate) {
  if constexpr (kOverlap) {
    // Chunk 0: expand only.
    uv_pipe.consumer_wait(st);
    turns.before();
    wgmma_fence();
    issue_expand(st.stage);
    turns.after();
    load_bias(0);
    wgmma_wait_group<0>();
    fence_operands(s);
    activate();
    pack_h<L, Element>(h, s);
    PipelineState<L::kStages> previous = st;
    st.advance();
    // TUTORIAL: the steady state. Issue S_r = A·U^r, then Z += H_{r−1}·V_{r−1};
    // "at most one group pending" means S_r is done (groups retire in order)
    // while the project product may still run: φ of chunk r overlaps it.
    // Then wait for it, free slot r−1 (U^{r−1} and V_{r−1} are read), repack.
    for (int r = 1; r < chunks; ++r) {
      uv_pipe.consumer_wait(st);
      turns.before();
      wgmma_fence();
      issue_expand(st.stage);
      issue_project<L, Element>(zacc, h, base, previous.stage);
      turns.after();
      load_bias(r);
      wgmma_wait_group<1>();
      fence_operands(s);
      activate();
      wgmma_wait_group<0>();
      fence_operands(zacc);
      fence_operands(h);
      uv_pipe.consumer_release(previous);
      previous = st;
      st.advance();
      pack_h<L, Element>(h, s);
    }
    // The last chunk's project product.
    turns.before();
    wgmma_fence();
    issue_project<L, Element>(zacc, h, base, previous.stage);
    turns.after();
    wgmma_wait_group<0>();
    fence_operands(zacc);
    fence_operands(h);
    uv_pipe.consumer_release(previous);
  } else {
    for (int r = 0; r < chunks; ++r, st.advance()) {
      uv_pipe.consumer_wait(st);
      turns.before();
      wgmma_fence();
      issue_expand(st.stage);
      turns.after();
      load_bias(r);
      wgmma_wait_group<0>();
      fence_operands(s);
      activate();
      pack_h<L, Element>(h, s);
      turns.before();
      wgmma_fence();
      issue_project<L, Element>(zacc, h, base, st.stage);
      turns.after();
      wgmma_wait_group<0>();
      fence_operands(zacc);
      fence_operands(h);
      uv_pipe.consumer_release(st);
    }
  }
}

}  // namespace convlab::gpu::hopper
#endif  // __CUDACC__
