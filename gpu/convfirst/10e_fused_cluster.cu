// gpu/convfirst/10e_fused_cluster.cu — lesson 10, GPU rung e: the ConvFirst
// block for large C in one kernel, its channels split over the two CTAs of a
// thread-block cluster that talk through distributed shared memory (Fig. 7c).
//
// Idea over 10c_fused_wgmma: 10c keeps a 64-pixel slice of Z (C/2 registers
// per thread) and of T (C/4 more) in every consumer thread; at C = 256 that is
// already past the 168 registers of a 384-thread CTA. Here a PAIR of CTAs
// shares one 128-pixel tile and CTA k (its rank in the cluster) owns half of
// everything that is per channel:
//
//   x halo rows, channels of k    TMA, this CTA's 64·C/128 channels only
//   T[:, channels of k]           gconv3x3 on mma.sync (group width 8: a channel half of T needs
//                                 only the same channel half of x), rounded, stored into BOTH
//                                 CTAs' T buffers (st.shared + st.async): each CTA ends up with
//                                 the whole T [128 px][C] in shared memory
//   Z   = x[tile, channels of k] + b          wgmma accumulators, C/4 registers per thread
//   for r in chunks of 128 hidden channels:    U^r, V_r slices: TMA into a ring of slots (C = 256: two pieces each)
//     S_k = T · U^r[:, 64k .. 64k+63]  wgmma m64n64k16, A = T from shared memory (descriptor), full K = C:
//                                      no partial sums cross the pair
//     H_k = φ(S_k + a)                 registers, rounded, packed as wgmma A fragments
//     H_k -> the peer                  16 words per thread, st.async: each store also completes its
//                                      bytes on the peer's H full barrier (no fence, no arrival)
//     Z  += H_k · V_r[64k.., channels of k]         wgmma m64n{C/2}k16, A = H_k from registers
//     Z  += H_peer · V_r[64(1−k).., channels of k]  A = the peer's words, loaded into registers; in a
//                                      pair issued in chunk r + 1, behind its expand, so the peer's φ
//                                      has a whole expand to land (C = 512: in chunk r)
//   y[tile, channels of k] = Z         one rounding, one 16-byte store per 8 channels
//
// Why the H exchange is one vector store per 16 bytes with no shuffle: both
// CTAs' consumer warpgroup w cover the same 64 pixels, and thread i holds the
// same rows of S in both (wgmma_d_coord), so thread i's packed H_k words are
// exactly the A fragments thread i of the peer needs for the other half of the
// chunk's k16 steps. The exchange buffer is [warpgroup][16-byte quad][thread]
// (convfirst_cluster_layout.hpp), one 128-byte line per quarter-warp.
//
// The plain loops (ref::convfirst_block): t = gconv(x) + conv_b; for each
// pixel: z = x + b; for each hidden chunk: h = φ(t·U^r + a_r); z += h·V_r.
// The split: for k in {0, 1} (the two CTAs, concurrently): z[:, half k] =
// x[:, half k] + b[half k] + Σ_r φ(t·U^r + a_r) · V_r[:, half k], where t
// is made of both CTAs' halves and each h chunk of both CTAs' column halves.
//
// The biases are staged once per CTA as fp32 in shared memory (after the x
// buffers): this CTA's 64 columns of each chunk of a, and its C/S channels of
// b and conv_b. A chunk's bias pairs, issued while its expand runs and used
// right after it by φ, are then shared loads with nothing to convert.
//
// Synchronisation (every phase in the kernel's comments):
//   T full[w]   128 arrivals per tile by warpgroup w's threads here, each expecting the bytes
//               of its share of the peers' T words (expect_tx); the peers' st.async stores
//               complete those bytes. Waited at CTA scope, as H full
//   H full[w]   128 arrivals per chunk by this CTA's own threads, each expecting the bytes
//               of its words (expect_tx); the peers' st.async stores complete those bytes.
//               Waited at CTA scope: the words are in this CTA's shared memory, and a
//               cluster-scope acquire would invalidate L1 (CCTL.IVALL) every chunk
//   H free[w]   128 arrivals per chunk per peer: the peer's threads, relaxed, once a wgmma
//               that reads the words it loaded from here has been issued (the loads are
//               complete then), so no fence.acq_rel.cluster (MEMBAR.ALL.GPU in the SASS)
//               is needed; C = 512's partial last chunk, whose dead slices feed no wgmma, has one
//   T needs no "free" barrier: a CTA overwrites T rows (its own and the peer's) for the
//   next tile only after it received the peer's last H of this tile, which the peer sent
//   after its last expand, the last reader of those rows, had completed.
//
// A tile's order: conv and T's stores (steps 1-2), Z from x (3), T complete (4), the chunk
// loop (5), y (6). At C = 128 the conv of tile t + 1 moves to the end of tile t, issued after
// its last projects and before their wait (kConvAhead): by then the last expand has retired
// and the peer's last H has arrived (the rule above), and the next halo has been in the x
// buffer since chunk 0. At C = 256 the same order was slower, so it keeps the conv at the top.
//
// Cost and floor (N=128 14x14 C=256 α=4 f16): 13.62 GMAC = 27.2 GFLOP (conv
// 3.4 %), 26.8 MB of compulsory DRAM traffic (x, y, 1.1 MB of weights):
// compute-bound, 0.036 ms at the snapshot probe's 756 TFLOP/s. 196 tiles on 66 pairs
// (three rounds, the last 97 % full). Per tile and CTA: 67 MFLOP of wgmma,
// 512 KB of U and V slices from L2, 32 KB of T and 128 KB of H sent to the
// peer. The counting, the prediction and the measurements are in
// lessons/10-convfirst/NOTES.md.
//
// C = 512 (ClusterLayout512): a cluster of FOUR CTAs, each owning C/4 = 128
// channels of x, T and y and 64 columns of every hidden chunk of 256; the
// tile is 64 pixels and one consumer warpgroup (256 threads, T [64 px][512] =
// 64 KB per CTA: a 128-pixel T would be 128 KB and not fit beside the ring);
// U arrives in four 128-row pieces and V in one piece per slice, 16 KB each,
// through one ring of five slots; each CTA sends its H slice to the three
// peers (slot (sender − receiver − 1) mod 4 of their H buffers) and projects
// its own slice, then the peers' in rank order after it. Its T goes to the three
// peers in 16-byte blocks (a quad turns its fragments into whole 8-channel
// blocks first, kTBlocks), a quarter of the stores of one word each.
// Tunables: ClusterLayout128 / 256 / 512 in
// gpu/lib/hopper/convfirst_cluster_layout.hpp (cluster size, consumer
// warpgroups = tile/64, ring slots, U/V pieces per chunk, halo buffers, chosen
// so that shared memory holds T, the ring and the halo; each CTA's expand is
// m64n64, the narrowest form whose shared-memory reads of A keep up with the
// tensor cores). A V piece goes as one TMA copy per 64-column panel: one copy
// of all its panels (a 3-D map) was measured and did not gain (lesson 10's
// NOTES.md).
// Supported: f16 and bf16; stride 1; group width 8; C = C_out ∈ {128, 256,
// 512}; hidden a multiple of 8 (a partial last chunk is zero-filled by TMA,
// its bias staged as 0, φ(0) = 0; a CTA whose slice of the last chunk is wholly
// past `hidden` expands column 0 in a pair and zeroes its H, and at C = 512
// skips its expand and the project steps of such a slice); ReLU and SiLU;
// any N, H, W whose halo rows and biases fit shared memory (with hidden ≤ 4C:
// every W ≤ 29 at C = 256, W ≤ 80 at C = 128, W ≤ 19 at C = 512; wider W when
// N·H is small) and N·H·W < 2^31 − 128; 16-byte
// aligned x, u, v, a, b, y and 4-byte aligned conv_w and conv_b. Needs compute
// capability 9.0, 90 in CONVLAB_CUDA_ARCHS, and a device that can co-schedule
// a cluster of 2 (4) such CTAs (else launch() throws a DeviceError, never a
// wrong answer).
// Run just this: build/convlab run convfirst/gpu/10e_fused_cluster --shape N=128,H=14,C=256,dtype=f16
// (C = 512: --shape N=128,H=7,C=512,dtype=f16)
#include <cuda.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ops/convfirst.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"
#include "gpu/lib/hopper/cluster.cuh"
#include "gpu/lib/hopper/convfirst_cluster_layout.hpp"
#include "gpu/lib/hopper/convfirst_wgmma_layout.hpp"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tile_scheduler.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"
#include "gpu/lib/hopper/wgmma_epilogue.cuh"

