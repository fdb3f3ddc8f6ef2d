// gpu/attention/09d_flash_wgmma.cu — lesson 09, GPU rung 09d: FlashAttention on Hopper's warpgroup MMA.
//
// Idea over 09c_flash_tensor_core: the same online softmax, the same "P never
// leaves registers", but the products run on wgmma (gpu/lib/wgmma.cuh), the
// instruction Hopper's tensor cores reach their full rate with, in the spirit
// of FlashAttention-3 (without its producer warps, TMA and explicit ping-pong:
// "FA3-lite").
//
// CTA layout: 128 queries of one (b, h), 256 threads = 2 warpgroups; warpgroup
// w owns queries 64w .. 64w+63 of the CTA outright (its softmax state is
// private, as in rung 09c, one level up). All 256 threads also load: K and V
// tiles of kBlockK = 128 keys, cp.async, multi-buffered (kStages).
//
//   S_t  [64 x 128 per warpgroup] = Q_w · K_tᵀ    wgmma m64n128k16 x d/16, A = Q_w and B = K_t
//                                                 from shared memory, both K-major ([row][d])
//   P_t  = exp2(S_t·scale·log2e − m)              fp32 accumulators -> f16/bf16 A fragments
//   O_w [64 x d] = α·O_w + P_t · V_t              wgmma m64n{d}k16 x 8, A = P from registers,
//                                                 B = V_t from shared memory, [key][d] = K x N
//                                                 with N contiguous: MN-major (transpose flag)
//
// The pipeline, per warpgroup (iteration t; both warpgroups in step through
// one __syncthreads per tile):
//
//   barrier: K_t and V_{t−1} have landed, everyone is done with the buffers refilled next
//   issue  S_t = Q·K_tᵀ          (wgmma commit group 1)
//   issue  O += P_{t−1}·V_{t−1}  (wgmma commit group 2)     — P·V lags S by one tile
//   cp.async K_{t+S−1} and V_{t+S−2} (S = kStages) into the freed buffers
//   wait until group 1 is done:   softmax of S_t (max, α, exp2, row sums) runs
//                                 while P_{t−1}·V_{t−1} is still on the tensor cores
//   wait until group 2 is done:   O *= α_t, P_t = round(exp2(...)) packed
//
// so V lags K by one tile in the loads too. The two warpgroups share the
// tensor cores: while one is in its softmax, its own P·V and the other's
// products keep them busy. A CTA needs ~200 registers per thread and 161 KB
// of shared memory (d = 128): one CTA per SM.
//
// The plain loop this implements is rung 09c's (cpu/attention/09b_fused_online):
//     m = −∞, l = 0, o = 0;  per key tile: s_j = scale·q·k_j (masked −∞),
//     m' = max(m, max_j s_j), α = exp(m − m'), l = α·l + Σ_j exp(s_j − m'),
//     o = α·o + Σ_j exp(s_j − m')·v_j, m = m';   finally o / l
// with exp as exp2 of scores pre-multiplied by scale·log2(e) — here folded
// into one FFMA per score, s·(scale·log2 e) − m, before ex2.approx.
//
// Supported: f16, bf16; d ∈ {64, 128}; any Nq, Nk ≥ 1 (partial tiles masked
// and zero-filled); causal (top-left) or not; B·H ≤ 65535. Needs compute
// capability 9.0 and an explicit 90 in CONVLAB_CUDA_ARCHS (CMake then compiles
// this file, like every file whose name contains "wgmma", for sm_90a).
// Run just this: build/convlab run attention/gpu/09d_flash_wgmma --shape B=4,H=16,N=4096,d=128,dtype=f16
#include <cstdint>

#include "ops/attention.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"

