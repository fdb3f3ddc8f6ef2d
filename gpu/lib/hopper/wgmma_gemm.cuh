// gpu/lib/hopper/wgmma_gemm.cuh — the wgmma + TMA GEMM shared by lesson 03's Hopper
// rungs 03p, 03q and 03r. Each rung file picks a Schedule and says what that
// step adds; the machinery lives in gpu/lib/hopper/ (README there).
//
// Contract. C[M,N] = A[M,K] · B[K,N], all row-major, Element = __half or
// __nv_bfloat16 for A, B and C; fp32 accumulation; C rounded once at the
// store. Needs K % 8 == 0 and N % 8 == 0 (the rows of A and B are TMA
// strides, which must be multiples of 16 bytes) and 16-byte aligned bases;
// any M, N, K ≥ 1 otherwise. One CTA computes one 128 x 256 tile of C at a
// time:
//
//                         256 columns of C (4 panels of 64 in shared memory)
//          +--------------------------------------------+
//   rows   |  consumer warpgroup 0: 64 x 256, m64n256k16 |  128 fp32 accumulators per thread
//   0-63   |                                            |
//          +--------------------------------------------+
//   64-127 |  consumer warpgroup 1: 64 x 256            |
//          +--------------------------------------------+
//
// Shared memory, 1024-aligned, a ring of kStages slots, then the barriers:
//
//   [ A slot s: 128 x 64, Sw128Tile (one panel)  | B slot s: 64 x 256, Sw128Tile (four panels) ] x kStages
//   [ full[0..S) | empty[0..S) ]   (gpu/lib/hopper/mbarrier.cuh)
//
// Per k tile (64 deep) the producer issues 1 TMA copy for A (box 128 x 64) and
// 4 for B (boxes 64 x 64), all completing on full[s]; each consumer warpgroup
// issues 4 wgmma m64n256k16, A K-major (its 64 rows of the A slot), B
// MN-major (B is [k][n] with n contiguous), keeps one k tile of wgmma in
// flight, and releases the slot before last once those have retired.
//
// The plain loop all this implements is rung 09's:
//     for (m, n in the tile) { acc = 0; for (k) acc += A[m][k]·B[k][n]; C[m][n] = round(acc); }
//
// Edges. TMA writes zeros for every element outside A or B, so partial tiles
// at the bottom, the right and the end of K add 0·0; C is stored only inside
// [M, N]. N is even, so each thread's column pair (2t, 2t+1) is one aligned
// 4-byte store, inside or outside together.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"
#include "gpu/lib/hopper/wgmma_gemm_layout.hpp"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tile_scheduler.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"

