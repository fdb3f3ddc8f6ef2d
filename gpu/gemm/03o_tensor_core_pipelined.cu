// gpu/gemm/03o_tensor_core_pipelined.cu — lesson 03, GPU rung 03o: keep the tensor cores fed.
//
// Idea over 03n_tensor_core_mma: rung 03n issues the right instructions but starves
// them. Every k tile it loads element by element, waits, computes, waits again,
// and its 32x32 warp tile does 8 mma per 4 ldmatrix. Four changes, each
// attacking one stall:
//
//   1. cp.async (sm_80+) copies 16 bytes global -> shared without passing
//      through registers and without blocking the thread. Issued kStages-1
//      tiles ahead (cp.async.commit_group / wait_group), the loads of tiles
//      k+1 and k+2 fly while the tensor cores chew on tile k.
//   2. 128x256 block tiles and 64x64 warp tiles: per k16 step a warp does
//      4x8 = 32 mma for 8 ldmatrix.x4, and the block reads 48 KB from L2 per
//      4.2 MFLOP (85 FLOP/byte; rung 03n's 64x64x32 tile reads 32 FLOP/byte).
//      k tiles of 64 halve the barriers per FLOP against 32.
//   3. An XOR swizzle of the shared tiles instead of padding: rows stay dense
//      (cp.async writes whole 16-byte chunks, no holes), and the 8 rows an
//      ldmatrix reads still land in 8 different bank groups.
//   4. Register double buffering: the fragments of k16 step s+1 are loaded
//      (ldmatrix) while the mma of step s run, so the tensor cores do not
//      wait on shared memory either.
//   And tiles are handed out in bands of kGroupM tile rows so that blocks
//   resident together share rows of A and columns of B in L2.
//
// What it costs: 144 KB of shared memory and 254 registers per thread (one
// 256-thread block per SM), a kernel three times the length of rung 03n's, and
// an alignment condition: a 16-byte cp.async of a row piece needs rows that
// start on 16-byte boundaries, i.e. K % 8 == 0 (rows of A) and N % 8 == 0
// (rows of B). Other shapes run the same kernel with a slow loader
// (kVectorLoads = false: element-wise predicated loads, stored to the same
// swizzled layout), so every M, N, K is still correct.
//
// Supported: f16 and bf16, any M, N, K; fast path when K % 8 == 0 and N % 8 == 0.
// Run just this: build/convlab run gemm/gpu/03o_tensor_core_pipelined --shape M=4096,dtype=f16
// (the tour shape is fp32, which tensor-core rungs do not take).
#include <cstdint>

#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/mma_pipeline.cuh"