namespace convlab {
namespace {

// ---- tunables ---------------------------------------------------------------------
constexpr int kWarpgroups = 2;                   // consumer warpgroups per CTA
constexpr int kWarpgroupThreads = 128;           // fixed by wgmma
constexpr int kRowsPerWarpgroup = 64;            // wgmma's M
constexpr int kBlockQ = kWarpgroups * kRowsPerWarpgroup;  // 128 queries per CTA
constexpr int kBlockK = 128;                     // keys per K/V tile: S's wgmma is m64n128
constexpr int kStages = 2;                       // K (and V) buffers
constexpr int kThreads = kWarpgroups * kWarpgroupThreads;

// Fixed by the hardware.
constexpr int kWgmmaK = 16;     // k of every wgmma.m64nNk16 (f16/bf16)
constexpr int kChunkElems = 8;  // 16 bytes of f16/bf16: the cp.async unit
constexpr int kSwizzleAtomBytes = 1024;  // 8 rows x 128 B: where each 128-byte swizzle pattern starts

static_assert(kBlockK == 128, "S = Q·Kᵀ is one m64n128 accumulator per warpgroup (gpu::wgmma_m64n128k16_ss)");
static_assert(kBlockK % kWgmmaK == 0, "P·V walks the tile's keys in k16 steps");
static_assert(kStages >= 2, "the loads of a later tile are in flight while this one is computed");

template <int kHeadDim> struct Tile {
  static_assert(kHeadDim == 64 || kHeadDim == 128, "d = 64 or 128: one or two 64-wide swizzle panels");
  using QTile = gpu::Sw128Tile<kBlockQ, kHeadDim>;   // [query][d]
  using KVTile = gpu::Sw128Tile<kBlockK, kHeadDim>;  // [key][d], for K and for V
  static constexpr int kQBytes = QTile::kBytes;      // 16 or 32 KB
  static constexpr int kKVBytes = KVTile::kBytes;    // 16 or 32 KB
  // Q | K stage 0 .. S−1 | V stage 0 .. S−1, plus slack to align the start to 1024.
  static constexpr int kSharedBytes = kQBytes + 2 * kStages * kKVBytes + kSwizzleAtomBytes;
  static constexpr int kDSteps = kHeadDim / kWgmmaK;   // wgmma k-steps of S = Q·Kᵀ: 4 or 8
  static constexpr int kKeySteps = kBlockK / kWgmmaK;  // wgmma k-steps of O += P·V: 8
  static constexpr int kSRegs = kBlockK / 2;           // fp32 S accumulators per thread: 64
  static constexpr int kORegs = kHeadDim / 2;          // fp32 O accumulators per thread: 32 or 64
  static constexpr int kRowChunks = kHeadDim / kChunkElems;  // 16-byte chunks per row: 8 or 16
  static constexpr int kRowStep = kThreads / kRowChunks;     // rows between one thread's copies: 32 or 16
  static constexpr int kQCopies = kBlockQ / kRowStep;        // cp.async per thread per tile
  static constexpr int kKVCopies = kBlockK / kRowStep;

  static_assert(kQBytes % kSwizzleAtomBytes == 0 && kKVBytes % kSwizzleAtomBytes == 0,
                "every tile (and every panel) starts on a swizzle-atom boundary: descriptor base offset 0");
  static_assert(kThreads % kRowChunks == 0 && kRowStep % 8 == 0,
                "a thread's chunks stay in one chunk column and one swizzle phase: its copies are kRowStep rows apart");
  static_assert(kSharedBytes <= 227 * 1024, "sm_90 shared memory per block");
};

// Copies rows [row0, row0 + rows) of a [rows_total, kHeadDim] head matrix into
// a swizzled tile at `tile` (shared address); rows past the end become zeros.
// Thread x copies chunk x % kRowChunks of rows x / kRowChunks + c·kRowStep:
// consecutive threads read consecutive 16-byte pieces of a row (coalesced),
// and 8 consecutive threads write one 128-byte line, permuted (conflict-free).
template <class TileLayout, int kHeadDim, int kCopies, class Element>
__device__ __forceinline__ void load_tile(uint32_t tile, const Element* head, int row0, int rows_total) {
  using T = Tile<kHeadDim>;
  const int row = threadIdx.x / T::kRowChunks, chunk = threadIdx.x % T::kRowChunks;
  // Same chunk column and swizzle phase in every copy: copy c is c·kRowStep rows further.
  const uint32_t dst0 = tile + TileLayout::byte_offset(row, chunk * kChunkElems);
  constexpr uint32_t kDstStep = T::kRowStep * TileLayout::kRowBytes;
  constexpr int kSrcStep = T::kRowStep * kHeadDim;
  const Element* src0 = head + (int64_t(row0) + row) * kHeadDim + chunk * kChunkElems;
  if (row0 + kCopies * T::kRowStep <= rows_total) {  // the whole tile exists: no predicates
#pragma unroll
    for (int c = 0; c < kCopies; ++c) gpu::cp_async_16(dst0 + c * kDstStep, src0 + c * kSrcStep, true);
  } else {  // the ragged last tile: rows past the end become zeros (nothing is read for them)
    const int rows_left = rows_total - row0 - row;
#pragma unroll
    for (int c = 0; c < kCopies; ++c) {
      const bool in = c * T::kRowStep < rows_left;
      gpu::cp_async_16(dst0 + c * kDstStep, in ? src0 + c * kSrcStep : head, in);
    }
  }
}

// 2^x on the SFU (MUFU.EX2), flushing subnormal results to 0; ex2(−∞) = +0.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// One warpgroup's registers for its 64 query rows (layouts: gpu::wgmma_d_coord).
template <int kHeadDim> struct RowState {
  using T = Tile<kHeadDim>;
  float s[T::kSRegs] = {};              // S_t, then exp2(...) = P_t in fp32
  float o[T::kORegs] = {};              // O_w, unnormalised
  uint32_t p[T::kKeySteps][4] = {};     // P_{t−1} packed: A fragments of P·V's k-steps
  float row_max[2] = {-INFINITY, -INFINITY};  // rows row_lo and row_lo + 8; log2 units (s·scale·log2 e)
  float row_sum[2] = {0.f, 0.f};        // this thread's part of l (its 32 columns of each tile)
  float alpha[2] = {1.f, 1.f};          // exp2(m_old − m_new) of the last softmax
};

// The CTA's shared-memory tiles and what fills them.
template <class Element, int kHeadDim> struct Tiles {
  using T = Tile<kHeadDim>;
  uint32_t q_tile, k_tiles, v_tiles;  // shared addresses: Q, K stages, V stages
  const Element *kh, *vh;             // this head's K and V [Nk, d]
  int Nk, key_tiles;

  __device__ static uint32_t stage(int tile) { return uint32_t(tile % kStages) * T::kKVBytes; }
  __device__ uint32_t k_tile(int tile) const { return k_tiles + stage(tile); }
  __device__ uint32_t v_tile(int tile) const { return v_tiles + stage(tile); }

  // One cp.async group: K tile kt and V tile vt, each if it exists (the group may be empty).
  __device__ void load(int kt, int vt) const {
    using KVTile = typename T::KVTile;
    if (kt >= 0 && kt < key_tiles) load_tile<KVTile, kHeadDim, T::kKVCopies>(k_tile(kt), kh, kt * kBlockK, Nk);
    if (vt >= 0 && vt < key_tiles) load_tile<KVTile, kHeadDim, T::kKVCopies>(v_tile(vt), vh, vt * kBlockK, Nk);
    gpu::cp_async_commit();
  }

  // The top of iteration `it`. Group G_j holds K tile j + S − 1 and V tile
  // j + S − 2 (S = kStages); iteration it needs G_{it+1−S} = {K_it, V_{it−1}}.
  // After the wait, the proxy fence and the barrier, everyone's copies of it
  // are visible to wgmma, and everyone has finished iteration it − 1, whose
  // waits retired S_{it−1} (reading K_{it−1}) and P_{it−2}·V_{it−2}: exactly
  // the buffers that prefetch(it) refills.
  __device__ void sync(int it) const {
    gpu::cp_async_wait<kStages - 2>();
    gpu::fence_proxy_async_shared();
    __syncthreads();
  }
  // G_it, issued after the iteration's wgmma so the copies overlap them.
  __device__ void prefetch(int it) const { load(it + kStages - 1, it + kStages - 2); }
};

// S_t = Q_w · K_tᵀ: d/16 wgmma into st.s, the first one overwriting it; one commit group.
template <class Element, int kHeadDim>
__device__ __forceinline__ void issue_scores(RowState<kHeadDim>& st, const Tiles<Element, kHeadDim>& tiles,
                                             int warpgroup, int tile) {
  using T = Tile<kHeadDim>;
  using QTile = typename T::QTile;
  using KVTile = typename T::KVTile;
  const uint64_t q_desc = gpu::k_major_descriptor<QTile>(tiles.q_tile, warpgroup * kRowsPerWarpgroup, 0);
  const uint64_t k_desc = gpu::k_major_descriptor<KVTile>(tiles.k_tile(tile), 0, 0);
#pragma unroll
  for (int ks = 0; ks < T::kDSteps; ++ks)  // k-step ks: columns 16ks .. 16ks+15 of Q and K
    gpu::wgmma_m64n128k16_ss<Element>(st.s, gpu::wgmma_advance(q_desc, gpu::k_major_step_bytes<QTile>(ks * kWgmmaK)),
                                      gpu::wgmma_advance(k_desc, gpu::k_major_step_bytes<KVTile>(ks * kWgmmaK)),
                                      /*accumulate=*/ks > 0);
  gpu::wgmma_commit_group();
}

// O_w += P · V_tile: 8 wgmma, A = st.p from registers, B = V MN-major; one commit group.
template <class Element, int kHeadDim>
__device__ __forceinline__ void issue_pv(RowState<kHeadDim>& st, const Tiles<Element, kHeadDim>& tiles, int tile) {
  using T = Tile<kHeadDim>;
  using KVTile = typename T::KVTile;
  const uint64_t v_desc = gpu::mn_major_descriptor<KVTile>(tiles.v_tile(tile), 0);
#pragma unroll
  for (int kk = 0; kk < T::kKeySteps; ++kk)  // k-step kk: keys 16kk .. 16kk+15
    gpu::wgmma_m64nNk16_rs_mn_major_b<Element, kHeadDim>(
        st.o, st.p[kk], gpu::wgmma_advance(v_desc, gpu::mn_major_step_bytes<KVTile>(kk * kWgmmaK)),
        /*accumulate=*/true);
  gpu::wgmma_commit_group();
}

// Mask and online softmax of the finished S_t (st.s), in place: st.s becomes
// exp2(s·scale·log2 e − m_new), st.alpha = exp2(m_old − m_new), st.row_sum updated.
// s[i]: row row_lo + 8·((i >> 1) & 1), key kv0 + 8·(i / 4) + 2t + (i & 1).
template <int kHeadDim>
__device__ __forceinline__ void online_softmax(RowState<kHeadDim>& st, int kv0, int Nk, bool causal, int wg_row0,
                                               int row_lo, int t, float scale_log2) {
  using T = Tile<kHeadDim>;
  if (kv0 + kBlockK > Nk || (causal && kv0 + kBlockK - 1 > wg_row0)) {
#pragma unroll
    for (int i = 0; i < T::kSRegs; ++i) {
      const int j = kv0 + 8 * (i / 4) + 2 * t + (i & 1);
      const int row = row_lo + 8 * ((i >> 1) & 1);
      if (j >= Nk || (causal && j > row)) st.s[i] = -INFINITY;
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {  // h = 0: row row_lo (i % 4 ∈ {0, 1}); h = 1: row_lo + 8 (i % 4 ∈ {2, 3})
    float m_tile = -INFINITY;
#pragma unroll
    for (int i = 2 * h; i < T::kSRegs; i += 4) m_tile = fmaxf(m_tile, fmaxf(st.s[i], st.s[i + 1]));
    // The row's other 96 columns sit in the other 3 lanes of the quad.
    m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, 1));
    m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, 2));
    const float m_new = fmaxf(st.row_max[h], m_tile * scale_log2);  // scale > 0: scaling commutes with max
    // m_new = −∞ only for a row with no visible key so far, which the first
    // tile rules out; guard anyway so that −∞ − (−∞) = NaN cannot arise.
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    st.alpha[h] = exp2_approx(st.row_max[h] - m_use);  // 0 on the first tile
    st.row_max[h] = m_new;
    float sum = 0.f;
#pragma unroll
    for (int i = 2 * h; i < T::kSRegs; i += 4)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float pe = exp2_approx(fmaf(st.s[i + e], scale_log2, -m_use));  // one FFMA; masked: exp2(−∞) = 0
        st.s[i + e] = pe;
        sum += pe;
      }
    st.row_sum[h] = st.alpha[h] * st.row_sum[h] + sum;
  }
}

