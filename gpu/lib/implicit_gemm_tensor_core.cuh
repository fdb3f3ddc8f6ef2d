// gpu/lib/implicit_gemm_tensor_core.cuh — lesson 04's tensor-core implicit-GEMM conv kernel, shared.
//
// The kernel of gpu/conv2d/04b_implicit_gemm_tensor_core.cu (read that file's
// header for the idea), kept in a header so that lesson 07's fused layer
// (gpu/conv_pool/07b_fused.cu) runs the very same pipeline. It is
// parameterised by an output policy Out:
//   Out::pixel(cg, m)   which output pixel GEMM row m is (the row order)
//   out.store(cg, M, group, warp_m, warp_n, lane, acc)
//                       what to do with a warp's finished 64×64 accumulators
// StoreY (lesson 04) stores them to y; lesson 07's policy pools them first.
//
// At the end, gpu::tensor_core_conv::supports/run: the whole conv as a
// variant runs it (rung 04b registers it; 06c_pointwise hands it 1x1
// convolutions, for which the im2col view is the identity and the kernel is a
// plain GEMM). The main loop is gpu/lib/mma_pipeline.cuh, shared with gemm
// rung 03o.
#pragma once

#include <climits>
#include <cstdint>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/mma_pipeline.cuh"

namespace convlab::gpu::igemm_tc {

// ---- tunables ---------------------------------------------------------------------
constexpr int kBlockM = 128;  // output pixels (rows of Y) per block
constexpr int kBlockN = 128;  // output channels (columns of Y) per block
constexpr int kBlockK = 32;   // reduction indices per pipeline stage
constexpr int kWarpsM = 2;    // warps stacked along M
constexpr int kWarpsN = 2;    // warps side by side along N
constexpr int kStages = 4;    // shared-memory buffers in the cp.async ring
constexpr int kGroupM = 8;    // tile rows per rasterisation band (L2 reuse of w and x)
constexpr int kBlocksPerSM = 2;

// Fixed by the hardware: gpu::kMmaM/N/K (the m16n8k16 tile), gpu::kChunkElems and
// gpu::kElemBytes (the 16-byte chunk), from gpu/lib/mma_pipeline.cuh.
using gpu::kMmaM, gpu::kMmaN, gpu::kMmaK, gpu::kChunkElems, gpu::kElemBytes;

// Derived.
using Tiling = gpu::WarpTiling<kBlockM, kBlockN, kBlockK, kWarpsM, kWarpsN>;
constexpr int kThreads = Tiling::kThreads;                                      // 128
constexpr int kWarpM = Tiling::kWarpM, kWarpN = Tiling::kWarpN;                 // 64 x 64 per warp
constexpr int kMmaTilesM = Tiling::kMmaTilesM, kMmaTilesN = Tiling::kMmaTilesN; // 4 x 8 m16n8 tiles per warp
constexpr int kKSteps = Tiling::kKSteps;                                        // 2 k16 steps per stage
constexpr int kRowChunks = kBlockK / kChunkElems;       // 4 chunks per tile row, A [m][j] and B [n][j] alike
constexpr int kRowBytes = kBlockK * kElemBytes;         // 64
constexpr int kATileBytes = kBlockM * kRowBytes;        // 8 KiB
constexpr int kBTileBytes = kBlockN * kRowBytes;        // 8 KiB
constexpr int kStageBytes = kATileBytes + kBTileBytes;  // 16 KiB
constexpr int kSharedBytes = kStages * kStageBytes;     // 64 KiB
constexpr int kRowStep = kThreads / kRowChunks;         // 32: rows between a thread's chunks
constexpr int kAChunksPerThread = kBlockM / kRowStep;   // 4
constexpr int kBChunksPerThread = kBlockN / kRowStep;   // 4
constexpr int kOutside = -(1 << 29);                    // ih0 of a row past M: every tap tests "outside"

using Swizzle = gpu::ChunkSwizzle<kRowChunks>;  // both tiles: rows of 4 chunks (64 bytes)

static_assert(kWarpN % 16 == 0, "one ldmatrix.x4 loads B for two n8 tiles (16 rows n of the [n][j] tile)");
static_assert(kThreads % kRowChunks == 0 && kBlockM % kRowStep == 0 && kBlockN % kRowStep == 0,
              "every thread copies whole rows' worth of one chunk column: kRowStep rows apart");
static_assert(kRowStep % Swizzle::kPhasePeriodRows == 0,
              "a thread's later chunks are its first plus a whole number of swizzle periods (precomputed offsets)");
static_assert(kMmaM % Swizzle::kPhasePeriodRows == 0 && (2 * kMmaN) % Swizzle::kPhasePeriodRows == 0,
              "ldmatrix addresses of the next m16 tile / n16 pair are the first plus a fixed offset");
static_assert(kBlockK % kChunkElems == 0 && kChunkElems == 8, "a chunk is 8 reduction indices");
static_assert(kBlocksPerSM * kSharedBytes <= 227 * 1024, "two blocks' rings must fit an SM's shared memory");
static_assert(kBlocksPerSM * kThreads * 255 <= 64 * 1024,
              "an SM's 64 K registers hold two blocks of 128 threads even at the 255-register maximum");

// ---- the slow loader (kFastLoads = false) -------------------------------------------
//
// One 16-byte chunk of a shared tile, filled element by element: element e is
// value(j0 + e) or 0. Used for both A (through the view) and B (a row of w),
// for any T; stored whole into the same swizzled place a cp.async would fill.
template <class ValueAt>
__device__ __forceinline__ void store_chunk_checked(uint32_t shared_dst, ValueAt value_at) {
  uint32_t words[4];
#pragma unroll
  for (int word = 0; word < 4; ++word)
    words[word] = uint32_t(value_at(2 * word)) | (uint32_t(value_at(2 * word + 1)) << 16);
  gpu::st_shared_16(shared_dst, words);
}

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. x [N,H,W,C] NHWC, w [K,R,S,T] KRSC, y [N,P,Q,K] NHWC, all Element
// (__half or __nv_bfloat16); fp32 accumulation, y rounded once at the store.
// Grid (ceil(M/128)·ceil(Kg/128), groups), 128 threads, kSharedBytes of
// dynamic shared memory. Block (b, g) owns the Y tile grouped_tile(b) of
// group g; warp w the 64×64 piece (w / 2, w % 2):
//
//                 128 output channels (Kg)
//            +-------------+-------------+
//   128      |   warp 0    |   warp 1    |   each warp: 4 × 8 mma tiles of 16×8
//  output    +-------------+-------------+   = 128 fp32 accumulators per lane
//  pixels    |   warp 2    |   warp 3    |
//            +-------------+-------------+
//
// Shared memory: a ring of kStages stages, each [ A tile 128 m × 32 j | B tile
// 128 n × 32 j ], both rows of 4 16-byte chunks, XOR-swizzled (ChunkSwizzle<4>).
// Thread i copies chunk column i % 4 of rows i / 4 + {0, 32, 64, 96} of both.
//
// Out says which output pixel GEMM row m is (Out::pixel) and what becomes of
// the finished accumulators (out.store); StoreY below writes them to y.
//
// Edges. A chunk in the padding, past RST, or in a row past M is zero-filled
// (cp.async with source size 0 on the fast path, explicit zeros on the slow
// one); so is a B chunk of a column past Kg or past RST. A partial last tile
// therefore adds 0·0. y is stored only for m < M and k < Kg.
template <class Element, bool kFastLoads, class Out>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
    implicit_gemm_tensor_core(ConvGeometry cg, int M, const Element* __restrict__ x, const Element* __restrict__ w,
                              Out out) {
  extern __shared__ __align__(128) unsigned char shared[];
  const uint32_t shared_base = gpu::shared_address(shared);

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int group = blockIdx.y;
  const int Kg = cg.K_per_group;
  const int depth = cg.R * cg.S * cg.T;  // RST
  const gpu::WarpTileOrigin origin =
      gpu::warp_tile_origin<kBlockM, kBlockN, kWarpM, kWarpN, kWarpsN, kGroupM>(M, Kg, warp);
  const int block_m0 = origin.block_m0, block_n0 = origin.block_n0, warp_m0 = origin.warp_m0, warp_n0 = origin.warp_n0;

  // ---- global -> shared: the view, set up once ------------------------------------
  //
  // TUTORIAL: plain form of one A chunk (8 elements of row m from reduction index j0):
  //
  //   for e < 8:  j = j0 + e;  tap = j / T;  r = tap / S;  s = tap % S;  t = j % T
  //               n = m / (P·Q);  ih = (m / Q % P)·stride + r − pad;  iw = (m % Q)·stride + s − pad
  //               A[m, j] = inside ? x[((n·H + ih)·W + iw)·C + g·T + t] : 0
  //
  // Split into what depends on m only (decoded here, once per row) and what
  // depends on j only (the cursor, the same for all of the thread's rows):
  //
  //   x offset = row_offset[m] + tap_offset(j),
  //     row_offset[m] = ((n·H + ih0)·W + iw0)·C + g·T     ih0 = p·stride − pad, iw0 = q·stride − pad
  //     tap_offset(j) = (r·W + s)·C + t
  //   inside  = r < R  &&  0 ≤ ih0 + r < H  &&  0 ≤ iw0 + s < W
  const int copy_row = threadIdx.x / kRowChunks;  // + i · kRowStep
  const int copy_chunk = threadIdx.x % kRowChunks;
  int row_offset[kAChunksPerThread], ih0[kAChunksPerThread], iw0[kAChunksPerThread];
#pragma unroll
  for (int i = 0; i < kAChunksPerThread; ++i) {
    const int m = block_m0 + copy_row + i * kRowStep;
    ih0[i] = kOutside, iw0[i] = 0, row_offset[i] = 0;
    if (m < M) {
      const OutputPixel px = Out::pixel(cg, m);  // lesson 04: pixel_order; lesson 07: warp_window_order
      ih0[i] = px.p * cg.stride - cg.pad;
      iw0[i] = px.q * cg.stride - cg.pad;
      row_offset[i] = ((px.n * cg.H + ih0[i]) * cg.W + iw0[i]) * cg.C + group * cg.T;
    }
  }
  // The cursor: (r, s, t) of j = k_tile·32 + copy_chunk·8, for the next tile to be copied.
  int j_next = copy_chunk * kChunkElems;
  int tap_r, tap_s, tap_t;
  {
    const int tap = j_next / cg.T;
    tap_r = tap / cg.S, tap_s = tap % cg.S, tap_t = j_next % cg.T;
  }
  // B: rows n of w, block_n0 + copy_row + i·32; a bit per row that lies inside Kg.
  const Element* w_rows = w + (int64_t(group) * Kg + block_n0 + copy_row) * depth;
  unsigned w_row_in = 0;
#pragma unroll
  for (int i = 0; i < kBChunksPerThread; ++i)
    if (block_n0 + copy_row + i * kRowStep < Kg) w_row_in |= 1u << i;

  const uint32_t a_store = Swizzle::byte_offset(copy_row, copy_chunk);
  const uint32_t b_store = kATileBytes + Swizzle::byte_offset(copy_row, copy_chunk);
  const uint16_t* x_bits = reinterpret_cast<const uint16_t*>(x);  // f16/bf16 bit patterns (slow path)
  const uint16_t* w_bits = reinterpret_cast<const uint16_t*>(w_rows);

  // Copies the next k tile (tiles are copied in order 0, 1, 2, ..., once each,
  // so the cursor is at tile `k_tile`) into `stage`, then moves the cursor 32
  // reduction indices on.
  const auto load_tile = [&](int stage, int /*k_tile*/) {
    const uint32_t stage_base = shared_base + stage * kStageBytes;
    const int j = j_next;
    if constexpr (kFastLoads) {
      // T % 8 == 0: the chunk is channels tap_t .. tap_t+7 of one tap, contiguous and aligned.
      const int tap_offset = (tap_r * cg.W + tap_s) * cg.C + tap_t;
#pragma unroll
      for (int i = 0; i < kAChunksPerThread; ++i) {
        const bool in = tap_r < cg.R && unsigned(ih0[i] + tap_r) < unsigned(cg.H) &&
                        unsigned(iw0[i] + tap_s) < unsigned(cg.W);
        gpu::cp_async_16(stage_base + a_store + i * kRowStep * kRowBytes, in ? x + row_offset[i] + tap_offset : x,
                         in);  // in == false: 16 zero bytes, nothing read (the padding)
      }
#pragma unroll
      for (int i = 0; i < kBChunksPerThread; ++i) {
        const bool in = ((w_row_in >> i) & 1u) && j < depth;  // depth % 8 == 0: whole chunks
        gpu::cp_async_16(stage_base + b_store + i * kRowStep * kRowBytes,
                         in ? w_rows + int64_t(i) * kRowStep * depth + j : w, in);
      }
    } else {
#pragma unroll
      for (int i = 0; i < kAChunksPerThread; ++i)
        store_chunk_checked(stage_base + a_store + i * kRowStep * kRowBytes, [&](int e) -> uint16_t {
          const int je = j + e;
          if (je >= depth) return 0;
          const int tap = je / cg.T, r = tap / cg.S, s = tap % cg.S, t = je % cg.T;
          const bool in = unsigned(ih0[i] + r) < unsigned(cg.H) && unsigned(iw0[i] + s) < unsigned(cg.W);
          return in ? x_bits[row_offset[i] + (r * cg.W + s) * cg.C + t] : uint16_t(0);
        });
#pragma unroll
      for (int i = 0; i < kBChunksPerThread; ++i)
        store_chunk_checked(stage_base + b_store + i * kRowStep * kRowBytes, [&](int e) -> uint16_t {
          const bool in = ((w_row_in >> i) & 1u) && j + e < depth;
          return in ? w_bits[int64_t(i) * kRowStep * depth + j + e] : uint16_t(0);
        });
    }
    // Plain form: (tap_r, tap_s, tap_t) = decode(j + 32). For T ≥ 32 the loop runs at most once.
    j_next = j + kBlockK;
    tap_t += kBlockK;
    while (tap_t >= cg.T) {
      tap_t -= cg.T;
      if (++tap_s == cg.S) {
        tap_s = 0;
        ++tap_r;
      }
    }
  };

  // ---- shared -> registers: ldmatrix addresses ---------------------------------
  //
  // Lane l supplies row l % 16, chunk l / 16 of each 16×16 block it helps load
  // (gpu::ldmatrix_x4_row_address). A's block (m16 tile mi, k16 step s) and
  // B's block (n16 pair nj, k16 step s) have the same shape — 16 rows × 2
  // chunks of a [row][j] tile — so both are loaded without .trans. Their
  // offsets depend on s (a different chunk column, a different swizzle phase)
  // but only by a constant on mi / nj (16 rows = one whole swizzle period).
  const gpu::MatrixCoord lane_row = gpu::ldmatrix_x4_row_address(lane);
  uint32_t a_read[kKSteps], b_read[kKSteps];
#pragma unroll
  for (int s = 0; s < kKSteps; ++s) {
    const int chunk = (s * kMmaK + lane_row.col) / kChunkElems;
    a_read[s] = Swizzle::byte_offset(warp_m0 + lane_row.row, chunk);
    b_read[s] = kATileBytes + Swizzle::byte_offset(warp_n0 + lane_row.row, chunk);
  }

  uint32_t a_frag[2][kMmaTilesM][4];  // [buffer][m16 tile]  A fragments (gpu::mma_a_coord)
  uint32_t b_frag[2][kMmaTilesN][2];  // [buffer][n8 tile]   B fragments (gpu::mma_b_coord)

  // Loads the fragments of k16 step `step` of the stage at `stage_base` into
  // buffer `buf`. B, stored [n][j], needs no .trans: ldmatrix hands each lane
  // exactly mma_b_coord's registers (gpu::load_b_fragment_pair says in which order).
  const auto load_fragments = [&](int buf, uint32_t stage_base, int step) {
    gpu::load_a_fragments<kMmaTilesM, kRowBytes>(a_frag[buf], stage_base + a_read[step]);
#pragma unroll
    for (int nj = 0; nj < kMmaTilesN / 2; ++nj)  // B is [n][j] in shared memory: no .trans
      gpu::load_b_fragment_pair<false>(b_frag[buf], nj, stage_base + b_read[step] + nj * 16 * kRowBytes);
  };

  float acc[kMmaTilesM][kMmaTilesN][4] = {};  // D fragments (gpu::mma_c_coord)

  // ---- the pipeline: lesson 03's (gpu/lib/mma_pipeline.cuh) -----------------------
  //
  // The same schedule as gemm/gpu/03o: tile kt in stage kt % kStages, copies
  // kStages-1 tiles ahead, fragments of step s+1 loaded while step s computes.
  // Tiles are asked for in order, which is what the cursor above relies on.
  gpu::mma_pipeline<kStages, kKSteps, kStageBytes, Element>(shared_base, gpu::ceil_div(depth, kBlockK), load_tile,
                                                            load_fragments, a_frag, b_frag, acc);

  // ---- epilogue: the Out policy's (StoreY below: lesson 04's plain store) ------------
  out.store(cg, M, group, block_m0 + warp_m0, block_n0 + warp_n0, lane, acc);
}


// ---- the plain output: lesson 04's ------------------------------------------------------
//
// Rows in pixel order; fp32 -> Element, Y[m][k] -> y[m·K + g·Kg + k].
// Lane holds rows g and g+8, columns 2t and 2t+1 of every 16×8 tile
// (gpu::mma_c_coord). With Kg even (pair_stores), the pair never straddles
// Kg and sits at an even element: one 32-bit store. Otherwise one by one.
template <class Element> struct StoreY {
  Element* y;        // [N, P, Q, K] NHWC
  bool pair_stores;  // Kg even and y 4-byte aligned

  __device__ static OutputPixel pixel(const ConvGeometry& cg, int m) { return pixel_order(cg, m); }

  // acc: the warp's 64×64 piece at (warp_m, warp_n) of group `group`'s Y, in mma_c_coord fragments.
  __device__ void store(const ConvGeometry& cg, int M, int group, int warp_m, int warp_n, int lane,
                        const float (&acc)[kMmaTilesM][kMmaTilesN][4]) const {
    const int Kg = cg.K_per_group;
    const int g = lane / 4, t = lane % 4;
    Element* y_group = y + int64_t(group) * Kg;
#pragma unroll
    for (int mi = 0; mi < kMmaTilesM; ++mi)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int m = warp_m + mi * kMmaM + g + 8 * half;
        if (m >= M) continue;
        Element* y_row = y_group + int64_t(m) * cg.K;
#pragma unroll
        for (int ni = 0; ni < kMmaTilesN; ++ni) {
          const int k = warp_n + ni * kMmaN + 2 * t;
          const float v0 = acc[mi][ni][2 * half], v1 = acc[mi][ni][2 * half + 1];
          if (pair_stores) {
            if (k < Kg) *reinterpret_cast<uint32_t*>(y_row + k) = pack_pair<Element>(v0, v1);
          } else {
            if (k < Kg) y_row[k] = from_float<Element>(v0);
            if (k + 1 < Kg) y_row[k + 1] = from_float<Element>(v1);
          }
        }
      }
  }
};