namespace convlab::wgmma_gemm {

// How the CTA's warps share the work, and how many tiles a CTA takes.
enum class Schedule {
  inline_producer,   // 03p: 2 warpgroups both compute; thread 0 also issues the copies
  warp_specialized,  // 03q: + a producer warpgroup, setmaxnreg; one tile per CTA
  persistent,        // 03r: the same CTA, one per SM, looping over tiles
};
constexpr int threads_of(Schedule s) {
  return (s == Schedule::inline_producer ? kConsumers : 1 + kConsumers) * gpu::hopper::kWarpgroupThreads;
}

// ---- the producer: one thread -------------------------------------------------------

// Item kt of a tile (its k tile kt) into the slot st names: wait for the slot,
// announce its bytes, 1 + 4 copies (A's box, then B's four panels; B's panels as
// one copy of a 3-D map was a flag, never measured, since removed: lesson 03's NOTES.md).
__device__ __forceinline__ void produce(const CUtensorMap& a_map, const CUtensorMap& b_map, uint32_t tiles_base,
                                        const gpu::hopper::Pipeline<kStages>& pipe,
                                        const gpu::hopper::PipelineState<kStages>& st, int m0, int n0, int kt) {
  pipe.producer_acquire(st, kStageBytes);
  const uint32_t a_slot = tiles_base + uint32_t(st.stage) * kStageBytes;
  const uint32_t full = pipe.full(st.stage);
  const int k0 = kt * kBlockK;
  gpu::hopper::tma_load_2d(a_slot, &a_map, full, /*col0=*/k0, /*row0=*/m0);
#pragma unroll
  for (int p = 0; p < BTile::kPanels; ++p)  // B panel p: columns n0 + 64p ..
    gpu::hopper::tma_load_2d(b_box_address(a_slot, p), &b_map, full, n0 + p * BTile::kPanelCols, k0);
}

// ---- a consumer warpgroup -----------------------------------------------------------------

// acc = the warpgroup's 64 x 256 block of A·B over all k tiles, starting at
// the ring position st (advanced past the tile's k_tiles items on return).
//
// TUTORIAL: per item the warpgroup waits for full[s], issues its 4 wgmma and
// commits them as one group, then waits until at most ONE group is pending:
// the group just issued may still run, the previous item's has retired, so
// the previous slot is no longer read and is released to the producer. The
// plain loop: for (kt) { wait(kt); mma(kt); release(kt); } — with the
// release of kt moved one item later, so the tensor cores always have the
// next group queued behind the one they are executing.
template <class Element>
__device__ __forceinline__ void consume(float (&acc)[kAccRegs], uint32_t tiles_base,
                                        const gpu::hopper::Pipeline<kStages>& pipe,
                                        gpu::hopper::PipelineState<kStages>& st, int consumer, int k_tiles) {
#pragma unroll
  for (int i = 0; i < kAccRegs; ++i) acc[i] = 0.f;
  gpu::hopper::PipelineState<kStages> release = st;
  for (int kt = 0; kt < k_tiles; ++kt) {
    pipe.consumer_wait(st);
    const uint32_t slot = tiles_base + uint32_t(st.stage) * kStageBytes;
    gpu::wgmma_fence();  // acc was last written by ordinary code (zeroing) or by wgmma: order both
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks)  // k16 step ks: A columns / B rows 16ks .. 16ks+15 of the slot
      gpu::wgmma_m64n256k16_ss_mn_major_b<Element>(acc, a_descriptor(slot, consumer, ks), b_descriptor(slot, ks),
                                                   /*accumulate=*/true);
    gpu::wgmma_commit_group();
    gpu::wgmma_wait_group<1>();  // item kt−1's wgmma have retired
    if (kt > 0) {
      pipe.consumer_release(release);
      release.advance();
    }
    st.advance();
  }
  gpu::wgmma_wait_group<0>();
  gpu::fence_operands(acc);  // no use of acc may be hoisted above the wait
  pipe.consumer_release(release);  // the last item's slot
}

// The warpgroup's accumulators -> C (rows m0 + 64·consumer .., columns n0 ..),
// rounded once, bounds-checked. acc[4j + c] is row 16w + g + 8(c >> 1),
// column 8j + 2t + (c & 1) of the 64 x 256 block (gpu::wgmma_d_coord).
template <class Element>
__device__ __forceinline__ void store_tile(const float (&acc)[kAccRegs], Element* __restrict__ C, int M, int N,
                                           int m0, int n0, int consumer) {
  const int thread = gpu::hopper::thread_in_warpgroup(threadIdx.x);
  const gpu::MatrixCoord first = gpu::wgmma_d_coord(thread, 0);
  const int row0 = m0 + consumer * kWgmmaM + first.row;
  const int col0 = n0 + first.col;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h;
    if (row >= M) continue;
    Element* out = C + int64_t(row) * N;
#pragma unroll
    for (int j = 0; j < kBlockN / 8; ++j) {
      const int col = col0 + 8 * j;
      if (col < N)  // N even: col + 1 < N as well
        *reinterpret_cast<uint32_t*>(out + col) = gpu::pack_pair<Element>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
    }
  }
}