// With no P·V in flight: O *= α, and P_t = round(st.s) packed into A fragments.
template <class Element, int kHeadDim> __device__ __forceinline__ void rescale_and_pack(RowState<kHeadDim>& st) {
  using T = Tile<kHeadDim>;
#pragma unroll
  for (int i = 0; i < T::kORegs; ++i) st.o[i] *= st.alpha[(i >> 1) & 1];
  // TUTORIAL: rung 09c's trick at warpgroup scale. The accumulators of key
  // columns 16kk .. 16kk+15 hold, per thread, exactly the elements the A
  // fragment of k-step kk wants (gpu::wgmma_d_index_for_a; checked on the host
  // in tests/lesson09_wgmma_test.cpp). One rounding, no data movement.
#pragma unroll
  for (int kk = 0; kk < T::kKeySteps; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      st.p[kk][r] = gpu::pack_pair<Element>(st.s[gpu::wgmma_d_index_for_a(kk, r, 0)],
                                            st.s[gpu::wgmma_d_index_for_a(kk, r, 1)]);
}

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. q [B,H,Nq,d], k, v [B,H,Nk,d], o [B,H,Nq,d], row-major, Element =
// __half or __nv_bfloat16, 16-byte aligned bases; fp32 accumulation and
// softmax; O rounded once. Grid (ceil(Nq/128), B·H); 256 threads;
// Tile<d>::kSharedBytes of dynamic shared memory:
//
//   [ Q 128 x d | K stage 0 .. kStages−1: 128 x d | V stage 0 .. kStages−1: 128 x d ]
//   each gpu::Sw128Tile: 64-column panels of 128-byte rows, 128-byte swizzle, 1024-aligned
//
//   query rows of the CTA: warpgroup 0: 0-63 | warpgroup 1: 64-127
//   (warp w of a warpgroup holds rows 16w .. 16w+15 of its 64 in every fragment)
//
// The key loop is peeled into first tile / steady state / last P·V so that no
// wgmma, commit or wait sits under a condition: ptxas checks that no ordinary
// instruction touches a wgmma's registers before the wait that retires it, and
// where it cannot prove that along every path it serializes every wgmma —
// ptxas then prints an info line (not a warning), "Potential Performance Loss:
// wgmma.mma_async instructions are serialized due to …", with a code and the
// reason (C7514 and C7515 were seen while writing this rung) — which would
// undo the asynchrony this rung is about.
//
// Edges. Query rows ≥ Nq are zero-filled, computed, never stored. Key rows ≥ Nk
// are zero-filled (V contributes 0, never NaN) and their scores masked to −∞,
// as are causal keys j > i. Under the causal mask the CTA stops after the tile
// holding its last query; every tile starts at a multiple of 128 ≤ q0, so every
// row sees the first key of every tile it computes, and the first tile holds
// key 0: each row's max is finite from the first tile on.
template <class Element, int kHeadDim>
__global__ void __launch_bounds__(kThreads, 1)
    flash_wgmma_kernel(int Nq, int Nk, bool causal, float scale_log2, const Element* __restrict__ q,
                       const Element* __restrict__ k, const Element* __restrict__ v, Element* __restrict__ o) {
  // Compiled for every target; in code for targets other than sm_90a the
  // wgmma wrappers trap, and run() never launches it there: it throws
  // Unsupported when gpu::wgmma_unavailable_reason() is not empty.
  using T = Tile<kHeadDim>;
  extern __shared__ unsigned char shared[];
  // Dynamic shared memory is only 16-byte aligned for sure; the swizzle
  // patterns must start at multiples of 1024 (descriptor base offset 0).
  const uint32_t q_tile = (gpu::shared_address(shared) + kSwizzleAtomBytes - 1) & ~uint32_t(kSwizzleAtomBytes - 1);

  const int warpgroup = threadIdx.x / kWarpgroupThreads;
  const int t = threadIdx.x % 4;  // column pair within an n8 tile (gpu::wgmma_d_coord)
  // Causal CTAs with more queries have more key tiles: launch those first.
  const int q_block = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int q0 = q_block * kBlockQ;
  const int64_t bh = blockIdx.y;
  const Element* qh = q + bh * Nq * kHeadDim;
  const int key_end = causal ? min(Nk, q0 + kBlockQ) : Nk;
  const Tiles<Element, kHeadDim> tiles{q_tile,
                                       q_tile + T::kQBytes,
                                       q_tile + T::kQBytes + kStages * T::kKVBytes,
                                       k + bh * Nk * kHeadDim,
                                       v + bh * Nk * kHeadDim,
                                       Nk,
                                       gpu::ceil_div(key_end, kBlockK)};  // ≥ 1 key tile
  const int wg_row0 = q0 + warpgroup * kRowsPerWarpgroup;  // this warpgroup's first query
  // The query row of accumulators with (i >> 1) even; odd: row_lo + 8.
  const int row_lo = wg_row0 + gpu::wgmma_d_coord(threadIdx.x % kWarpgroupThreads, 0).row;

  // ---- prologue: Q and groups G_{1−S} .. G_{−1} ---------------------------------------
  load_tile<typename T::QTile, kHeadDim, T::kQCopies>(q_tile, qh, q0, Nq);  // joins G_{1−S}
#pragma unroll
  for (int j = 1 - kStages; j < 0; ++j) tiles.load(j + kStages - 1, j + kStages - 2);

  RowState<kHeadDim> st;

  // ---- tile 0: S_0 and its softmax; no P·V yet ------------------------------------------
  tiles.sync(0);
  gpu::wgmma_fence();
  issue_scores(st, tiles, warpgroup, 0);
  tiles.prefetch(0);
  gpu::wgmma_wait_group<0>();
  gpu::fence_operands(st.s);
  online_softmax(st, 0, Nk, causal, wg_row0, row_lo, t, scale_log2);
  rescale_and_pack<Element>(st);

  // ---- tiles 1 .. n−1: S_t and P_{t−1}·V_{t−1} in flight together -----------------------
  for (int it = 1; it < tiles.key_tiles; ++it) {
    tiles.sync(it);
    // st.s (read by the last softmax), st.o (rescaled) and st.p (packed) were
    // written by ordinary instructions: fence before wgmma touches them.
    gpu::wgmma_fence();
    issue_scores(st, tiles, warpgroup, it);
    issue_pv(st, tiles, it - 1);
    tiles.prefetch(it);
    // Groups retire in order: "at most 1 pending" means S_t is done, P·V may still run.
    gpu::wgmma_wait_group<1>();
    gpu::fence_operands(st.s);
    online_softmax(st, it * kBlockK, Nk, causal, wg_row0, row_lo, t, scale_log2);  // overlaps P·V
    gpu::wgmma_wait_group<0>();
    gpu::fence_operands(st.o);  // O and the P registers are free again
    gpu::fence_operands(st.p);
    rescale_and_pack<Element>(st);
  }

  // ---- the last P·V --------------------------------------------------------------------
  tiles.sync(tiles.key_tiles);  // V_{n−1} has landed; nothing is left to load
  gpu::wgmma_fence();
  issue_pv(st, tiles, tiles.key_tiles - 1);
  gpu::wgmma_wait_group<0>();
  gpu::fence_operands(st.o);
  gpu::fence_operands(st.p);
  gpu::cp_async_wait<0>();  // with kStages > 2 an empty group may still be open; leave none behind

  // ---- epilogue: l across the quad, O / l, one rounding ------------------------------
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    st.row_sum[h] += __shfl_xor_sync(0xffffffffu, st.row_sum[h], 1);
    st.row_sum[h] += __shfl_xor_sync(0xffffffffu, st.row_sum[h], 2);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int i = row_lo + 8 * h;
    if (i >= Nq) continue;
    const float inv_l = 1.f / st.row_sum[h];  // l ≥ 1: the row's max term is exp2(0)
    Element* out = o + (bh * Nq + i) * kHeadDim + 2 * t;
#pragma unroll
    for (int n = 0; n < kHeadDim / 8; ++n)  // columns 8n + 2t, +1: one aligned 4-byte store
      *reinterpret_cast<uint32_t*>(out + 8 * n) =
          gpu::pack_pair<Element>(st.o[4 * n + 2 * h] * inv_l, st.o[4 * n + 2 * h + 1] * inv_l);
  }
}

