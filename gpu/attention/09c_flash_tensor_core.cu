// gpu/attention/09c_flash_tensor_core.cu — lesson 09, GPU rung 09c: FlashAttention-2 on tensor cores.
//
// Idea over 09b_fused_online: the same online softmax, but both products run on
// the tensor cores (mma.sync m16n8k16, fp16/bf16 in, fp32 accumulate), and the
// work is split the FlashAttention-2 way:
//
//   * a CTA owns kBlockQ = 64 queries of one (b, h) and walks all keys; each of
//     its 4 warps owns 16 of the queries outright — no other warp ever touches
//     their softmax state, so no shared-memory exchange and no barrier is
//     needed for the softmax (FA1 split the keys across warps instead and had
//     to combine partial results through shared memory);
//   * the warp's Q slice (16 x d) is loaded once into registers as mma A
//     fragments and reused for every key tile;
//   * K and V tiles of kBlockK = 64 keys are double-buffered in shared memory:
//     cp.async brings tile t+1 while the tensor cores work on tile t;
//   * S = Q·Kᵀ (16 x 64 per warp) stays in fp32 accumulator registers; the row
//     max and sum need only the 4 lanes of a quad (a row of an mma C fragment
//     lives in lanes 4g .. 4g+3), so two xor-shuffles reduce a row;
//   * P = exp(S − m) is rounded to fp16/bf16 and, because the C fragment of an
//     m16n8 tile pair has exactly the layout of an m16k16 A fragment, packed
//     straight into the A operand of the P·V mma — P never leaves registers;
//   * O (16 x d per warp) accumulates in fp32 registers, rescaled by
//     α = exp(m − m') per tile; 1/l is applied once at the end.
//
// The plain loop this implements, per query row i (cpu/attention/09b_fused_online):
//
//     m = −∞, l = 0, o = 0
//     for each key tile T:  s_j = scale·q_i·k_j (j in T, masked −∞)
//                           m' = max(m, max_j s_j);  α = exp(m − m')
//                           l = α·l + Σ_j exp(s_j − m');  o = α·o + Σ_j exp(s_j − m')·v_j
//                           m = m'
//     o_i = o / l
//
// Exponentials are exp2: scores are kept pre-multiplied by scale·log2(e), so
// exp(scale·s − m) = exp2(s·scale·log2 e − m·log2 e), one FMUL fewer per score.
//
// Work per warp per key tile (d = 128): 64 mma for S (8 k16 steps x 8 key
// n8 tiles) and 64 for P·V (4 key k16 steps x 16 d n8 tiles); 32 ldmatrix.x4
// of K and 32 of V (32 KB of shared reads); 1024 exp2 (32 per lane).
//
// Supported: f16, bf16; d ∈ {64, 128}; any Nq, Nk ≥ 1 (partial tiles masked
// and zero-filled), causal (top-left) or not; B·H ≤ 65535.
// Run just this: build/convlab run attention/gpu/09c_flash_tensor_core --shape B=4,H=16,N=4096,d=128,dtype=f16
#include <cstdint>

#include "ops/attention.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"