// The shape limits of launch() (see 04b_implicit_gemm_tensor_core.cu's header),
// for M GEMM rows of problem p.
inline bool fits(int64_t M, const ConvProblem& p) {
  const int64_t tiles = ceil_div<int64_t>(M, kBlockM) * ceil_div(p.K_per_group(), kBlockN);
  // int offsets into x: a row's offset (tap (0, 0), possibly in the padding) lies within (pad + 1)·(W + 1)·C
  // of x, and the cursor's tap offset (r·W + s)·C + t stays below (R + 33)·(W + 1)·C (j runs up to RST + 31).
  const int64_t x_reach =
      int64_t(p.N) * p.H * p.W * p.C + int64_t(p.R + 2 * p.pad + kBlockK + 2) * (p.W + 1) * p.C;
  // M + kBlockM must fit an int: ceil_div(M, kBlockM) and the last tile's row indices.
  return M <= INT_MAX - kBlockM && tiles <= kMaxGridX && x_reach <= INT_MAX &&
         int64_t(p.K) * p.R * p.S * p.T() <= INT_MAX && p.groups <= kMaxGridYZ;
}

// Launches one instantiation for M GEMM rows (in Out's order) on the default stream.
template <class Element, bool kFastLoads, class Out>
void launch_kernel(const ConvGeometry& cg, int M, const Element* x, const Element* w, Out out) {
  const auto kernel = implicit_gemm_tensor_core<Element, kFastLoads, Out>;
  allow_dynamic_shared(kernel, kSharedBytes, "implicit_gemm_tensor_core");  // > 48 KiB must be asked for
  const dim3 grid(unsigned(ceil_div(M, kBlockM) * ceil_div(cg.K_per_group, kBlockN)), unsigned(cg.groups));
  kernel<<<grid, kThreads, kSharedBytes>>>(cg, M, x, w, out);
  check_launch("implicit_gemm_tensor_core");
}

