// gpu/convfirst/10g_fused_cluster_split_hidden.cu — lesson 10, GPU rung g: the large-C
// ConvFirst block over a pair of CTAs split by HIDDEN columns, its partial sums of Z
// combined once per tile through distributed shared memory (Fig. 7c's other cut).
//
// Idea over 10e_fused_cluster: 10e splits the pair by output channel, so each CTA needs the
// peer's half of every hidden chunk: H crosses the pair once per chunk and the two CTAs run
// the chunk loop in lockstep, each waiting for the other's φ (the largest stall in 10e's
// profile). Here CTA k keeps ALL C output channels of Z and only its own 64 columns of each
// chunk: its Z is a partial sum over half the hidden layer. Nothing crosses the pair inside
// the chunk loop; at the end of a tile each CTA sends the half of Z the peer stores (C/4
// fp32 per thread) and adds the half it receives: one hand-over per tile instead of one per
// chunk, and half the bytes at α = 4 (C_out fp32 per pixel where 10e sends α·C 16-bit values).
// The price: Z of all C channels is C/2 registers a thread (128 at C = 256). There is no
// producer warpgroup: two warpgroups of 256 threads (cap 255), and the warp whose release of
// a ring slot is the slot's eighth issues the TMA copy of the item that comes into it next (a
// release counter per slot in shared memory). (Built so on the belief that ptxas allocates
// every warpgroup within the launch's 168 at 384 threads; it allocates code after
// setmaxnreg against the new count — docs/gpu-method.md — so a producer warpgroup would fit.)
// It is SLOWER than 10e (lesson 10's tables; its NOTES.md has the measurements and profile):
// the consumers pay for the copies' issue, eight warps per SM hide less latency than 10e's
// twelve, and the tile's end waits for the peer's Z — the lesson keeps it as the other cut.
//
//   x halo rows, channels of k    TMA, this CTA's C/2 channels (as 10e)
//   T[:, channels of k]           gconv3x3 on mma.sync, stored into BOTH CTAs' T (as 10e)
//   Z   = [x + b | 0]             own channels start from the residual, the peer's from zero
//   for r in chunks of 128 hidden channels:    U^r, V_r: TMA pieces through a ring of slots
//     S_k = T · U^r[:, 64k .. 64k+63]          wgmma m64n64k16, full K = C
//     H_k = φ(S_k + a)                         registers, rounded, packed as A fragments
//     Z  += H_k · V_r[64k .. 64k+63, all C]    wgmma m64n128k16 per 128-channel piece of V, A from registers
//   Z[:, peer's half] -> the peer's T rows of this warpgroup (dead once the last expand
//   of the tile has completed), st.async; Z[:, own half] += what the peer sent
//   y[tile, channels of k] = Z[:, own half]    one rounding, 16-byte stores (as 10e)
//
// The plain loops (ref::convfirst_block): t = gconv(x) + conv_b; z = x + b; for each
// hidden chunk: h = φ(t·U^r + a_r); z += h·V_r. The split: z = x + b + Σ_{k} Σ_r
// φ(t·U^r[:, cols of k] + a) · V_r[cols of k, :], CTA k making the term of k.
//
// Synchronisation (per consumer warpgroup w; every wait at CTA scope on this CTA's barriers):
//   T full[w]   as 10e: 128 local arrivals (expect_tx) + the peer's T words (st.async)
//   Z space[w]  128 arrivals by the PEER's threads once its last expand of the tile has
//               completed (its T rows of w are dead: we may send our Z half into them)
//   Z full[w]   128 local arrivals (expect_tx) + the peer's Z half (st.async, 16 B each)
//   T free[w]   128 arrivals by the PEER's threads once they have read our Z half out of
//               their T rows (their next tile's T may be stored there); our own warpgroup's
//               readers meet at a named barrier before this warpgroup stores T again
// A relaxed remote arrival is issued only after the reads it announces have completed (a
// wgmma wait, or the loaded words consumed by an add), so no fence is needed.
//
// Cost and floor: as 10e (N=128 14x14 C=256 α=4 f16: 27.2 GFLOP, 0.036 ms at the probe's
// rate). Per tile and CTA: the same wgmma work, weight bytes and TMA boxes (six a chunk) as
// 10e, 32 KB of T sent, and 32 KB of Z per warpgroup sent once at the tile's end, where 10e
// sends 8 KB of H per warpgroup every chunk (64 KB over C = 256's eight chunks).
// Tunables: SplitLayout128 / 256 in gpu/lib/hopper/convfirst_cluster_layout.hpp (ring
// slots, U/V pieces per chunk, halo buffers).
// Supported: f16 and bf16; stride 1; group width 8; C = C_out ∈ {128, 256}; hidden a
// multiple of 8 (a slice wholly past `hidden` is skipped; a partial one is zero-filled by
// TMA, its bias staged as 0, φ(0) = 0); ReLU and SiLU; any N, H, W whose halo rows and
// biases fit shared memory (hidden ≤ 4C: every W ≤ 29 at C = 256, W ≤ 80 at C = 128) and
// N·H·W < 2^31 − 128; 16-byte aligned x, u, v, a, b, y and 4-byte aligned conv_w and
// conv_b. Needs an sm_90a build on a GPU that can co-schedule the pair (else Unsupported
// or a DeviceError, never a wrong answer).
// Run just this: build/convlab run convfirst/gpu/10g_fused_cluster_split_hidden --shape N=128,H=14,C=256,dtype=f16
#include <cuda.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "ops/convfirst.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"
#include "gpu/lib/hopper/cluster.cuh"
#include "gpu/lib/hopper/convfirst_cluster_layout.hpp"
#include "gpu/lib/hopper/convfirst_pair.cuh"
#include "gpu/lib/hopper/convfirst_wgmma_layout.hpp"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tile_scheduler.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"
#include "gpu/lib/hopper/wgmma_epilogue.cuh"