namespace convlab {
namespace {

// ---- tunables ---------------------------------------------------------------------
constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 16;               // one m16 tile of queries per warp
constexpr int kBlockQ = kWarps * kRowsPerWarp;  // 64 queries per CTA
constexpr int kBlockK = 64;                     // keys per K/V tile
constexpr int kStages = 2;                      // K/V double buffer
constexpr int kThreads = 32 * kWarps;

// Fixed by the hardware.
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int kChunkElems = 8;  // 16 bytes of f16/bf16: the cp.async and ldmatrix row unit
constexpr int kElemBytes = 2;

static_assert(kRowsPerWarp == kMmaM, "a warp owns exactly one m16 row tile: its softmax state is private");
static_assert(kBlockK % 16 == 0, "S tiles pair up into k16 steps of P·V; keys are loaded 16 at a time by ldmatrix");
static_assert(kStages == 2, "the loop below is written for one tile in flight while one is consumed");

template <int kHeadDim> struct Tile {
  static_assert(kHeadDim == 64 || kHeadDim == 128, "d = 64 or 128: rows of 128 or 256 bytes");
  static constexpr int kRowChunks = kHeadDim / kChunkElems;   // 8 or 16 chunks per row
  static constexpr int kRowBytes = kHeadDim * kElemBytes;     // 128 or 256
  static constexpr int kQBytes = kBlockQ * kRowBytes;         // 8 or 16 KB
  static constexpr int kKVBytes = kBlockK * kRowBytes;        // one K (or V) tile: 8 or 16 KB
  static constexpr int kStageBytes = 2 * kKVBytes;            // K then V
  static constexpr int kSharedBytes = kQBytes + kStages * kStageBytes;  // 40 or 80 KB
  static constexpr int kDSteps = kHeadDim / kMmaK;            // k16 steps of Q·Kᵀ
  static constexpr int kDTiles = kHeadDim / kMmaN;            // n8 tiles of O
  static constexpr int kKeyTiles = kBlockK / kMmaN;           // n8 tiles of S: 8
  static constexpr int kKeySteps = kBlockK / kMmaK;           // k16 steps of P·V: 4
  static constexpr int kRowStep = kThreads / kRowChunks;      // rows between a thread's chunks: 16 or 8
  static constexpr int kQChunksPerThread = kBlockQ * kRowChunks / kThreads;
  static constexpr int kKVChunksPerThread = kBlockK * kRowChunks / kThreads;
  using Swizzle = gpu::ChunkSwizzle<kRowChunks>;

  static_assert(kThreads % kRowChunks == 0, "a thread's chunks stay in one chunk column");
  static_assert(kRowStep % Swizzle::kPhasePeriodRows == 0 && kMmaM % Swizzle::kPhasePeriodRows == 0,
                "moving by a thread's row step or by 16 rows moves the swizzled offset by whole rows");
  static_assert((kBlockQ * kRowChunks) % kThreads == 0 && (kBlockK * kRowChunks) % kThreads == 0,
                "every thread copies the same number of chunks");
  static_assert(kSharedBytes <= 227 * 1024, "sm_90 shared memory per block");
};

// Copies rows [row0, row0 + tile_rows) of a [rows_total, kHeadDim] head
// matrix into a swizzled tile at `tile` (shared address); rows past the end
// become zeros (cp.async with source size 0 reads nothing).
template <int kHeadDim, int kChunksPerThread, class Element>
__device__ __forceinline__ void load_tile(uint32_t tile, const Element* head, int row0, int rows_total) {
  using T = Tile<kHeadDim>;
  const int row = threadIdx.x / T::kRowChunks, chunk = threadIdx.x % T::kRowChunks;
  const uint32_t dst0 = tile + T::Swizzle::byte_offset(row, chunk);
#pragma unroll
  for (int c = 0; c < kChunksPerThread; ++c) {
    const int r = row + c * T::kRowStep;
    const bool in = row0 + r < rows_total;
    const Element* src = in ? head + int64_t(row0 + r) * kHeadDim + chunk * kChunkElems : head;
    gpu::cp_async_16(dst0 + c * T::kRowStep * T::kRowBytes, src, in);
  }
}

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. q [B,H,Nq,d], k, v [B,H,Nk,d], o [B,H,Nq,d], row-major, Element =
// __half or __nv_bfloat16, 16-byte aligned bases; fp32 accumulation and
// softmax; O rounded once. Grid (ceil(Nq/64), B·H); 128 threads;
// Tile<d>::kSharedBytes of dynamic shared memory:
//
//   [ Q tile 64 x d | stage 0: K tile 64 x d, V tile 64 x d | stage 1: K, V ]
//   all row-major in 16-byte chunks, XOR-swizzled (gpu::ChunkSwizzle)
//
//   query rows of the CTA:  warp 0: 0-15 | warp 1: 16-31 | warp 2: 32-47 | warp 3: 48-63
//   per warp and key tile:  S[16 x 64] = Q_w[16 x d] · K_tileᵀ       (registers)
//                           O_w[16 x d] = α·O_w + P[16 x 64] · V_tile (registers)
//
// Edges. Query rows ≥ Nq are zero-filled, computed, never stored. Key rows ≥ Nk
// are zero-filled (so V contributes 0, never NaN) and their scores masked to
// −∞, as are causal keys j > i. Under the causal mask the CTA stops after the
// tile holding its last query; the first tile always holds key 0, visible to
// every query, so each row's max is finite from the first tile on.
template <class Element, int kHeadDim>
__global__ void __launch_bounds__(kThreads, 2)
    flash_tensor_core_kernel(int Nq, int Nk, bool causal, float scale_log2, const Element* __restrict__ q,
                             const Element* __restrict__ k, const Element* __restrict__ v,
                             Element* __restrict__ o) {
  using T = Tile<kHeadDim>;
  extern __shared__ __align__(128) unsigned char shared[];
  const uint32_t q_tile = gpu::shared_address(shared);
  const uint32_t kv_base = q_tile + T::kQBytes;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;  // mma fragment coordinates (gpu/lib/mma.cuh)
  // Causal CTAs with more queries have more key tiles: launch those first.
  const int q_block = causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int q0 = q_block * kBlockQ;
  const int64_t bh = blockIdx.y;
  const Element* qh = q + bh * Nq * kHeadDim;
  const Element* kh = k + bh * Nk * kHeadDim;
  const Element* vh = v + bh * Nk * kHeadDim;

  // Keys this CTA needs: all, or (causal) up to its last query q0 + 63.
  const int key_end = causal ? min(Nk, q0 + kBlockQ) : Nk;
  const int key_tiles = gpu::ceil_div(key_end, kBlockK);  // ≥ 1

  // ---- prologue: Q and the first K/V tile in one cp.async group ---------------
  load_tile<kHeadDim, T::kQChunksPerThread>(q_tile, qh, q0, Nq);
  load_tile<kHeadDim, T::kKVChunksPerThread>(kv_base, kh, 0, Nk);
  load_tile<kHeadDim, T::kKVChunksPerThread>(kv_base + T::kKVBytes, vh, 0, Nk);
  gpu::cp_async_commit();

  // ldmatrix row addresses (gpu::ldmatrix_x4_row_address): lane l supplies row
  // l % 16, chunk column l / 16 of each 16 x 16 block.
  const gpu::MatrixCoord lr = gpu::ldmatrix_x4_row_address(lane);
  const int lane_chunk = lr.col / kChunkElems;  // 0 or 1

  uint32_t q_frag[T::kDSteps][4];       // A fragments of Q_w, one per k16 step of d
  float o_acc[T::kDTiles][4] = {};      // C fragments of O_w: rows g, g+8; columns 8·n + 2t, +1
  float row_max[2] = {-INFINITY, -INFINITY};  // rows g and g + 8, in log2 units (s·scale·log2 e)
  float row_sum[2] = {0.f, 0.f};        // this lane's part of l (its 16 columns per tile); quad-summed at the end

  const int row_lo = q0 + warp * kRowsPerWarp + g;  // the query row of c0, c1 (c2, c3: row_lo + 8)

  for (int kt = 0; kt < key_tiles; ++kt) {
    // Tile kt has landed for this thread; the barrier makes it everyone's, and
    // certifies every warp is done with tile kt − 1, whose stage we refill next.
    gpu::cp_async_wait<0>();
    __syncthreads();
    if (kt == 0) {
#pragma unroll
      for (int s = 0; s < T::kDSteps; ++s)
        gpu::ldmatrix_x4(q_frag[s], q_tile + T::Swizzle::byte_offset(warp * kRowsPerWarp + lr.row, 2 * s + lane_chunk));
    }
    if (kt + 1 < key_tiles) {
      const uint32_t next = kv_base + ((kt + 1) % kStages) * T::kStageBytes;
      load_tile<kHeadDim, T::kKVChunksPerThread>(next, kh, (kt + 1) * kBlockK, Nk);
      load_tile<kHeadDim, T::kKVChunksPerThread>(next + T::kKVBytes, vh, (kt + 1) * kBlockK, Nk);
      gpu::cp_async_commit();
    }
    const uint32_t k_tile = kv_base + (kt % kStages) * T::kStageBytes;
    const uint32_t v_tile = k_tile + T::kKVBytes;
    const int kv0 = kt * kBlockK;

    // ---- S = Q_w · Kᵀ -------------------------------------------------------------
    // K is stored [key][d] = [n][k]: ldmatrix WITHOUT .trans on a 16-key x 16-d
    // block gives B fragments of two n8 key tiles: registers {0, 2} for keys
    // 0-7 of the pair, {1, 3} for keys 8-15 (tests/lesson04_implicit_gemm_test.cpp).
    float s_acc[T::kKeyTiles][4] = {};
#pragma unroll
    for (int s = 0; s < T::kDSteps; ++s)
#pragma unroll
      for (int kp = 0; kp < T::kKeyTiles / 2; ++kp) {
        uint32_t r[4];
        gpu::ldmatrix_x4(r, k_tile + T::Swizzle::byte_offset(kp * 16 + lr.row, 2 * s + lane_chunk));
        const uint32_t b_lo[2] = {r[0], r[2]}, b_hi[2] = {r[1], r[3]};
        gpu::mma_m16n8k16<Element>(s_acc[2 * kp], q_frag[s], b_lo);
        gpu::mma_m16n8k16<Element>(s_acc[2 * kp + 1], q_frag[s], b_hi);
      }

    // ---- mask, scale, online softmax ----------------------------------------------
    // s_acc[n][c]: row row_lo + 8·(c >> 1), key kv0 + 8n + 2t + (c & 1).
    const bool need_mask = kv0 + kBlockK > Nk || (causal && kv0 + kBlockK - 1 > q0);
#pragma unroll
    for (int n = 0; n < T::kKeyTiles; ++n)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float x = s_acc[n][c] * scale_log2;
        if (need_mask) {
          const int j = kv0 + 8 * n + 2 * t + (c & 1);
          const int i = row_lo + 8 * (c >> 1);
          if (j >= Nk || (causal && j > i)) x = -INFINITY;
        }
        s_acc[n][c] = x;
      }
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // h = 0: row g (c0, c1); h = 1: row g + 8 (c2, c3)
      float m_tile = -INFINITY;
#pragma unroll
      for (int n = 0; n < T::kKeyTiles; ++n) m_tile = fmaxf(m_tile, fmaxf(s_acc[n][2 * h], s_acc[n][2 * h + 1]));
      // The row's other 48 columns sit in the other 3 lanes of the quad.
      m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, 1));
      m_tile = fmaxf(m_tile, __shfl_xor_sync(0xffffffffu, m_tile, 2));
      const float m_new = fmaxf(row_max[h], m_tile);
      // m_new = −∞ only for a row that has seen no visible key yet, which the
      // first tile rules out; guard anyway so exp2(−∞ − −∞) = NaN cannot arise.
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      alpha[h] = exp2f(row_max[h] - m_use);  // 0 on the first tile (row_max = −∞)
      row_max[h] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < T::kKeyTiles; ++n)