// The fast loads need T % 8 == 0 and 16-byte aligned x and w: 8 channels of a
// tap are then one aligned 16-byte chunk (T % 8 == 0 makes C, every g·T and
// every chunk's t multiples of 8), and so are the chunks of w's rows (RST a
// multiple of 8 then).
template <class Element, class Out>
void launch(const ConvGeometry& cg, int M, const Element* x, const Element* w, Out out) {
  if (cg.T % kChunkElems == 0 && aligned_16(x) && aligned_16(w))
    launch_kernel<Element, true>(cg, M, x, w, out);
  else
    launch_kernel<Element, false>(cg, M, x, w, out);
}

}  // namespace convlab::gpu::igemm_tc

namespace convlab::gpu::tensor_core_conv {

// The whole tensor-core conv as a variant runs it: rows in pixel order, the
// plain store. conv2d/gpu/04b_implicit_gemm_tensor_core registers exactly
// this; 06c_pointwise calls it for its fp16 1x1 convs (the view is then the
// identity and the kernel a plain GEMM).

// f16 or bf16, and the size limits of launch() (fits above).
inline bool supports(const ConvProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) &&
         igemm_tc::fits(int64_t(p.N) * p.P() * p.Q(), p);
}

// y = conv2d(x, w) for args.x [N,H,W,C] NHWC, args.w [K,R,S,C/groups] KRSC,
// args.y [N,P,Q,K] NHWC; asynchronous on the default stream, as every
// variant's run(). Caller: supports(p).
inline void run(const ConvProblem& p, const Args<ConvProblem>& args) {
  visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    auto* y = static_cast<Element*>(args.y);
    const bool pair_stores = p.K_per_group() % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
    igemm_tc::launch(geometry_of(p), int(int64_t(p.N) * p.P() * p.Q()), static_cast<const Element*>(args.x),
                     static_cast<const Element*>(args.w), igemm_tc::StoreY<Element>{y, pair_stores});
  });
}

}  // namespace convlab::gpu::tensor_core_conv