namespace convlab {
namespace {

// ---- tunables ---------------------------------------------------------------------
constexpr int kBlockM = 128;  // C rows per block
constexpr int kBlockN = 256;  // C columns per block
constexpr int kBlockK = 64;   // k per pipeline stage
constexpr int kWarpsM = 2;    // warps stacked along M
constexpr int kWarpsN = 4;    // warps side by side along N
constexpr int kStages = 3;    // shared-memory buffers in the cp.async ring
constexpr int kGroupM = 8;    // tile rows per rasterisation band (L2 reuse)

// Fixed by the hardware: the m16n8k16 tile, the 16-byte chunk (gpu/lib/mma_pipeline.cuh).
using gpu::kMmaM, gpu::kMmaN, gpu::kMmaK, gpu::kChunkElems, gpu::kElemBytes;

// Derived: the shared tiles, then the warps.
constexpr int kARowChunks = kBlockK / kChunkElems;  // 8 chunks in a row of the A tile [kBlockM][kBlockK]
constexpr int kBRowChunks = kBlockN / kChunkElems;  // 32 chunks in a row of the B tile [kBlockK][kBlockN]
constexpr int kARowBytes = kBlockK * kElemBytes;
constexpr int kBRowBytes = kBlockN * kElemBytes;
constexpr int kATileBytes = kBlockM * kARowBytes;  // 16 KB
constexpr int kBTileBytes = kBlockK * kBRowBytes;  // 32 KB
constexpr int kStageBytes = kATileBytes + kBTileBytes;
constexpr int kSharedBytes = kStages * kStageBytes;  // 144 KB
using Tiling = gpu::WarpTiling<kBlockM, kBlockN, kBlockK, kWarpsM, kWarpsN>;
constexpr int kThreads = Tiling::kThreads;                                      // 256
constexpr int kWarpM = Tiling::kWarpM, kWarpN = Tiling::kWarpN;                 // 64 x 64 per warp
constexpr int kMmaTilesM = Tiling::kMmaTilesM, kMmaTilesN = Tiling::kMmaTilesN; // 4 x 8 m16n8 tiles per warp
constexpr int kKSteps = Tiling::kKSteps;                                        // 4 k16 steps per stage
constexpr int kAChunksPerThread = kBlockM * kARowChunks / kThreads;  // 4
constexpr int kBChunksPerThread = kBlockK * kBRowChunks / kThreads;  // 8

using SwizzleA = gpu::ChunkSwizzle<kARowChunks>;
using SwizzleB = gpu::ChunkSwizzle<kBRowChunks>;

static_assert(kWarpN % 16 == 0, "one ldmatrix.x4.trans loads B for two n8 tiles (16 columns)");
static_assert((kBlockM * kARowChunks) % kThreads == 0 && (kBlockK * kBRowChunks) % kThreads == 0,
              "every thread copies the same number of 16-byte chunks per stage");
static_assert(kThreads % kARowChunks == 0 && kThreads % kBRowChunks == 0,
              "a thread's chunks sit in one chunk column, kThreads / row-chunks rows apart");
static_assert((kThreads / kARowChunks) % SwizzleA::kPhasePeriodRows == 0 &&
                  (kThreads / kBRowChunks) % SwizzleB::kPhasePeriodRows == 0,
              "a thread's later chunks are its first plus a whole number of swizzle periods (precomputed offsets)");
static_assert(kMmaM % SwizzleA::kPhasePeriodRows == 0 && kMmaK % SwizzleB::kPhasePeriodRows == 0,
              "ldmatrix addresses of the next m16 tile / k16 step are the first plus a fixed offset");
static_assert(kSharedBytes <= 227 * 1024, "an sm_90 block may use at most 227 KB of shared memory");
static_assert(kThreads <= 1024, "a CUDA block has at most 1024 threads");

// ---- the slow loader (kVectorLoads = false) ---------------------------------------
//
// One 16-byte chunk of a shared tile, filled element by element: src[offset + e]
// for e < min(8, remaining) when the row is inside the matrix, 0 everywhere
// else. Plain 2-byte loads, so rows need no alignment at all; the chunk is
// stored whole into the same swizzled place a cp.async would have put it.
template <class Element>
__device__ __forceinline__ void store_chunk_checked(uint32_t shared_dst, const Element* src, bool row_in,
                                                    int64_t offset, int remaining) {
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(src);  // f16/bf16 bit patterns
  uint32_t words[4];
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    const uint32_t lo = (row_in && 2 * w < remaining) ? bits[offset + 2 * w] : 0u;
    const uint32_t hi = (row_in && 2 * w + 1 < remaining) ? bits[offset + 2 * w + 1] : 0u;
    words[w] = lo | (hi << 16);
  }
  gpu::st_shared_16(shared_dst, words);
}

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. C[M,N] = A[M,K] · B[K,N], all row-major, Element = __half or
// __nv_bfloat16 for A, B and C; fp32 accumulation; C rounded once at the store.
// 1-D grid of ceil(M/128) · ceil(N/256) blocks, 256 threads, kSharedBytes of
// dynamic shared memory. Block b owns the C tile grouped_tile(b) (bands of
// kGroupM tile rows); warp w owns the 64x64 piece (w / 4, w % 4):
//
//                     256 columns of C
//        +--------+--------+--------+--------+
//   128  | warp 0 | warp 1 | warp 2 | warp 3 |   each warp: 4 x 8 mma tiles of 16x8
//  rows  +--------+--------+--------+--------+   = 128 fp32 accumulators per lane
//        | warp 4 | warp 5 | warp 6 | warp 7 |
//        +--------+--------+--------+--------+
//
// Shared memory, a ring of kStages stages, each  [ A tile 128x64 | B tile 64x256 ],
// both row-major in 16-byte chunks, chunks XOR-swizzled (gpu::ChunkSwizzle).
//
// Edges. kVectorLoads (needs K % 8 == 0, N % 8 == 0, 16-byte aligned bases):
// a 16-byte chunk lies wholly inside or wholly outside A or B; chunks outside
// are zero-filled by cp.async with source size 0. Otherwise every element is
// loaded with its own bounds check and zeros outside. Either way the partial
// last k tile adds 0·0, and C is stored only inside [M, N].
template <class Element, bool kVectorLoads>
__global__ void __launch_bounds__(kThreads, 1)
    tensor_core_pipelined_kernel(int M, int N, int K, const Element* __restrict__ A, const Element* __restrict__ B,
                                 Element* __restrict__ C) {
  extern __shared__ __align__(128) unsigned char shared[];
  const uint32_t shared_base = gpu::shared_address(shared);

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const gpu::WarpTileOrigin origin =
      gpu::warp_tile_origin<kBlockM, kBlockN, kWarpM, kWarpN, kWarpsN, kGroupM>(M, N, warp);
  const int block_m0 = origin.block_m0, block_n0 = origin.block_n0, warp_m0 = origin.warp_m0, warp_n0 = origin.warp_n0;

  // ---- global -> shared: which chunks this thread copies ------------------------
  //
  // Chunk j of the thread is chunk number threadIdx.x + j·kThreads of the tile
  // in row-major order, so a warp copies 32 consecutive chunks (4 whole
  // 128-byte rows of A, or 512 bytes of one row of B): coalesced, and each
  // 128-byte line's 8 chunks land in 8 bank groups. Its row advances by
  // kThreads / row-chunks per j, a whole number of swizzle periods, so the
  // shared offset of chunk j is chunk 0's plus j rows' bytes.
  const int a_row = threadIdx.x / kARowChunks;  // + j · kARowStep
  const int a_chunk = threadIdx.x % kARowChunks;
  const int b_row = threadIdx.x / kBRowChunks;  // + j · kBRowStep
  const int b_chunk = threadIdx.x % kBRowChunks;
  constexpr int kARowStep = kThreads / kARowChunks;  // 32
  constexpr int kBRowStep = kThreads / kBRowChunks;  // 8
  const uint32_t a_store = SwizzleA::byte_offset(a_row, a_chunk);
  const uint32_t b_store = kATileBytes + SwizzleB::byte_offset(b_row, b_chunk);

  // Copies k tile `k_tile` (columns k_tile·kBlockK.. of A, rows .. of B) into stage `stage`.
  const auto load_tile = [&](int stage, int k_tile) {
    const uint32_t stage_base = shared_base + stage * kStageBytes;
    const int k0 = k_tile * kBlockK;
#pragma unroll
    for (int j = 0; j < kAChunksPerThread; ++j) {
      const int m = block_m0 + a_row + j * kARowStep;
      const int k = k0 + a_chunk * kChunkElems;
      const uint32_t dst = stage_base + a_store + j * kARowStep * kARowBytes;
      if constexpr (kVectorLoads) {
        const bool in = m < M && k < K;
        gpu::cp_async_16(dst, in ? A + int64_t(m) * K + k : A, in);
      } else {
        store_chunk_checked(dst, A, m < M, int64_t(m) * K + k, K - k);
      }
    }
#pragma unroll
    for (int j = 0; j < kBChunksPerThread; ++j) {
      const int k = k0 + b_row + j * kBRowStep;
      const int n = block_n0 + b_chunk * kChunkElems;
      const uint32_t dst = stage_base + b_store + j * kBRowStep * kBRowBytes;
      if constexpr (kVectorLoads) {
        const bool in = k < K && n < N;
        gpu::cp_async_16(dst, in ? B + int64_t(k) * N + n : B, in);
      } else {
        store_chunk_checked(dst, B, k < K, int64_t(k) * N + n, N - n);
      }
    }
  };

  // ---- shared -> registers: ldmatrix addresses ---------------------------------
  //
  // Lane l supplies row l % 16, chunk l / 16 of each 16x16 block it helps load
  // (gpu::ldmatrix_x4_row_address). For A that block is (m16 tile mi, k16 step
  // s): its swizzled offset depends on s but only by a constant on mi (16 rows
  // = whole swizzle periods), so keep one offset per k step. For B the block
  // is (k16 step s, n16 pair nj): one offset per nj, a constant step in s.
  const gpu::MatrixCoord lane_row = gpu::ldmatrix_x4_row_address(lane);
  uint32_t a_read[kKSteps];
#pragma unroll
  for (int s = 0; s < kKSteps; ++s)
    a_read[s] = SwizzleA::byte_offset(warp_m0 + lane_row.row, (s * kMmaK + lane_row.col) / kChunkElems);
  uint32_t b_read[kMmaTilesN / 2];
#pragma unroll
  for (int nj = 0; nj < kMmaTilesN / 2; ++nj)
    b_read[nj] = kATileBytes + SwizzleB::byte_offset(lane_row.row, (warp_n0 + nj * 16 + lane_row.col) / kChunkElems);

  uint32_t a_frag[2][kMmaTilesM][4];  // [buffer][m16 tile]  A fragments (gpu::mma_a_coord)
  uint32_t b_frag[2][kMmaTilesN][2];  // [buffer][n8 tile]   B fragments (gpu::mma_b_coord)

  // Loads the fragments of k16 step `step` of the stage at `stage_base` into buffer `buf`.
  const auto load_fragments = [&](int buf, uint32_t stage_base, int step) {
    gpu::load_a_fragments<kMmaTilesM, kARowBytes>(a_frag[buf], stage_base + a_read[step]);
#pragma unroll
    for (int nj = 0; nj < kMmaTilesN / 2; ++nj)  // B is [k][n] in shared memory: .trans
      gpu::load_b_fragment_pair<true>(b_frag[buf], nj, stage_base + b_read[nj] + step * kMmaK * kBRowBytes);
  };

  float acc[kMmaTilesM][kMmaTilesN][4] = {};  // D fragments (gpu::mma_c_coord)

  // ---- the pipeline (gpu/lib/mma_pipeline.cuh) ------------------------------------
  //
  // Tile kt lives in stage kt % kStages; copies run kStages-1 tiles ahead of
  // the mma, and the fragments of step s+1 are loaded while step s computes.
  gpu::mma_pipeline<kStages, kKSteps, kStageBytes, Element>(shared_base, gpu::ceil_div(K, kBlockK), load_tile,
                                                            load_fragments, a_frag, b_frag, acc);

  // ---- epilogue: fp32 -> Element, bounds-checked -------------------------------
  //
  // Lane holds rows g and g+8, columns 2t and 2t+1 of every 16x8 tile
  // (gpu::mma_c_coord). On the vector path N is even, so the pair is 4-byte
  // aligned and goes out as one 32-bit store; otherwise element by element.
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mi = 0; mi < kMmaTilesM; ++mi)
#pragma unroll
    for (int ni = 0; ni < kMmaTilesN; ++ni)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int m = block_m0 + warp_m0 + mi * kMmaM + g + 8 * half;
        const int n = block_n0 + warp_n0 + ni * kMmaN + 2 * t;
        if (m >= M) continue;
        const float v0 = acc[mi][ni][2 * half], v1 = acc[mi][ni][2 * half + 1];
        Element* out = C + int64_t(m) * N + n;
        if constexpr (kVectorLoads) {
          if (n < N) *reinterpret_cast<uint32_t*>(out) = gpu::pack_pair<Element>(v0, v1);  // n+1 < N too: N even
        } else {
          if (n < N) out[0] = gpu::from_float<Element>(v0);
          if (n + 1 < N) out[1] = gpu::from_float<Element>(v1);
        }
      }
}