#pragma unroll
        for (int c = 2 * h; c < 2 * h + 2; ++c) {
          const float p = exp2f(s_acc[n][c] - m_use);  // exp2(−∞) = 0 for masked keys
          s_acc[n][c] = p;
          sum += p;
        }
      row_sum[h] = alpha[h] * row_sum[h] + sum;
    }
#pragma unroll
    for (int n = 0; n < T::kDTiles; ++n) {
      o_acc[n][0] *= alpha[0];
      o_acc[n][1] *= alpha[0];
      o_acc[n][2] *= alpha[1];
      o_acc[n][3] *= alpha[1];
    }

    // ---- O_w += P · V -------------------------------------------------------------
    // TUTORIAL: the C fragments of S's n8 key tiles 2kk and 2kk+1 hold, per lane,
    // rows g / g+8 and keys 16kk + 2t, +1 and 16kk + 8 + 2t, +1 — exactly the
    // elements the A fragment of a 16 x 16 (rows x keys) block wants
    // (gpu::mma_a_coord: a0 row g k 2t..; a1 row g+8; a2 row g k 8+2t..; a3 row g+8).
    // So P goes from accumulator to operand with one rounding and no data movement.
    // V is stored [key][d] = [k][n]: ldmatrix WITH .trans, as for GEMM's B.