// ---- the kernel ------------------------------------------------------------------------
//
// Grid: every tile (03p, 03q) or one CTA per SM (03r); threads_of(kSchedule)
// threads; kSharedBytes of dynamic shared memory. The tile loop below runs
// once per CTA when the grid covers every tile.
template <class Element, Schedule kSchedule>
__global__ void __launch_bounds__(threads_of(kSchedule), 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map, int M,
                      int N, int K, Element* __restrict__ C) {
  extern __shared__ unsigned char shared[];
  // Dynamic shared memory is only 16-byte aligned for sure; the swizzled boxes need 1024.
  const uint32_t tiles_base =
      (gpu::shared_address(shared) + kSwizzleAtomBytes - 1) & ~uint32_t(kSwizzleAtomBytes - 1);
  const gpu::hopper::Pipeline<kStages> pipe{tiles_base + kStages * kStageBytes};
  const gpu::hopper::TileScheduler tiles{gpu::ceil_div(M, kBlockM), gpu::ceil_div(N, kBlockN), kGroupM};
  const int k_tiles = gpu::ceil_div(K, kBlockK);
  const int warpgroup = gpu::hopper::warpgroup_of(threadIdx.x);

  if (threadIdx.x == 0) {
    pipe.init(kConsumerWarps);
    gpu::hopper::tma_prefetch_descriptor(&a_map);
    gpu::hopper::tma_prefetch_descriptor(&b_map);
  }
  __syncthreads();  // the barriers are initialised before anyone waits on them

  if constexpr (kSchedule == Schedule::inline_producer) {
    // Both warpgroups compute; thread 0 keeps the ring kStages items ahead:
    // the first kStages items before the loop, then item kt−1+kStages as soon
    // as everyone has released item kt−1 (the slot it refills).
    const gpu::TileCoord tile = tiles.coord(blockIdx.x);
    const int m0 = tile.m * kBlockM, n0 = tile.n * kBlockN;
    gpu::hopper::PipelineState<kStages> produced;
    if (threadIdx.x == 0)
      for (int kt = 0; kt < min(kStages, k_tiles); ++kt, produced.advance())
        produce(a_map, b_map, tiles_base, pipe, produced, m0, n0, kt);
    __syncwarp();
    float acc[kAccRegs];
#pragma unroll
    for (int i = 0; i < kAccRegs; ++i) acc[i] = 0.f;
    gpu::hopper::PipelineState<kStages> st;
#pragma unroll 1
    for (int kt = 0; kt < k_tiles; ++kt) {
      pipe.consumer_wait(st);
      const uint32_t slot = tiles_base + uint32_t(st.stage) * kStageBytes;
      gpu::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks)
        gpu::wgmma_m64n256k16_ss_mn_major_b<Element>(acc, a_descriptor(slot, warpgroup, ks), b_descriptor(slot, ks),
                                                     /*accumulate=*/true);
      gpu::wgmma_commit_group();
      gpu::wgmma_wait_group<1>();
      if (kt > 0) {
        // Item kt−1 has retired here: release its slot, and refill it with item kt−1+kStages.
        const gpu::hopper::PipelineState<kStages> previous = gpu::hopper::PipelineState<kStages>::at(kt - 1);
        pipe.consumer_release(previous);
        if (threadIdx.x == 0 && kt - 1 + kStages < k_tiles) {
          produce(a_map, b_map, tiles_base, pipe, produced, m0, n0, kt - 1 + kStages);
          produced.advance();
        }
        __syncwarp();
      }
      st.advance();
    }
    gpu::wgmma_wait_group<0>();
    gpu::fence_operands(acc);
    store_tile(acc, C, M, N, m0, n0, warpgroup);
  } else {
    // TUTORIAL: warp specialisation. Warpgroup 0 gives its registers back and
    // one of its threads only issues copies, running up to kStages items ahead
    // of the consumers — across tile boundaries too, so in the persistent grid
    // the next tile's first k tiles load while the consumers store the last
    // tile. Warpgroups 1 and 2 take the registers and only compute and store.
    // Each role is one branch of this if/else, as setmaxnreg requires.
    if (warpgroup == 0) {
      gpu::hopper::warpgroup_registers_decrease<kProducerRegs>();
      if (threadIdx.x == 0) {
        gpu::hopper::PipelineState<kStages> st;
        for (int t = tiles.first(blockIdx.x); tiles.valid(t); t = tiles.next(t, gridDim.x)) {
          const gpu::TileCoord tile = tiles.coord(t);
          for (int kt = 0; kt < k_tiles; ++kt, st.advance())
            produce(a_map, b_map, tiles_base, pipe, st, tile.m * kBlockM, tile.n * kBlockN, kt);
        }
      }
    } else {
      gpu::hopper::warpgroup_registers_increase<kConsumerRegs>();
      const int consumer = warpgroup - 1;
      gpu::hopper::PipelineState<kStages> st;
      float acc[kAccRegs];
      for (int t = tiles.first(blockIdx.x); tiles.valid(t); t = tiles.next(t, gridDim.x)) {
        const gpu::TileCoord tile = tiles.coord(t);
        consume<Element>(acc, tiles_base, pipe, st, consumer, k_tiles);
        store_tile(acc, C, M, N, tile.m * kBlockM, tile.n * kBlockN, consumer);
      }
    }
  }
}