namespace convlab {
namespace {

using namespace convfirst_cluster;
using convfirst_wgmma::XStaging;
using gpu::bias_activate;
using gpu::ld_shared_u32;
using gpu::ld_shared_v4;
using gpu::load_bias;
using gpu::st_shared_u32;

// Contract: as 10e's kernel (x [N·H·W, C] NHWC, conv_w [C][3][3][8], conv_b [C], u [C,
// hidden], a [hidden], v [hidden, C], b [C], y [N·H·W, C]; fp32 accumulation; T, H and y
// rounded once). Grid: 2·G CTAs in clusters of 2 along x, L::kThreads threads,
// cluster_shared_bytes<L> of dynamic shared memory; cluster c takes tiles c, c + G, ...
template <class Element, class L, bool kRelu>
__global__ void __launch_bounds__(L::kThreads, 1)
    convfirst_split_hidden_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap u_map,
                                  const __grid_constant__ CUtensorMap v_map, const XStaging stage_geometry, int M,
                                  int H, int W, int hidden, const Element* __restrict__ conv_w,
                                  const Element* __restrict__ conv_b, const Element* __restrict__ a,
                                  const Element* __restrict__ b, Element* __restrict__ y) {
  constexpr int kOwn = L::kOwn, kTileRows = L::kTileRows;
  extern __shared__ unsigned char shared[];
  const uint32_t base = (gpu::shared_address(shared) + 1023u) & ~1023u;
  const gpu::hopper::Pipeline<L::kXBuffers> x_pipe{base + L::kXPipeBase};
  const gpu::hopper::Pipeline<L::kStages> w_pipe{base + L::kWPipeBase};
  const auto barrier = [&](uint32_t region, int w) { return base + region + uint32_t(w) * gpu::hopper::kMbarrierBytes; };
  const XStaging& sg = stage_geometry;
  const uint32_t weights = base + L::kWeightsBase;
  const auto x_slot = [&](int buffer) { return base + L::kXBase + uint32_t(buffer) * sg.buffer_bytes; };
  const gpu::hopper::TileScheduler tiles{gpu::ceil_div(M, kTileRows), 1, 1};
  float* const a_s =
      reinterpret_cast<float*>(shared + (base - gpu::shared_address(shared)) + cluster_bias_offset<L>(sg));

  // ---- once per CTA: barriers, this CTA's conv weights, its biases, the zero lines (as 10e) ----
  if (threadIdx.x == 0) {
    x_pipe.init(L::kConsumerWarps);  // (only the full barriers are used: release counters replace `empty`)
    w_pipe.init(L::kConsumerWarps);
    for (int w = 0; w < L::kConsumers; ++w)
      for (uint32_t region : {L::kTFullBase, L::kZFullBase, L::kZSpaceBase, L::kTFreeBase})
        gpu::hopper::mbarrier_init(barrier(region, w), gpu::hopper::kWarpgroupThreads);
    for (int i = 0; i < L::kStages + L::kXBuffers; ++i) st_shared_u32(base + L::kCountBase + 4u * uint32_t(i), 0u);
    gpu::hopper::fence_mbarrier_init();
    gpu::hopper::tma_prefetch_descriptor(&x_map);
    gpu::hopper::tma_prefetch_descriptor(&u_map);
    gpu::hopper::tma_prefetch_descriptor(&v_map);
  }
  stage_cta_constants<L>(weights, a_s, base + L::kXBase, sg, hidden, gpu::hopper::cluster_cta_rank(), conv_w, conv_b,
                         a, b);
  gpu::hopper::cluster_sync();

  {
    // ---- both warpgroups: warpgroup 0 owns pixels 0-63 of a tile, warpgroup 1 pixels 64-127 ----
    const int rank = gpu::hopper::cluster_cta_rank();
    const int cluster = gpu::hopper::cluster_index_x(), clusters = gpu::hopper::cluster_count_x();
    const int chunks = gpu::ceil_div(hidden, L::kChunk);
    const int consumer = gpu::hopper::warpgroup_of(threadIdx.x);
    const int thread = gpu::hopper::thread_in_warpgroup(threadIdx.x);
    const int lane = thread % 32;
    const gpu::MatrixCoord first = gpu::wgmma_d_coord(thread, 0);  // row 16·warp + g, column 2·tq

    // ---- the copies. The weight ring's items, in order: for each of this cluster's tiles
    //      (tile number j: tile cluster + j·clusters), for each chunk r, the UPieces pieces
    //      of U^r then the VPieces pieces of V_r (q = 0 .. kPieces − 1); item i goes into
    //      slot i % Stages. The halo ring's item j is tile number j. Thread 0 issues the first
    //      Stages (and XBuffers) items; after that, the warp whose release of a slot is the
    //      eighth issues the item Stages later, which comes into the same slot (no thread
    //      waits for a slot to drain, and the copy starts as soon as it can). ----
    const auto issue_weights = [&](int j, int r, int q, int stage) {
      const int t = cluster + j * clusters;
      if (!tiles.valid(t)) return;
      const int col = r * L::kChunk + rank * kSliceCols;  // this CTA's first hidden column
      const bool live = col < hidden;  // a slice wholly past `hidden`: a bare arrival, no copy
      const uint32_t slot = L::slot(base, stage), full = w_pipe.full(stage);
      if (q < L::kUPieces) {  // U^r[:, our 64 columns], rows q·kURows ..
        gpu::hopper::mbarrier_arrive_expect_tx(full, live ? uint32_t(L::UTile::kBytes) : 0u);
        if (live) gpu::hopper::tma_load_2d(slot, &u_map, full, col, q * L::kURows);
      } else {  // V_r[our 64 rows, column piece q − kUPieces of this CTA's rotated order]
        gpu::hopper::mbarrier_arrive_expect_tx(full, live ? uint32_t(L::VTile::kBytes) : 0u);
        if (live)
#pragma unroll
          for (int p = 0; p < L::VTile::kPanels; ++p)
            gpu::hopper::tma_load_2d(L::v_box(slot, p), &v_map, full, L::v_panel_col(rank, q - L::kUPieces, p), col);
      }
    };
    // Item (j, r, q) in slot `stage` has been read by all eight warps: issue the one Stages later.
    const auto issue_next = [&](int j, int r, int q, int stage) {
      q += L::kStages;
      r += q / L::kPieces;
      q %= L::kPieces;
      while (r >= chunks) r -= chunks, ++j;
      issue_weights(j, r, q, stage);
    };
    const auto issue_halo = [&](int j) {  // the halo rows of tile number j, this CTA's channels
      const int t = cluster + j * clusters;
      if (!tiles.valid(t)) return;
      const int buffer = j % L::kXBuffers;
      gpu::hopper::mbarrier_arrive_expect_tx(x_pipe.full(buffer), sg.tx_bytes);
      const int first_pixel = (t * kTileRows / W - 1) * W;  // staged row 0 (−W for the batch's first row)
      for (int p = 0; p < sg.panels; ++p)
        for (int k = 0; k < sg.boxes; ++k)
          gpu::hopper::tma_load_2d(x_slot(buffer) + p * sg.panel_bytes + k * sg.box_rows * 128, &x_map,
                                   x_pipe.full(buffer), rank * kOwn + p * kPanelCols, first_pixel + k * sg.box_rows);
    };
    // Is this warp's release of counter `c` the eighth of its round? (Lane 0 only. The warp's
    // reads of the slot are complete — a wgmma wait, or loads whose values have been used —
    // so a relaxed add suffices: the copy that follows cannot overtake them.)
    const auto last_release = [&](uint32_t c) {
      uint32_t old;
      asm volatile("atom.relaxed.cta.shared::cta.add.u32 %0, [%1], 1;" : "=r"(old) : "r"(c) : "memory");
      return old % L::kConsumerWarps == L::kConsumerWarps - 1;
    };
    int tile_seq = 0;  // this cluster's tile number: the halo ring's item at xs
    const auto release_weights = [&](int r, int q, int stage) {  // item (tile_seq, r, q), in `stage`
      __syncwarp();
      if (lane == 0 && last_release(base + L::kCountBase + 4u * uint32_t(stage))) issue_next(tile_seq, r, q, stage);
    };
    const auto release_halo = [&] {
      __syncwarp();
      if (lane == 0 && last_release(base + L::kCountBase + 4u * uint32_t(L::kStages + tile_seq % L::kXBuffers)))
        issue_halo(tile_seq + L::kXBuffers);
    };
    if (threadIdx.x == 0) {
      for (int j = 0; j < L::kXBuffers; ++j) issue_halo(j);
      for (int i = 0, j = 0, r = 0, q = 0; i < L::kStages; ++i) {
        issue_weights(j, r, q, i);
        if (++q == L::kPieces) q = 0, ++r;
        if (r == chunks) r = 0, ++j;
      }
    }
    // The last chunk whose slice of this CTA has a column below `hidden` (−1: none): after
    // its expand this warpgroup reads T no more in the tile.
    const int last_live = (hidden - 1 - rank * kSliceCols) >= 0 ? (hidden - 1 - rank * kSliceCols) / L::kChunk : -1;
    const uint32_t t_base = base + L::kTBase;
    const uint32_t peer_t = gpu::hopper::map_shared_to_rank(t_base, rank ^ 1);
    const uint32_t t_full = barrier(L::kTFullBase, consumer), z_full = barrier(L::kZFullBase, consumer);
    const uint32_t z_space = barrier(L::kZSpaceBase, consumer), t_free = barrier(L::kTFreeBase, consumer);
    gpu::hopper::PipelineState<L::kXBuffers> xs;
    gpu::hopper::PipelineState<L::kStages> ws;
    const auto before = [](const gpu::hopper::PipelineState<L::kStages>& st) {  // the slot of the item before st's
      return st.stage == 0 ? L::kStages - 1 : st.stage - 1;
    };
    constexpr uint32_t kTPeerBytes = L::kPairs * 4 * 4;   // the peer's T words one thread receives
    constexpr uint32_t kZPeerBytes = L::kZQuads * 16;     // the peer's Z words one thread receives
    uint32_t tile_parity = 0;  // phase of T full, Z space and Z full (one per tile)
    float s[L::kSRegs];
    float zacc[L::kZRegs];  // Z[64 px, C]: registers 0 .. C/4 − 1 our channels, the rest the peer's
    uint32_t h[kHSteps][4];
    float2 bias[L::kSRegs / 4];
    const float* const b_s = a_s + chunks * kSliceCols;
    const float2* const b_pairs = reinterpret_cast<const float2*>(b_s);
    const float2* const conv_b_pairs = reinterpret_cast<const float2*>(b_s + kOwn);
    // Our T rows are read for the last time in this tile: the peer may send its Z half there.
    const auto free_t_rows = [&] {
      gpu::hopper::mbarrier_arrive_cluster_relaxed(gpu::hopper::map_shared_to_rank(z_space, rank ^ 1));
    };

    const PairConv<L, Element> conv(weights, conv_b_pairs, b_pairs, consumer, thread, rank);
    const uint32_t peer_t_full = gpu::hopper::map_shared_to_rank(t_full, rank ^ 1);

    for (int t = tiles.first(cluster); tiles.valid(t); t = tiles.next(t, clusters)) {
      // ---- 1. the grouped conv of this warp's 16 pixels x this CTA's channels, and 2. after
      //      each pass its words of T into both CTAs' T (PairConv::run, as 10e) ----
      {
        int tap[kConvSteps];
        conv.taps(t, M, H, W, sg, tap);
        x_pipe.consumer_wait(xs);
        const uint32_t xb = x_slot(xs.stage);
        // Before the first T store: the peer has read the Z half we sent into its T rows
        // last tile (T free; passes at once for the first tile), and so has every thread of
        // this warpgroup here (the named barrier).
        gpu::hopper::mbarrier_wait(t_free, tile_parity ^ 1u);
        gpu::hopper::named_barrier_sync(1 + consumer, gpu::hopper::kWarpgroupThreads);
        conv.run(xb, sg, tap, [&](uint32_t offset, uint32_t word) {
          st_shared_u32(t_base + offset, word);
          gpu::hopper::st_async_u32(peer_t + offset, word, peer_t_full);
        });
        // ---- 3. Z = [x + b | 0]: this CTA's channels (registers 0 .. C/4 − 1) start from
        //      the residual plus b, the peer's from zero ----
        conv.residual(zacc, xb, sg, t, M, H, W);
#pragma unroll
        for (int i = L::kZOwnRegs; i < L::kZRegs; ++i) zacc[i] = 0.f;
      }
      release_halo();  // the halo rows are read (the residual too)
      xs.advance();

      // ---- 4. T complete for this warpgroup's 64 pixels (as 10e: generic writes, async-proxy
      //      reads, a proxy fence on each side) ----
      gpu::fence_proxy_async_shared();
      gpu::hopper::mbarrier_arrive_expect_tx(t_full, kTPeerBytes);
      gpu::hopper::mbarrier_wait(t_full, tile_parity);
      gpu::fence_proxy_async_shared();
      if (last_live < 0) free_t_rows();  // this CTA has no live slice: T is never read

      // ---- 5. Eq. 32 over this CTA's 64 columns of each chunk, into Z of all C channels ----
      for (int r = 0; r < chunks; ++r) {
        if (r <= last_live) {
          // 5a. S = T · U^r[:, our columns]: a piece's slot goes back once the group reading
          //     it retired (the next piece's group is issued first). Everything issued in
          //     this branch is waited for inside it (C7520: no wgmma in flight across a
          //     runtime branch's join).
#pragma unroll
          for (int q = 0; q < L::kUPieces; ++q) {
            w_pipe.consumer_wait(ws);
            expand_piece<L, Element>(s, t_base, consumer, L::slot(base, ws.stage), q);
            if (q == L::kUPieces - 1) load_bias(bias, a_s, r * kSliceCols + first.col);
            if (q > 0) {
              gpu::wgmma_wait_group<1>();
              release_weights(r, q - 1, before(ws));
            }
            ws.advance();
          }
          gpu::wgmma_wait_group<0>();
          gpu::fence_operands(s);
          release_weights(r, L::kUPieces - 1, before(ws));
          if (r == last_live) free_t_rows();
          // 5b. H = φ(S + a), rounded and packed as the project's A fragments
          bias_activate<Element, kRelu>(s, bias);
#pragma unroll
          for (int kk = 0; kk < kHSteps; ++kk)
#pragma unroll
            for (int q = 0; q < 4; ++q)
              h[kk][q] = gpu::pack_pair<Element>(s[gpu::wgmma_d_index_for_a(kk, q, 0)],
                                                 s[gpu::wgmma_d_index_for_a(kk, q, 1)]);
          // 5c. Z[:, columns of piece q] += H · V_r[our rows, piece q] (m64n{C/VPieces}k16,
          //     its accumulators registers q·C/(2·VPieces) .. of Z)
#pragma unroll
          for (int q = 0; q < L::kVPieces; ++q) {
            w_pipe.consumer_wait(ws);
            const uint64_t v_desc = L::v_descriptor(L::slot(base, ws.stage), 0);
            float(&zq)[L::kVCols / 2] = *reinterpret_cast<float(*)[L::kVCols / 2]>(zacc + q * (L::kVCols / 2));
            gpu::wgmma_fence();
#pragma unroll
            for (int ks = 0; ks < L::kVSteps; ++ks)
              gpu::wgmma_m64nNk16_rs_mn_major_b<Element, L::kVCols>(
                  zq, h[ks], gpu::wgmma_advance(v_desc, gpu::mn_major_step_bytes<typename L::VTile>(ks * kWgmmaK)),
                  true);
            gpu::wgmma_commit_group();
            if (q > 0) {
              gpu::wgmma_wait_group<1>();
              release_weights(r, L::kUPieces + q - 1, before(ws));
            }
            ws.advance();
          }
          gpu::wgmma_wait_group<0>();
          gpu::fence_operands(zacc);
          gpu::fence_operands(h);
          release_weights(r, L::kPieces - 1, before(ws));
        } else {
#pragma unroll 1
          for (int q = 0; q < L::kPieces; ++q) {
            w_pipe.consumer_wait(ws);  // (completed by the issuer's bare arrival)
            release_weights(r, q, ws.stage);
            ws.advance();
          }
        }
      }

      // ---- 6. the pair's partial sums: our copy of the peer's channels goes into the peer's
      //      T rows of this warpgroup (once its last expand has completed: Z space), each
      //      16-byte piece completing its bytes on the peer's Z full; then the peer's copy of
      //      our channels is added to ours. Thread i of both CTAs holds the same pixels and
      //      channel positions (the same fragment layout, the peer's order rotated by C/2). ----
      gpu::hopper::mbarrier_wait(z_space, tile_parity);
      {
        const uint32_t peer_z_full = gpu::hopper::map_shared_to_rank(z_full, rank ^ 1);
#pragma unroll
        for (int j = 0; j < L::kZQuads; ++j) {
          const float* v = zacc + L::kZOwnRegs + 4 * j;
          gpu::hopper::st_async_v4(peer_t + L::z_exchange_offset(consumer, thread, j), __float_as_uint(v[0]),
                                   __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]), peer_z_full);
        }
      }
      gpu::hopper::mbarrier_arrive_expect_tx(z_full, kZPeerBytes);
      gpu::hopper::mbarrier_wait(z_full, tile_parity);
#pragma unroll
      for (int j = 0; j < L::kZQuads; ++j) {
        uint32_t w[4];
        ld_shared_v4(w, t_base + L::z_exchange_offset(consumer, thread, j));
#pragma unroll
        for (int q = 0; q < 4; ++q) zacc[4 * j + q] += __uint_as_float(w[q]);
      }
      gpu::fence_operands(zacc);  // the loads have completed: their values are in the sums
      gpu::hopper::mbarrier_arrive_cluster_relaxed(gpu::hopper::map_shared_to_rank(t_free, rank ^ 1));
      tile_parity ^= 1u;
      ++tile_seq;

      // ---- 7. one store of y's channels of this CTA (as 10e) ----
      conv.store_y(zacc, y, t, M);
    }
  }
  // No CTA leaves while its peer may still store into its shared memory or arrive on its barriers.
  gpu::hopper::cluster_sync();
}