#pragma unroll
    for (int kk = 0; kk < T::kKeySteps; ++kk) {
      const uint32_t p_frag[4] = {gpu::pack_pair<Element>(s_acc[2 * kk][0], s_acc[2 * kk][1]),
                                  gpu::pack_pair<Element>(s_acc[2 * kk][2], s_acc[2 * kk][3]),
                                  gpu::pack_pair<Element>(s_acc[2 * kk + 1][0], s_acc[2 * kk + 1][1]),
                                  gpu::pack_pair<Element>(s_acc[2 * kk + 1][2], s_acc[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < T::kDTiles / 2; ++dp) {
        uint32_t r[4];
        gpu::ldmatrix_x4_trans(r, v_tile + T::Swizzle::byte_offset(kk * 16 + lr.row, 2 * dp + lane_chunk));
        const uint32_t b_lo[2] = {r[0], r[1]}, b_hi[2] = {r[2], r[3]};
        gpu::mma_m16n8k16<Element>(o_acc[2 * dp], p_frag, b_lo);
        gpu::mma_m16n8k16<Element>(o_acc[2 * dp + 1], p_frag, b_hi);
      }
    }
  }
  gpu::cp_async_wait<0>();  // nothing is pending (the last tile issued no copy); keep it explicit

  // ---- epilogue: l across the quad, O / l, one rounding ------------------------------
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 1);
    row_sum[h] += __shfl_xor_sync(0xffffffffu, row_sum[h], 2);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int i = row_lo + 8 * h;
    if (i >= Nq) continue;
    const float inv_l = 1.f / row_sum[h];  // ≥ 1: the row's max term is exp2(0)
    Element* out = o + (bh * Nq + i) * kHeadDim + 2 * t;