namespace convlab {
namespace {

using namespace convfirst_cluster;
using convfirst_wgmma::x_offset;
using convfirst_wgmma::XStaging;
using gpu::bias_activate;
using gpu::ld_shared_u32;
using gpu::ld_shared_v4;
using gpu::load_bias;
using gpu::st_shared_u32;
using gpu::unpack_pair;

constexpr int kGroupsPerPanel = kPanelCols / kGroupWidth;  // 8: one 16-byte chunk of a staged line each
// Conv groups per pass: eight independent mma chains per warp, one 64-channel panel of x.
// All sixteen of a CTA's 128 channels at once (64 accumulators) would not fit the registers.
constexpr int kPassGroups = 8;
static_assert(kGroupsPerPanel % kPassGroups == 0, "a pass stays inside one 64-channel panel of x");

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. x [N·H·W, C] (NHWC), conv_w [C][3][3][8], conv_b [C], u [C, hidden],
// a [hidden], v [hidden, C], b [C], y [N·H·W, C]; Element = __half or
// __nv_bfloat16; fp32 accumulation; T rounded to Element once (stored as the
// expand's A operand), H once, y once. Grid: S·G CTAs in clusters of S = L::kCluster
// along x (G clusters, at most the number of tiles), L::kThreads threads,
// cluster_shared_bytes<L>(s, hidden) of dynamic shared memory (layout in
// convfirst_cluster_layout.hpp); cluster c takes tiles c, c + G, ... and all its
// CTAs walk that same sequence. Edge duties: pixels ≥ M read the zero pixel and
// are never stored; staged rows outside [0, N·H) arrive as zeros (TMA); taps
// outside the image read the zero pixel; hidden columns ≥ hidden are zero.
template <class Element, class L, bool kRelu>
__global__ void __launch_bounds__(L::kThreads, 1)
    convfirst_fused_cluster_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap u_map,
                                   const __grid_constant__ CUtensorMap v_map, const XStaging stage_geometry, int M,
                                   int H, int W, int hidden, const Element* __restrict__ conv_w,
                                   const Element* __restrict__ conv_b, const Element* __restrict__ a,
                                   const Element* __restrict__ b, Element* __restrict__ y) {
  constexpr int kOwn = L::kOwn, kS = L::kCluster, kTileRows = L::kTileRows;
  // A pair projects the peer's slice of chunk r one chunk late, behind chunk r + 1's expand
  // (step 5); C = 512's four CTAs keep the serial order.
  constexpr bool kLatePeer = kS == 2;
  // T to the peers in 16-byte blocks (step 2) where it goes to three of them.
  constexpr bool kTBlocks = kS == 4;
  // C = 128 runs tile t + 1's conv (steps 1-2) under tile t's last projects, before y's store
  // (measured faster at C = 128, slower at C = 256: lesson 10's NOTES.md, wave-3u).
  constexpr bool kConvAhead = kLatePeer && L::kC == 128;
  extern __shared__ unsigned char shared[];
  // Every CTA of the cluster runs this code on identical layouts, so every region sits at
  // the same offset in each: a peer's copy of a region is map_shared_to_rank(local address, peer).
  const uint32_t base = (gpu::shared_address(shared) + 1023u) & ~1023u;
  const gpu::hopper::Pipeline<L::kXBuffers> x_pipe{base + L::kXPipeBase};
  const gpu::hopper::Pipeline<L::kStages> w_pipe{base + L::kWPipeBase};  // U and V pieces
  const auto t_full = [&](int w) { return base + L::kTFullBase + uint32_t(w) * gpu::hopper::kMbarrierBytes; };
  const auto h_full = [&](int w) { return base + L::kHFullBase + uint32_t(w) * gpu::hopper::kMbarrierBytes; };
  const auto h_free = [&](int w) { return base + L::kHFreeBase + uint32_t(w) * gpu::hopper::kMbarrierBytes; };
  const XStaging& sg = stage_geometry;  // of this CTA's channels
  const uint32_t weights = base + L::kWeightsBase;
  const auto x_slot = [&](int buffer) { return base + L::kXBase + uint32_t(buffer) * sg.buffer_bytes; };
  const gpu::hopper::TileScheduler tiles{gpu::ceil_div(M, kTileRows), 1, 1};
  const int warpgroup = gpu::hopper::warpgroup_of(threadIdx.x);
  // In fp32, after the x buffers: a [chunks·64] (this CTA's 64 columns of each chunk, zero
  // past hidden), b [C/S], conv_b [C/S] (this CTA's channels). A pointer into shared memory
  // (the loads stay ld.shared): its offset depends on W.
  float* const a_s =
      reinterpret_cast<float*>(shared + (base - gpu::shared_address(shared)) + cluster_bias_offset<L>(sg));

  // ---- once per CTA: barriers, this CTA's share of the conv weights, its biases, the zero lines ----
  if (threadIdx.x == 0) {
    x_pipe.init(L::kConsumerWarps);
    w_pipe.init(L::kConsumerWarps);
    for (int w = 0; w < L::kConsumers; ++w) {
      gpu::hopper::mbarrier_init(t_full(w), gpu::hopper::kWarpgroupThreads);  // 128 here, + the peers' bytes
      gpu::hopper::mbarrier_init(h_full(w), gpu::hopper::kWarpgroupThreads);  // 128 here, + the peers' bytes
      gpu::hopper::mbarrier_init(h_free(w), (kS - 1) * gpu::hopper::kWarpgroupThreads);  // 128 per peer
    }
    gpu::hopper::fence_mbarrier_init();  // release.cluster: peers may arrive on these after the cluster barrier
    gpu::hopper::tma_prefetch_descriptor(&x_map);
    gpu::hopper::tma_prefetch_descriptor(&u_map);
    gpu::hopper::tma_prefetch_descriptor(&v_map);
  }
  {
    const int rank = gpu::hopper::cluster_cta_rank();
    // All of this thread's words are loaded before any is stored: the stores are asm volatile
    // with a memory clobber, so a load after one cannot be hoisted above it, and a loop of
    // load-store pairs paid one round trip to memory per word.
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
      if (i < L::kWeightWords) st_shared_u32(weights + 4 * i, w_staged[k]);
    }
    gpu::stage_biases(a_s, a, hidden, gpu::ceil_div(hidden, L::kChunk), L::kChunk, kSliceCols, rank * kSliceCols, b,
                      conv_b, rank * kOwn, kOwn, threadIdx.x, L::kThreads);
    constexpr int kZeroWords = convfirst_wgmma::kZeroLines * 128 / 4;
    for (int i = threadIdx.x; i < L::kXBuffers * sg.panels * kZeroWords; i += L::kThreads) {
      const int panel = i / kZeroWords % sg.panels, buffer = i / kZeroWords / sg.panels;
      st_shared_u32(x_slot(buffer) + panel * sg.panel_bytes + sg.zero_index * 128 + 4 * (i % kZeroWords), 0u);
    }
  }
  // Every CTA's barriers are initialised (and its own stores, the biases included, done) before anyone
  // arrives on a peer's barrier or stores into its shared memory.
  gpu::hopper::cluster_sync();