// ---- launcher ------------------------------------------------------------------------

bool supports(const AttentionProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && (p.d == 64 || p.d == 128) &&
         int64_t(p.B) * p.H <= gpu::kMaxGridYZ && gpu::ceil_div<int64_t>(p.Nq, kBlockQ) <= gpu::kMaxGridX;
}

template <class Element, int kHeadDim> void launch(const AttentionProblem& p, const Args<AttentionProblem>& a) {
  const auto kernel = flash_wgmma_kernel<Element, kHeadDim>;
  constexpr int kShared = Tile<kHeadDim>::kSharedBytes;
  gpu::allow_dynamic_shared(kernel, kShared, "flash_wgmma_kernel");  // > 48 KB must be asked for
  const dim3 grid(unsigned(gpu::ceil_div(p.Nq, kBlockQ)), unsigned(p.B * p.H));
  const float scale_log2 = float(p.scale() * 1.4426950408889634);  // scale·log2(e), rounded once
  kernel<<<grid, kThreads, kShared>>>(p.Nq, p.Nk, p.causal, scale_log2, static_cast<const Element*>(a.q),
                                      static_cast<const Element*>(a.k), static_cast<const Element*>(a.v),
                                      static_cast<Element*>(a.o));
  gpu::check_launch("flash_wgmma_kernel");
}

void run(const AttentionProblem& p, const Args<AttentionProblem>& a) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("09d_flash_wgmma cannot run here: " + why);
  // 16-byte cp.async of row pieces: rows are d·2 = 128 or 256 bytes, so only
  // the bases must be 16-byte aligned (the harness's cudaMalloc gives 256).
  if (!gpu::aligned_16(a.q) || !gpu::aligned_16(a.k) || !gpu::aligned_16(a.v) || !gpu::aligned_16(a.o))
    throw Unsupported("09d_flash_wgmma needs 16-byte aligned q, k, v and o");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (p.d == 64)
      launch<Element, 64>(p, a);
    else
      launch<Element, 128>(p, a);
  });
}

const Register<AttentionProblem> reg{{
    .name = "09d_flash_wgmma",
    .device = Device::gpu,
    .lesson = 9,
    .supports = supports,
    .run = run,
    .idea = "FA3-lite: wgmma (sm_90a) for S and PV, 128 queries/CTA in 2 warpgroups, Q/K/V in 128B-swizzled "
            "shared memory via descriptors, P from registers, PV of tile t-1 overlapped with softmax of tile t",
}};

}  // namespace
}  // namespace convlab