#pragma unroll
    for (int n = 0; n < T::kDTiles; ++n)  // columns 8n + 2t, +1: one aligned 4-byte store
      *reinterpret_cast<uint32_t*>(out + 8 * n) =
          gpu::pack_pair<Element>(o_acc[n][2 * h] * inv_l, o_acc[n][2 * h + 1] * inv_l);
  }
}

// ---- launcher ------------------------------------------------------------------------

bool supports(const AttentionProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && (p.d == 64 || p.d == 128) &&
         int64_t(p.B) * p.H <= gpu::kMaxGridYZ && gpu::ceil_div<int64_t>(p.Nq, kBlockQ) <= gpu::kMaxGridX;
}

template <class Element, int kHeadDim> void launch(const AttentionProblem& p, const Args<AttentionProblem>& a) {
  const auto kernel = flash_tensor_core_kernel<Element, kHeadDim>;
  constexpr int kShared = Tile<kHeadDim>::kSharedBytes;
  gpu::allow_dynamic_shared(kernel, kShared, "flash_tensor_core_kernel");  // > 48 KB must be asked for
  const dim3 grid(unsigned(gpu::ceil_div(p.Nq, kBlockQ)), unsigned(p.B * p.H));
  const float scale_log2 = float(p.scale() * 1.4426950408889634);  // scale·log2(e), rounded once
  kernel<<<grid, kThreads, kShared>>>(p.Nq, p.Nk, p.causal, scale_log2, static_cast<const Element*>(a.q),
                                      static_cast<const Element*>(a.k), static_cast<const Element*>(a.v),
                                      static_cast<Element*>(a.o));
  gpu::check_launch("flash_tensor_core_kernel");
}

void run(const AttentionProblem& p, const Args<AttentionProblem>& a) {
  // 16-byte cp.async of row pieces: rows are d·2 = 128 or 256 bytes, so only
  // the bases must be 16-byte aligned (the harness's cudaMalloc gives 256).
  if (!gpu::aligned_16(a.q) || !gpu::aligned_16(a.k) || !gpu::aligned_16(a.v) || !gpu::aligned_16(a.o))
    throw Unsupported("09c_flash_tensor_core needs 16-byte aligned q, k, v and o");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (p.d == 64)
      launch<Element, 64>(p, a);
    else
      launch<Element, 128>(p, a);
  });
}

const Register<AttentionProblem> reg{{
    .name = "09c_flash_tensor_core",
    .device = Device::gpu,
    .lesson = 9,
    .supports = supports,
    .run = run,
    .idea = "FlashAttention-2: 64 queries/CTA, 16 per warp, Q in registers, cp.async double-buffered K/V, "
            "mma.sync S and PV, P reused from accumulators",
}};

}  // namespace
}  // namespace convlab