  if (warpgroup == 0) {
    // ---- producer: one thread issues every copy, into this CTA's shared memory only ----
    gpu::hopper::warpgroup_registers_decrease<kProducerRegs>();
    // (rank, cluster and chunks are computed after setmaxnreg, in each role: a value live
    // across it must fit the producer's 40 registers, and ptxas spills one that does not —
    // `chunks` computed once above the split was spilled to local memory, 4 bytes.)
    const int rank = gpu::hopper::cluster_cta_rank();
    const int cluster = gpu::hopper::cluster_index_x(), clusters = gpu::hopper::cluster_count_x();
    const int chunks = gpu::ceil_div(hidden, L::kChunk);
    if (threadIdx.x == 0) {
      gpu::hopper::PipelineState<L::kXBuffers> xs;
      gpu::hopper::PipelineState<L::kStages> ws;
      const auto load_x = [&](int t) {  // the halo rows of tile t, this CTA's channels
        x_pipe.producer_acquire(xs, sg.tx_bytes);
        const int first_pixel = (t * kTileRows / W - 1) * W;  // staged row 0 (−W for the batch's first row)
        for (int p = 0; p < sg.panels; ++p)
          for (int k = 0; k < sg.boxes; ++k)
            gpu::hopper::tma_load_2d(x_slot(xs.stage) + p * sg.panel_bytes + k * sg.box_rows * 128, &x_map,
                                     x_pipe.full(xs.stage), rank * kOwn + p * kPanelCols,
                                     first_pixel + k * sg.box_rows);
        xs.advance();
      };
      // U^r[:, this CTA's 64 columns], in UPieces pieces of rows. A slice wholly past `hidden`
      // (only ever the last chunk's): at C = 512 it is not loaded (the consumers skip its
      // expand), each piece's barrier phase completed by the bare arrival; in a pair
      // (kLatePeer) column 0 is loaded in its place (finite values whose H the consumers
      // zero), so that the consumers' chunk loop has no branch.
      const auto load_u = [&](int r) {
        const int u_col = r * L::kChunk + rank * kSliceCols;
        const bool u_live = u_col < hidden;
#pragma unroll 1
        for (int q = 0; q < L::kUPieces; ++q) {
          w_pipe.producer_acquire(ws, u_live || kLatePeer ? uint32_t(L::UTile::kBytes) : 0u);
          if (u_live || kLatePeer)
            gpu::hopper::tma_load_2d(L::slot(base, ws.stage), &u_map, w_pipe.full(ws.stage), u_live ? u_col : 0,
                                     q * L::kURows);
          ws.advance();
        }
      };
      // V_r[rows of the chunk, this CTA's output channels] in the order the project reads them
      // (this CTA's slice first): rows past `hidden` arrive as zeros; a piece of one slice
      // wholly past `hidden` is not loaded at C = 512 (the consumers skip its steps) and is
      // row 0's in a pair (multiplied by a zero H).
      const auto load_v_piece = [&](int r, int q) {
        const int v_row = r * L::kChunk + L::v_piece_row(rank, q);
        const bool v_live = L::kVPieces == 1 || v_row < hidden;
        w_pipe.producer_acquire(ws, v_live || kLatePeer ? uint32_t(L::VTile::kBytes) : 0u);
        if (v_live || kLatePeer) {
#pragma unroll
          for (int p = 0; p < L::VTile::kPanels; ++p)
            gpu::hopper::tma_load_2d(L::v_box(L::slot(base, ws.stage), p), &v_map, w_pipe.full(ws.stage),
                                     rank * kOwn + p * kPanelCols, v_live ? v_row : 0);
        }
        ws.advance();
      };
      // In a pair with two V pieces (C = 256) the peer's piece of chunk r is read in chunk
      // r + 1 (step 5), so it is loaded there, after that chunk's U pieces: an in-order
      // producer that loaded it beside the own piece waited for its slot (freed late in chunk
      // r + 1) before it could load chunk r + 2's U, and every expand waited for its first
      // piece (lesson 10's NOTES.md has the measurement).
      constexpr bool kPeerVLate = kLatePeer && L::kVPieces == 2;
      int t = tiles.first(cluster);
      if (tiles.valid(t)) load_x(t);
      for (; tiles.valid(t); t = tiles.next(t, clusters)) {
        for (int r = 0; r < chunks; ++r) {
          load_u(r);
          if (kPeerVLate && r > 0) load_v_piece(r - 1, 1);
#pragma unroll 1
          for (int q = 0; q < (kPeerVLate ? 1 : L::kVPieces); ++q) load_v_piece(r, q);
          // The next tile's halo once this tile's chunk 0 is on its way (the consumers free
          // the halo buffer before they wait for chunk 0's first U piece).
          if (r == 0 && tiles.valid(tiles.next(t, clusters))) load_x(tiles.next(t, clusters));
        }
        if (kPeerVLate) load_v_piece(chunks - 1, 1);
      }
    }
  } else {
    // ---- consumers: warpgroup 1 owns pixels 0-63 of a tile, warpgroup 2 (if any) pixels
    //      64-127, in every CTA of the cluster ----
    gpu::hopper::warpgroup_registers_increase<L::kConsumerRegs>();
    const int rank = gpu::hopper::cluster_cta_rank();
    const int cluster = gpu::hopper::cluster_index_x(), clusters = gpu::hopper::cluster_count_x();
    const int chunks = gpu::ceil_div(hidden, L::kChunk);
    const int consumer = warpgroup - 1;
    // This thread's place in its warpgroup, from threadIdx.x. At C = 512 it is derived again at
    // the top of every tile from a volatile read of %tid.x, which the compiler cannot hoist:
    // derived once here, the tile's invariants (tap offsets, conv weight and bias addresses,
    // x offsets of the residual, fragment coordinates) were hoisted out of the tile loop and,
    // live across the chunk loop beside its ~170 registers of accumulators and fragments,
    // spilled (20 bytes). At C = 128/256 (168 registers, 0 spill) they stay hoisted.
    int thread, warp, lane, g, tq;
    gpu::MatrixCoord first, a_row;
    const auto place = [&](int tid) {
      thread = gpu::hopper::thread_in_warpgroup(tid);
      warp = thread / 32, lane = thread % 32, g = lane / 4, tq = lane % 4;
      first = gpu::wgmma_d_coord(thread, 0);         // row 16·warp + g, column 2·tq
      a_row = gpu::ldmatrix_x4_row_address(lane);  // pixel lane % 16, k-half lane / 16
    };
    place(threadIdx.x);
    const uint32_t t_base = base + L::kTBase;
    const uint32_t h_in = base + L::kHBase;  // the peers' H words arrive here; ours go to their copies
    // The copy of a local address in the CTA i ranks after this one (mapa: one instruction,
    // issued where used rather than kept in a register across the whole kernel).
    const auto in_peer = [&](uint32_t local, int i) {
      return gpu::hopper::map_shared_to_rank(local, (rank + i) & (kS - 1));  // kS is 2 or 4
    };
    gpu::hopper::PipelineState<L::kXBuffers> xs;
    gpu::hopper::PipelineState<L::kStages> ws;
    // Hand back the slot of the ring item before `st` (its wgmma group has retired).
    const auto release_before = [&](const gpu::hopper::PipelineState<L::kStages>& st) {
      w_pipe.consumer_release({(st.stage + L::kStages - 1) % L::kStages, 0u});
    };
    // The bytes of the peers' H words one thread receives per chunk; H full[consumer]'s first
    // phase expects them now (each receive() arrives for the next phase).
    constexpr uint32_t kHPeerBytes = (kS - 1) * kHWords * 4;
    // The bytes of the peers' T words one thread receives per tile (each peer's thread i sends
    // thread i's share: 4 words of each of its kPairs 16-channel pieces).
    constexpr uint32_t kTPeerBytes = (kS - 1) * L::kPairs * 4 * 4;
    gpu::hopper::mbarrier_arrive_expect_tx(h_full(consumer), kHPeerBytes);
    uint32_t tile_parity = 0;   // phase of T full[consumer]: one per tile
    uint32_t chunk_parity = 0;  // phase of H full / H free[consumer]: one per chunk, across tiles
    float s[L::kSRegs];                   // S_k, then φ(S_k + a) in fp32
#pragma unroll
    for (float& v : s) v = 0.f;  // a dead slice's pack() reads S without an expand (kernel's only chunk)
    float zacc[L::kZRegs];                // Z, this CTA's channels
    uint32_t h_own[kHSteps][4];           // H_k packed: A fragments of the project's steps over our slice
    uint32_t h_peer[kS - 1][kHSteps][4];  // the peers' H packed, slot i: the peer i + 1 ranks after us
    float2 bias[L::kSRegs / 4];           // a_r of this CTA's columns, fp32 pairs
    const float* const b_s = a_s + chunks * kSliceCols;
    const float2* const b_pairs = reinterpret_cast<const float2*>(b_s);
    const float2* const conv_b_pairs = reinterpret_cast<const float2*>(b_s + kOwn);

    // Staged index of the pixel this lane hands ldmatrix at k-step j of tile t's conv:
    // pixel lane % 16 of the warp, tap 2j + lane / 16 (tap 9 does not exist: the zero pixel).
    // One division pair a tile (tap_place); each step picks between its two taps, both
    // known at compile time, by the lane's k-half.
    const auto conv_taps = [&](int t, int (&tap)[kConvSteps]) {
      const int first_row = t * kTileRows / W - 1;
      const int pixel = t * kTileRows + consumer * kWgmmaM + 16 * warp + a_row.row;
      convfirst_wgmma::lane_taps(convfirst_wgmma::tap_place(pixel, M, H, W, first_row, sg.zero_index), a_row.col >= 8, W,
                                 sg.zero_index, tap);
    };
    // One mma of (this CTA's) group grp at k-step j, as 10c: B from the staged weights, A
    // straight from the staged pixels by ldmatrix. `line` is the address of the tap's
    // staged pixel in the group's panel with the swizzle's row term already in: line =
    // panel + 128·tap + 16·(tap % 8); chunk grp % 8 of the pixel sits at line ^ 16·(grp % 8)
    // (the line is 128-aligned, so the XOR is 16·((grp % 8) ^ (tap % 8)) added to its start).
    const auto conv_mma = [&](float (&acc)[4], uint32_t line, int j, int grp) {
      const int word = ((grp * kGroupWidth + g) * 72 + 2 * j * 8 + 2 * tq) / 2;
      const uint32_t bfrag[2] = {ld_shared_u32(weights + 4 * word), j < 4 ? ld_shared_u32(weights + 4 * (word + 4)) : 0u};
      uint32_t afrag[4];
      gpu::ldmatrix_x4(afrag, line ^ uint32_t((grp % kGroupsPerPanel) << 4));
      gpu::mma_m16n8k16<Element>(acc, afrag, bfrag);
    };

    // Steps 1 and 2 of tile t (the conv and T's stores), after waiting for its halo in slot xs.
    const auto conv_tile = [&](int t) {
      uint32_t t_remote[kS - 1], t_full_remote[kS - 1];  // the peers' T buffers and T full[consumer],
#pragma unroll                                            // peer i + 1 ranks after us in slot i
      for (int i = 0; i < kS - 1; ++i) t_remote[i] = in_peer(t_base, i + 1), t_full_remote[i] = in_peer(t_full(consumer), i + 1);
      // ---- 1. the grouped conv of this warp's 16 pixels x this CTA's channels ----
      // In passes of kPassGroups groups: the pass's accumulators are live at once and the
      // five k-steps run outermost, so kPassGroups independent mma chains are in flight
      // (10b's order). Z is not live yet. After each pass its 64 channels of T go to every
      // CTA's T buffer — step 2.
      {
        int tap[kConvSteps];
        conv_taps(t, tap);
        x_pipe.consumer_wait(xs);
        const uint32_t xb = x_slot(xs.stage);
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
            for (int i = 0; i < kPassGroups; ++i) conv_mma(acc[i], line, j, pass * kPassGroups + i);
          }

          // ---- 2. T[this warp's pixels, the pass's channels] into every CTA's T buffer:
          //      st.shared here, st.async into the peers (each store completes its bytes on
          //      the peer's T full[consumer]). No wait: this warpgroup's last expand of the
          //      previous tile has completed (its wait_group), and so have the peers' (we
          //      received their last H, each sent after its expand). C = 512 (three peers):
          //      per row and four groups (32 channels), the quad turns its four 8-channel
          //      blocks around (gpu::quad_transpose) and each thread stores one whole block,
          //      16 bytes, a quarter of the stores of one word each (measured faster there,
          //      level in a pair: lesson 10's NOTES.md, wave-3k). ----
          if constexpr (kTBlocks) {
#pragma unroll
            for (int hh = 0; hh < 2; ++hh)  // rows 16·warp + g + 8·hh of the warpgroup
#pragma unroll
              for (int set = 0; set < kPassGroups / 4; ++set) {
                uint32_t w[4];  // on entry: group 4·set + q's pair of channels 2tq, 2tq + 1
#pragma unroll
                for (int q = 0; q < 4; ++q)
                  w[q] = gpu::pack_pair<Element>(acc[4 * set + q][2 * hh], acc[4 * set + q][2 * hh + 1]);
                gpu::quad_transpose(w, tq);  // now: the 8 channels of group 4·set + tq
                const int row = consumer * kWgmmaM + 16 * warp + g + 8 * hh;
                const int col = rank * kOwn + (pass * kPassGroups + 4 * set + tq) * kGroupWidth;
                const uint32_t offset = uint32_t(L::TTile::byte_offset(row, col));
                gpu::st_shared_v4(t_base + offset, w[0], w[1], w[2], w[3]);
#pragma unroll
                for (int i = 0; i < kS - 1; ++i)
                  gpu::hopper::st_async_v4(t_remote[i] + offset, w[0], w[1], w[2], w[3], t_full_remote[i]);
              }
          } else {  // a pair: one word at a time, at each fragment's place
#pragma unroll
            for (int i = 0; i < kPassGroups / 2; ++i) {
              const float(&lo)[4] = acc[2 * i];
              const float(&hi)[4] = acc[2 * i + 1];
              const uint32_t words[4] = {gpu::pack_pair<Element>(lo[0], lo[1]), gpu::pack_pair<Element>(lo[2], lo[3]),
                                         gpu::pack_pair<Element>(hi[0], hi[1]), gpu::pack_pair<Element>(hi[2], hi[3])};
#pragma unroll
              for (int reg = 0; reg < 4; ++reg) {
                const gpu::MatrixCoord at =
                    L::t_fragment_coord(consumer, thread, rank, pass * kPassGroups / 2 + i, reg);
                const uint32_t offset = uint32_t(L::TTile::byte_offset(at.row, at.col));
                st_shared_u32(t_base + offset, words[reg]);
#pragma unroll
                for (int i = 0; i < kS - 1; ++i)
                  gpu::hopper::st_async_u32(t_remote[i] + offset, words[reg], t_full_remote[i]);
              }
            }
          }
        }
      }
    };
    // Step 3 of tile t, from its halo in slot xs (waited for by conv_tile(t)).
    const auto z_from_x = [&](int t) {
      const int pixel0 = t * kTileRows + consumer * kWgmmaM + 16 * warp;  // this warp's 16 pixels
      const uint32_t xb = x_slot(xs.stage);
      // ---- 3. Z starts as the residual plus b (this CTA's channels): zacc[4j + c] is row
      //      16·warp + g + 8(c >> 1), column 8j + 2tq + (c & 1) of the CTA's channels ----
      //      The centre tap of a pixel needs no division: it is always inside the image, so
      //      its staged index is the pixel's own (or the zero pixel past M). x_offset's
      //      per-pixel terms (line, swizzle row, 4·tq) are taken out of the loop over the
      //      8-channel chunks j: x_offset(sg, centre, 8j + 2tq) = line + (j / 8)·panel_bytes
      //      + 16·((j % 8) ^ (centre % 8)).
      const int staged0 = pixel0 - (t * kTileRows / W - 1) * W;
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const uint32_t centre =
            pixel0 + g + 8 * hh < M ? uint32_t(staged0 + g + 8 * hh) : uint32_t(sg.zero_index);
        const uint32_t line = xb + centre * 128u + 4u * uint32_t(tq), swizzle = (centre & 7u) << 4;
#pragma unroll
        for (int j = 0; j < kOwn / 8; ++j) {
          const int col = 8 * j + 2 * tq;
          const float2 xv = unpack_pair<Element>(
              ld_shared_u32(line + uint32_t(j / 8) * sg.panel_bytes + ((uint32_t(j % 8) << 4) ^ swizzle)));
          const float2 bv = b_pairs[col / 2];
          zacc[4 * j + 2 * hh] = xv.x + bv.x;
          zacc[4 * j + 2 * hh + 1] = xv.y + bv.y;
        }
      }
    };

    int t = tiles.first(cluster);
    if constexpr (kConvAhead)
      if (tiles.valid(t)) conv_tile(t);
    for (; tiles.valid(t); t = tiles.next(t, clusters)) {
      if constexpr (kS == 4) {
        uint32_t tid;
        asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
        place(int(tid));
      }
      if constexpr (!kConvAhead) conv_tile(t);
      z_from_x(t);
      x_pipe.consumer_release(xs);  // the halo rows are read: the producer may refill the buffer
      xs.advance();

      // ---- 4. T complete in this CTA for this warpgroup's 64 pixels: our channels (written
      //      by these 128 threads) and the peers' (their st.async bytes, counted on T full).
      //      Each thread arrives expecting its share of the peers' bytes (they may have landed
      //      already: the phase waits for our 128 arrivals too). The wait acquires at CTA
      //      scope: every word is in this CTA's shared memory. FENCE: T is written by the
      //      generic proxy and read by wgmma through the async proxy, so the writers of our
      //      half fence before their arrival, and every reader fences after the wait (for
      //      the peers' words). ----
      gpu::fence_proxy_async_shared();
      gpu::hopper::mbarrier_arrive_expect_tx(t_full(consumer), kTPeerBytes);
      gpu::hopper::mbarrier_wait(t_full(consumer), tile_parity);
      gpu::fence_proxy_async_shared();
      tile_parity ^= 1u;

      // ---- 5. Eq. 32 over hidden chunks of 64·S, this CTA's 64 columns of each ----
      //
      // The steps of a chunk, in the order the loop below runs them:
      // expand_piece(q): S_k += T · U^r[rows of piece q, this CTA's columns], issued and
      //   committed (C/16 k-steps over all pieces, both operands in shared memory); the chunk's
      //   first k-step overwrites S (last chunk's values are dead), the others accumulate.
      const auto expand_piece = [&](int q, int stage) {
        const uint64_t t_desc = L::t_descriptor(t_base, consumer, q * L::kPieceSteps);
        const uint64_t u_desc = L::u_descriptor(L::slot(base, stage), 0);
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
      };
      // pack(r): H_k = φ(S_k + a) rounded and packed as the project's A fragments (k16 step kk =
      //   columns 16kk ..); a slice wholly past `hidden` is H_k = 0 (a select, not a branch: its
      //   S is the previous chunk's, or the zeros S started as).
      const auto pack = [&](int r) {
        const bool live = r * L::kChunk + rank * kSliceCols < hidden;
        bias_activate<Element, kRelu>(s, bias);
#pragma unroll
        for (int kk = 0; kk < kHSteps; ++kk)
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const uint32_t word = gpu::pack_pair<Element>(s[gpu::wgmma_d_index_for_a(kk, q, 0)],
                                                          s[gpu::wgmma_d_index_for_a(kk, q, 1)]);
            h_own[kk][q] = live ? word : 0u;
          }
      };
      // send(): H_k to thread `thread` of every peer's warpgroup `consumer`, by st.async: each
      //   16-byte store completes 16 bytes of the peer's H full[consumer], so the words and
      //   their signal travel together and no fence is needed. H free[consumer] here completes
      //   when all peers' 128 threads have read what we sent for the previous chunk (parity of
      //   the previous chunk; passes at once for the first); nothing is read after it, so the
      //   wait acquires at CTA scope only.
      const auto send = [&] {
        gpu::hopper::mbarrier_wait(h_free(consumer), chunk_parity ^ 1u);
#pragma unroll
        for (int peer = 1; peer < kS; ++peer) {
          const int slot = L::slot_in((rank + peer) % kS, rank);
          const uint32_t bar = in_peer(h_full(consumer), peer);
#pragma unroll
          for (int kk = 0; kk < kHSteps; ++kk)
            gpu::hopper::st_async_v4(in_peer(h_in + L::h_exchange_offset(consumer, slot, thread, kk), peer),
                                     h_own[kk][0], h_own[kk][1], h_own[kk][2], h_own[kk][3], bar);
        }
      };
      // receive(): wait until the peers' words of this chunk have landed, read our thread's 64
      //   bytes of each, and arrive (with the bytes we expect) on H full for the next chunk.
      //   The peers learn that their slot here is free from release_peer_words(), once a
      //   wgmma that reads these registers has been issued: the loads have completed then, so
      //   a relaxed arrival cannot overtake them.
      const auto receive = [&] {
        gpu::hopper::mbarrier_wait(h_full(consumer), chunk_parity);
#pragma unroll
        for (int i = 0; i < kS - 1; ++i)
#pragma unroll
          for (int kk = 0; kk < kHSteps; ++kk)
            ld_shared_v4(h_peer[i][kk], h_in + L::h_exchange_offset(consumer, i, thread, kk));
        gpu::hopper::mbarrier_arrive_expect_tx(h_full(consumer), kHPeerBytes);
        chunk_parity ^= 1u;
      };
      const auto release_peer_words = [&] {
#pragma unroll
        for (int peer = 1; peer < kS; ++peer)
          gpu::hopper::mbarrier_arrive_cluster_relaxed(in_peer(h_free(consumer), peer));
      };
      // project(h, i, stage): Z += H_source · V_r[rows of source i's columns, this CTA's
      //   channels], the kHSteps steps of source i (0: our own slice, then the peers in rank
      //   order after us) from the V piece in ring slot `stage`; h was written by ordinary
      //   code, hence the fence. Not committed here.
      const auto project = [&](const uint32_t(&h)[kHSteps][4], int i, int stage) {
        const uint64_t v_desc = L::v_descriptor(L::slot(base, stage), L::v_first_step(rank, i));
        gpu::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kHSteps; ++kk)
          gpu::wgmma_m64nNk16_rs_mn_major_b<Element, kOwn>(
              zacc, h[kk], gpu::wgmma_advance(v_desc, gpu::mn_major_step_bytes<typename L::VTile>(kk * kWgmmaK)),
              true);
      };

      if constexpr (kLatePeer) {
        // ---- 5, in a pair: the peer's slice of chunk r is projected in chunk r + 1, right
        //      after that chunk's expand has been issued, so the wait for the peer's H is a
        //      whole expand later than the serial order's. The wgmma groups in flight run
        //      [O(r − 1), E(r)], then [E(r), P(r − 1)], then [O(r)] (E expand, O own project,
        //      P peer project). Ring items are addressed by their index in the tile, in the
        //      producer's order (below; every item is loaded, a slice past `hidden` too). The
        //      own V piece (C = 256) goes back when O retires; the peer's (or C = 128's single
        //      piece) when P does. tests/hopper_lib_test.cpp models this order. ----
        constexpr int kPerChunk = L::kUPieces + L::kVPieces;
        constexpr bool kPeerVLate = L::kVPieces == 2;
        const int item0 = ws.stage + L::kStages * int(ws.phase);  // (only the parity matters)
        const auto at = [&](int i) { return gpu::hopper::PipelineState<L::kStages>::at(item0 + i); };
        // A tile's items. C = 128: chunk r is [U(r), V(r)]. C = 256: chunk 0 is [U0, U1,
        // own V], chunk r ≥ 1 [U0, U1, peer V of r − 1, own V], and the tile ends with the
        // last chunk's peer V (the producer's order).
        const auto u_item = [&](int r, int q) {
          return at(kPeerVLate ? (r == 0 ? q : kPerChunk * r - 1 + q) : kPerChunk * r + q);
        };
        const auto own_item = [&](int r) { return at(kPerChunk * r + L::kUPieces); };
        const auto peer_item = [&](int r) {
          return at(kPeerVLate ? (r + 1 < chunks ? kPerChunk * (r + 1) + L::kUPieces - 1 : kPerChunk * chunks - 1)
                               : kPerChunk * r + L::kUPieces);
        };
        // E(r), its pieces issued in order; with prior (O(r − 1) in flight ahead of it) the
        // first wait retires O(r − 1). Returns with E(r)'s last piece in flight.
        const auto expand_chunk = [&](int r, auto prior) {
#pragma unroll
          for (int q = 0; q < L::kUPieces; ++q) {
            w_pipe.consumer_wait(u_item(r, q));
            expand_piece(q, u_item(r, q).stage);
            if (q == L::kUPieces - 1) load_bias(bias, a_s, r * kSliceCols + first.col);  // while the products run
            if constexpr (decltype(prior)::value) {
              if (q == 0) {
                gpu::wgmma_wait_group<1>();  // O(r − 1)
                gpu::fence_operands(zacc);
                gpu::fence_operands(h_own);
                if constexpr (kPeerVLate) w_pipe.consumer_release(own_item(r - 1));
              }
            }
            if (q > 0) {
              gpu::wgmma_wait_group<1>();  // piece q − 1
              w_pipe.consumer_release(u_item(r, q - 1));
            }
          }
        };
        // P(r): Z += H_peer(r) · V_r[rows of the peer's slice], once its words are here.
        const auto project_peer = [&](int r) {
          if constexpr (kPeerVLate) w_pipe.consumer_wait(peer_item(r));  // (C = 128: waited by O(r))
          receive();
          project(h_peer[0], 1, peer_item(r).stage);
          gpu::wgmma_commit_group();
          release_peer_words();  // its words went into an issued wgmma
        };
        // O(r): Z += H_own(r) · V_r[rows of our slice].
        const auto project_own = [&](int r) {
          w_pipe.consumer_wait(own_item(r));
          project(h_own, 0, own_item(r).stage);
          gpu::wgmma_commit_group();
        };

        expand_chunk(0, std::false_type{});
        gpu::wgmma_wait_group<0>();
        gpu::fence_operands(s);
        w_pipe.consumer_release(u_item(0, L::kUPieces - 1));
        pack(0);
        send();
        project_own(0);
#pragma unroll 1
        for (int r = 1; r < chunks; ++r) {
          expand_chunk(r, std::true_type{});
          project_peer(r - 1);
          gpu::wgmma_wait_group<1>();  // E(r); P(r − 1) stays in flight under pack and send
          gpu::fence_operands(s);
          w_pipe.consumer_release(u_item(r, L::kUPieces - 1));
          pack(r);  // a slice wholly past `hidden` packs zeros
          send();
          gpu::wgmma_wait_group<0>();  // P(r − 1): its H registers are refilled in chunk r + 1
          gpu::fence_operands(zacc);
          gpu::fence_operands(h_peer);
          w_pipe.consumer_release(peer_item(r - 1));
          project_own(r);
        }
        project_peer(chunks - 1);
        if constexpr (kConvAhead) {  // the next tile's conv while O and P of the last chunk run
          // (safe here: the file header's "A tile's order"; Z and y are not touched until the wait)
          const int next = tiles.next(t, clusters);
          if (tiles.valid(next)) conv_tile(next);
        }
        gpu::wgmma_wait_group<0>();  // O and P of the last chunk
        gpu::fence_operands(zacc);
        gpu::fence_operands(h_own);
        gpu::fence_operands(h_peer);
        if constexpr (kPeerVLate) w_pipe.consumer_release(own_item(chunks - 1));
        w_pipe.consumer_release(peer_item(chunks - 1));
        ws = at(kPerChunk * chunks);
      } else {
        for (int r = 0; r < chunks; ++r) {
          const int col0 = r * L::kChunk + rank * kSliceCols;  // this CTA's first hidden column
          const bool live = col0 < hidden;                      // else S_k = 0, and so H_k = φ(0) = 0
          // 5a. A piece's slot is handed back once the wgmma group that reads it has retired:
          //     the next piece's group is issued first, so the tensor pipe has work during the
          //     wait. The whole expand, from the first fence to the last wait, sits inside
          //     `if (live)` (a dead slice only waits for its pieces' bare arrivals and hands the
          //     slots back): a wgmma whose accumulators are still in flight where a branch on a
          //     runtime value joins makes ptxas serialize every wgmma of the kernel (C7520).
          if (live) {
#pragma unroll
            for (int q = 0; q < L::kUPieces; ++q) {
              w_pipe.consumer_wait(ws);
              expand_piece(q, ws.stage);
              if (q == L::kUPieces - 1) load_bias(bias, a_s, r * kSliceCols + first.col);  // while the products run
              if (q > 0) {
                gpu::wgmma_wait_group<1>();
                release_before(ws);  // piece q − 1 has been read
              }
              ws.advance();
            }
            gpu::wgmma_wait_group<0>();
            gpu::fence_operands(s);
            release_before(ws);  // the last piece has been read
          } else {
#pragma unroll
            for (int q = 0; q < L::kUPieces; ++q) {
              w_pipe.consumer_wait(ws);  // (completed by the producer's bare arrival)
              w_pipe.consumer_release(ws);
              ws.advance();
            }
          }
          pack(r);  // 5b (a dead slice packs zeros)
          send();   // 5c
          // 5d-5f. Z += H_k · V_r[rows of our columns], in flight while the peers' words arrive,
          //     then the peers' slices in rank order after us (slot i − 1 holds the words of
          //     rank + i). V piece q serves slices q·kSourcesPerVPiece ..; its slot goes back once
          //     the group reading it retired (the next piece's group is issued first).
          w_pipe.consumer_wait(ws);
          // The pipelined path when every slice of the chunk has a column below `hidden` (the
          // last slice's first). Otherwise (at most the last chunk) the slices wholly past
          // `hidden` are zero and skipped (their pieces were not loaded) and each live slice's
          // group is waited for at once: no wgmma may be in flight across a branch on a runtime
          // value (5a).
          if (L::kVPieces == 1 || r * L::kChunk + (kS - 1) * kSliceCols < hidden) {
            project(h_own, 0, ws.stage);
            gpu::wgmma_commit_group();
            receive();
#pragma unroll
            for (int i = 1; i < kS; ++i) {
              const bool piece_starts = i % L::kSourcesPerVPiece == 0;
              if (piece_starts) {  // a new V piece
                ws.advance();
                w_pipe.consumer_wait(ws);
              }
              project(h_peer[i - 1], i, ws.stage);
              gpu::wgmma_commit_group();
              if (piece_starts) {  // retire the previous piece's group, hand its slot back
                gpu::wgmma_wait_group<1>();
                release_before(ws);
              }
            }
            release_peer_words();  // every peer's words went into an issued wgmma
            gpu::wgmma_wait_group<0>();
          } else {
            if (live) {
              project(h_own, 0, ws.stage);
              gpu::wgmma_commit_group();
              gpu::wgmma_wait_group<0>();
            }
            receive();
#pragma unroll
            for (int i = 1; i < kS; ++i) {
              if (i % L::kSourcesPerVPiece == 0) {  // a new V piece; the previous one is read
                ws.advance();
                w_pipe.consumer_wait(ws);
                release_before(ws);
              }
              if (r * L::kChunk + L::source_of(rank, i) * kSliceCols < hidden) {
                project(h_peer[i - 1], i, ws.stage);
                gpu::wgmma_commit_group();
                gpu::wgmma_wait_group<0>();
              }
            }
            // A dead slice's words were read but used by no wgmma: a fence orders those reads
            // before the arrivals (once, on the last chunk only).
            gpu::hopper::fence_acq_rel_cluster();
            release_peer_words();
          }
          gpu::fence_operands(zacc);
          gpu::fence_operands(h_own);  // read by the projects until the wait: keep their registers
          gpu::fence_operands(h_peer);
          w_pipe.consumer_release(ws);
          ws.advance();
        }
      }

      // ---- 6. one store of y's channels of this CTA (b and the residual are already in Z):
      //      per row and 32 channels, the quad turns its four 8-channel blocks around
      //      (gpu::quad_transpose) and each thread stores one block, 16 bytes ----
      const int row0 = t * kTileRows + consumer * kWgmmaM + first.row;
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int row = row0 + 8 * hh;
        Element* out = y + int64_t(row) * L::kC + rank * kOwn + 8 * tq;