// ---- launcher ------------------------------------------------------------------------

bool supports(const GemmProblem& p) {
  const int64_t blocks = int64_t(gpu::ceil_div(p.M, kBlockM)) * gpu::ceil_div(p.N, kBlockN);
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && blocks <= gpu::kMaxGridX;
}

template <class Element, bool kVectorLoads> void launch(const GemmProblem& p, const Args<GemmProblem>& args) {
  const auto kernel = tensor_core_pipelined_kernel<Element, kVectorLoads>;
  gpu::allow_dynamic_shared(kernel, kSharedBytes, "tensor_core_pipelined_kernel");  // > 48 KB must be asked for
  const int blocks = gpu::ceil_div(p.M, kBlockM) * gpu::ceil_div(p.N, kBlockN);
  kernel<<<blocks, kThreads, kSharedBytes>>>(p.M, p.N, p.K, static_cast<const Element*>(args.a),
                                             static_cast<const Element*>(args.b), static_cast<Element*>(args.c));
  gpu::check_launch("tensor_core_pipelined_kernel");
}

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  // 16-byte chunks of rows: rows of A (K elements) and of B (N elements) must
  // start on 16-byte boundaries. The harness's buffers are cudaMalloc'ed (256-byte aligned).
  const bool vector_loads =
      p.K % kChunkElems == 0 && p.N % kChunkElems == 0 && gpu::aligned_16(args.a) && gpu::aligned_16(args.b) && gpu::aligned_16(args.c);
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (vector_loads)
      launch<Element, true>(p, args);
    else
      launch<Element, false>(p, args);
  });
}

const Register<GemmProblem> reg{{
    .name = "03o_tensor_core_pipelined",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "128x256x64 tiles, 64x64 warp tiles, 3-stage cp.async pipeline, swizzled shared memory, "
            "double-buffered fragments",
}};

}  // namespace
}  // namespace convlab