// ---- launcher ------------------------------------------------------------------------

inline bool supports(const GemmProblem& p) { return unsupported_reason(p).empty(); }

template <Schedule kSchedule>
void run(const GemmProblem& p, const Args<GemmProblem>& args, const char* rung) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported(std::string(rung) + " cannot run here: " + why);
  if (const std::string why = unsupported_reason(p); !why.empty())
    throw Unsupported(std::string(rung) + ": " + why);
  if (!gpu::aligned_16(args.a) || !gpu::aligned_16(args.b) || !gpu::aligned_16(args.c))
    throw Unsupported(std::string(rung) + " needs 16-byte aligned a, b and c (TMA base addresses)");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    // A [M][K]: boxes of 128 rows x 64 k; B [K][N]: boxes of 64 k x 64 columns.
    const CUtensorMap a_map = gpu::hopper::cached_tma_tile_2d(
        {.base = reinterpret_cast<uint64_t>(args.a), .rows = uint64_t(p.M), .cols = uint64_t(p.K),
         .row_stride_bytes = uint64_t(p.K) * kElemBytes, .elem_bytes = kElemBytes, .box_rows = kBlockM,
         .box_cols = kBlockK});
    const CUtensorMap b_map = gpu::hopper::cached_tma_tile_2d(
        {.base = reinterpret_cast<uint64_t>(args.b), .rows = uint64_t(p.K), .cols = uint64_t(p.N),
         .row_stride_bytes = uint64_t(p.N) * kElemBytes, .elem_bytes = kElemBytes, .box_rows = kBlockK,
         .box_cols = BTile::kPanelCols});
    const auto kernel = wgmma_gemm_kernel<Element, kSchedule>;
    gpu::allow_dynamic_shared(kernel, kSharedBytes, rung);  // > 48 KB must be asked for
    const int tiles = gpu::ceil_div(p.M, kBlockM) * gpu::ceil_div(p.N, kBlockN);
    const int grid = kSchedule == Schedule::persistent
                         ? std::min(tiles, gpu::resident_blocks(kernel, threads_of(kSchedule), kSharedBytes))
                         : tiles;
    kernel<<<grid, threads_of(kSchedule), kSharedBytes>>>(a_map, b_map, p.M, p.N, p.K, static_cast<Element*>(args.c));
    gpu::check_launch(rung);
  });
}

}  // namespace convlab::wgmma_gemm