#pragma unroll
        for (int m = 0; m < kOwn / 32; ++m) {
          uint32_t w[4];
#pragma unroll
          for (int q = 0; q < 4; ++q)
            w[q] = gpu::pack_pair<Element>(zacc[4 * (4 * m + q) + 2 * hh], zacc[4 * (4 * m + q) + 2 * hh + 1]);
          gpu::quad_transpose(w, tq);  // every lane: the shuffles need the whole warp
          if (row < M) *reinterpret_cast<uint4*>(out + 32 * m) = make_uint4(w[0], w[1], w[2], w[3]);
        }
      }
    }
  }
  // No CTA leaves while a peer may still store into its shared memory or arrive on its
  // barriers: every thread of every CTA of the cluster meets here (the producer's idle
  // threads at once).
  gpu::hopper::cluster_sync();
}

// ---- launcher ------------------------------------------------------------------------

template <class L> bool fits(const ConvFirstProblem& p) {
  return cluster_shared_bytes<L>(cluster_staging<L>(p.W, int64_t(p.N) * p.H), p.hidden) <= std::size_t(kMaxShared);
}

bool supports(const ConvFirstProblem& p) {
  if (!((p.dtype == DType::f16 || p.dtype == DType::bf16) && p.stride == 1 && p.group_width == kGroupWidth &&
        p.C_out == p.C && (p.C == 128 || p.C == 256 || p.C == 512) && p.hidden % 8 == 0 && p.valid() &&
        p.input_pixels() + 128 < double(INT_MAX) && double(p.hidden) + 256 < double(INT_MAX)))
    return false;
  return p.C == 128 ? fits<ClusterLayout128>(p) : p.C == 256 ? fits<ClusterLayout256>(p) : fits<ClusterLayout512>(p);
}