// ---- launcher ------------------------------------------------------------------------

bool supports(const ConvFirstProblem& p) {
  if (!((p.dtype == DType::f16 || p.dtype == DType::bf16) && p.stride == 1 && p.group_width == kGroupWidth &&
        p.C_out == p.C && (p.C == 128 || p.C == 256) && p.hidden % 8 == 0 && p.valid() &&
        p.input_pixels() + 128 < double(INT_MAX) && double(p.hidden) + 256 < double(INT_MAX)))
    return false;
  return p.C == 128 ? pair_fits<SplitLayout128>(p) : pair_fits<SplitLayout256>(p);
}

template <class Element, class L> void launch(const ConvFirstProblem& p, const Args<ConvFirstProblem>& args) {
  const auto kernel = p.activation == ConvFirstActivation::relu ? convfirst_split_hidden_kernel<Element, L, true>
                                                                : convfirst_split_hidden_kernel<Element, L, false>;
  launch_pair_kernel<L, Element>(kernel, p, args, "convfirst_split_hidden_kernel",
                                 "convfirst/gpu/10g_fused_cluster_split_hidden");
}

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& args) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("convfirst/gpu/10g_fused_cluster_split_hidden cannot run here: " + why);
  if (!supports(p))
    throw Unsupported("convfirst/gpu/10g_fused_cluster_split_hidden: f16/bf16, stride 1, C = C_out in {128, 256}, "
                      "hidden % 8 == 0, halo rows and biases that fit shared memory");
  if (!gpu::aligned_16(args.x) || !gpu::aligned_16(args.u) || !gpu::aligned_16(args.v) || !gpu::aligned_16(args.y) ||
      !gpu::aligned_16(args.a) || !gpu::aligned_16(args.b) || reinterpret_cast<uintptr_t>(args.conv_w) % 4 != 0 ||
      reinterpret_cast<uintptr_t>(args.conv_b) % 4 != 0)
    throw Unsupported(
        "convfirst/gpu/10g_fused_cluster_split_hidden: x, u, v, a, b and y must be 16-byte aligned, conv_w and "
        "conv_b 4-byte");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (p.C == 128)
      launch<Element, SplitLayout128>(p, args);
    else
      launch<Element, SplitLayout256>(p, args);
  });
}

const Register<ConvFirstProblem> reg{{
    .name = "10g_fused_cluster_split_hidden",
    .device = Device::gpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .idea = "Fig. 7c cut the other way: the pair splits each hidden chunk's columns, each CTA keeps a partial Z of "
            "all C channels, and the halves cross once per tile through distributed shared memory into the peer's "
            "dead T rows (no H exchange inside the chunk loop)",
}};

}  // namespace
}  // namespace convlab