template <class Element, class L> void launch(const ConvFirstProblem& p, const Args<ConvFirstProblem>& args) {
  constexpr int kE = 2;
  const int M = int(p.input_pixels());
  const XStaging sg = cluster_staging<L>(p.W, int64_t(p.N) * p.H);
  const CUtensorMap x_map = gpu::hopper::cached_tma_tile_2d(
      {.base = reinterpret_cast<uint64_t>(args.x), .rows = uint64_t(M), .cols = uint64_t(p.C),
       .row_stride_bytes = uint64_t(p.C) * kE, .elem_bytes = kE, .box_rows = sg.box_rows, .box_cols = kPanelCols});
  const CUtensorMap u_map = gpu::hopper::cached_tma_tile_2d(
      {.base = reinterpret_cast<uint64_t>(args.u), .rows = uint64_t(p.C), .cols = uint64_t(p.hidden),
       .row_stride_bytes = uint64_t(p.hidden) * kE, .elem_bytes = kE, .box_rows = L::kURows, .box_cols = kPanelCols});
  const CUtensorMap v_map = gpu::hopper::cached_tma_tile_2d(
      {.base = reinterpret_cast<uint64_t>(args.v), .rows = uint64_t(p.hidden), .cols = uint64_t(p.C_out),
       .row_stride_bytes = uint64_t(p.C_out) * kE, .elem_bytes = kE, .box_rows = L::kVRows, .box_cols = kPanelCols});
  const auto kernel = p.activation == ConvFirstActivation::relu ? convfirst_fused_cluster_kernel<Element, L, true>
                                                                : convfirst_fused_cluster_kernel<Element, L, false>;
  const std::size_t shared = cluster_shared_bytes<L>(sg, p.hidden);
  gpu::allow_dynamic_shared(kernel, shared, "convfirst_fused_cluster_kernel");

  gpu::hopper::ClusterLaunch launcher(L::kCluster, dim3(L::kThreads), shared);
  const int tiles = gpu::ceil_div(M, L::kTileRows);
  // 0 (a cluster the device cannot co-schedule) is refused inside with a DeviceError
  const int clusters = std::min(tiles, launcher.max_active_clusters(kernel, "convfirst/gpu/10e_fused_cluster"));
  launcher.launch(dim3(L::kCluster * clusters), kernel, "launching convfirst_fused_cluster_kernel", x_map, u_map,
                  v_map, sg, M, p.H, p.W, p.hidden, static_cast<const Element*>(args.conv_w),
                  static_cast<const Element*>(args.conv_b), static_cast<const Element*>(args.a),
                  static_cast<const Element*>(args.b), static_cast<Element*>(args.y));
}

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& args) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("convfirst/gpu/10e_fused_cluster cannot run here: " + why);
  if (!supports(p))
    throw Unsupported("convfirst/gpu/10e_fused_cluster: f16/bf16, stride 1, C = C_out in {128, 256, 512}, "
                      "hidden % 8 == 0, halo rows and biases that fit shared memory");
  if (!gpu::aligned_16(args.x) || !gpu::aligned_16(args.u) || !gpu::aligned_16(args.v) || !gpu::aligned_16(args.y) ||
      !gpu::aligned_16(args.a) || !gpu::aligned_16(args.b) || reinterpret_cast<uintptr_t>(args.conv_w) % 4 != 0 ||
      reinterpret_cast<uintptr_t>(args.conv_b) % 4 != 0)
    throw Unsupported(
        "convfirst/gpu/10e_fused_cluster: x, u, v, a, b and y must be 16-byte aligned, conv_w and conv_b 4-byte");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (p.C == 128)
      launch<Element, ClusterLayout128>(p, args);
    else if (p.C == 256)
      launch<Element, ClusterLayout256>(p, args);
    else
      launch<Element, ClusterLayout512>(p, args);
  });
}

const Register<ConvFirstProblem> reg{{
    .name = "10e_fused_cluster",
    .device = Device::gpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .idea = "Fig. 7c on Hopper: a cluster of 2 (C = 128, 256) or 4 (C = 512) CTAs shares a pixel tile, each CTA "
            "owning C/S channels of T and y and 64 columns of each hidden chunk; T slices and H slices cross through "
            "distributed shared memory with cluster-scope mbarriers; wgmma with T from shared memory, H from registers",
}};

}  // namespace
}  // namespace convlab
