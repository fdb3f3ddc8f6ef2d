// gpu/conv2d/06_implicit_gemm_tensor_core.cu — lesson 04, GPU rung 6: implicit GEMM on the tensor cores.
//
// Idea over 05_implicit_gemm_f32: the same virtual im2col view, now feeding
// lesson 03's tensor-core GEMM (gpu/gemm/10_tensor_core_pipelined: mma.sync
// m16n8k16, fp16/bf16 in, fp32 accumulate; ldmatrix; cp.async ring; XOR
// swizzle; double-buffered fragments). Per group g, with M = N·P·Q,
// Kg = K/groups, RST = R·S·T:
//
//   A[m, j] = x[n, p·stride + r − pad, q·stride + s − pad, g·T + t]   j = (r·S + s)·T + t, 0 in the padding
//   B[j, k] = w[g·Kg + k, j]     KRSC w is [K, RST] row-major = B column-major
//   Y[m, k] = y[m, g·Kg + k]     NHWC y is [N·P·Q, K] row-major
//
// Three things change against rung 10:
//
//   1. A's 16-byte chunks come from x through the view. A chunk is 8
//      consecutive j of one row m. When T % 8 == 0 those 8 values are 8
//      consecutive channels of ONE tap (r, s) of ONE input pixel — 16
//      contiguous, 16-byte aligned bytes of x — so a single cp.async moves
//      them, and a chunk in the padding is a cp.async with source size 0,
//      which writes 16 zero bytes without reading anything: padding costs no
//      memory traffic and no branch around the copy.
//   2. B is w itself, [n][j] row-major: the "col" operand mma wants. It is
//      kept [n][j] in shared memory, the same shape as A's [m][j] tile, and
//      read with ldmatrix WITHOUT .trans (rung 10 needed .trans for a [k][n] B).
//   3. Tiles of 128×128×32 and 4 warps of 64×64: Kg = 128 in the target layer,
//      so one block column covers all output channels and x is read once.
//      128 threads and 64 KiB of shared memory per block, two blocks per SM.
//
// Cost of the view, amortised: each thread copies the same chunk column of 4
// rows m of every A tile. The rows' (n, p, q) decode (two divisions each) is
// done once per kernel; the chunk column's (r, s, t) is a cursor moved 32
// reduction indices per tile by additions; per tile a thread computes one tap
// offset (r·W + s)·C + t shared by its 4 rows, then per row a bounds test and
// an add. ~10 integer instructions per 16-byte copy, against the 4·8·2 = 64
// mma a warp issues per tile and k16 step pair: small, and in the copy
// threads' shadow of the tensor cores.
//
// Shapes the fast path cannot take (T % 8 != 0: a chunk would straddle two
// taps or be misaligned) run a predicated slow path: every element is decoded
// on its own and stored into the same swizzled chunk through registers.
//
// Prediction, N=128 56×56 C=K=128 3×3 fp16 on an H200: rung 10 reaches
// 414 TFLOP/s at 4096³ with 128×256 tiles; here 128×128 tiles (less reuse per
// byte of shared memory, 8 warps per SM as in rung 10), RST = 1152 = 36 tiles,
// 3136 blocks ≈ 12 waves over 264 resident blocks, output stores not
// coalesced through shared memory: ~250–330 TFLOP/s, 45–60% of cuDNN's
// 554 TFLOP/s in bench/results/2026-11-30-h200. NOT YET RUN ON A GPU.
//
// Supported: f16 and bf16, any shape, stride, pad and groups; fast path when
// T % 8 == 0 with 16-byte aligned x and w. Limits: N·P·Q ≤ 2³¹ − 1 − 128,
// N·H·W·C + (R + 2·pad + 34)·(W + 1)·C < 2³¹, K·RST < 2³¹, groups ≤ 65535.
// Run just this: build/convlab run conv2d/cuda/06_implicit_gemm_tensor_core --shape N=128,H=56,C=128,K=128,R=3,pad=1,dtype=f16
#include <climits>
#include <cstdint>

#include "core/ops/conv2d.hpp"
#include "gpu/common/check.cuh"
#include "gpu/common/conv_geometry.cuh"
#include "gpu/common/element.cuh"
#include "gpu/common/mma.cuh"
#include "gpu/conv2d/implicit_gemm_tensor_core.cuh"

namespace convlab {
namespace {

using gpu::ConvGeometry;

// ---- tunables ---------------------------------------------------------------------
constexpr int kBlockM = 128;  // output pixels (rows of Y) per block
constexpr int kBlockN = 128;  // output channels (columns of Y) per block
constexpr int kBlockK = 32;   // reduction indices per pipeline stage
constexpr int kWarpsM = 2;    // warps stacked along M
constexpr int kWarpsN = 2;    // warps side by side along N
constexpr int kStages = 4;    // shared-memory buffers in the cp.async ring
constexpr int kGroupM = 8;    // tile rows per rasterisation band (L2 reuse of w and x)
constexpr int kBlocksPerSM = 2;

// Fixed by the hardware.
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int kChunkElems = 8;  // 16-byte chunk = 8 f16/bf16 elements (cp.async and ldmatrix row unit)
constexpr int kElemBytes = 2;

// Derived.
constexpr int kThreads = 32 * kWarpsM * kWarpsN;        // 128
constexpr int kWarpM = kBlockM / kWarpsM;               // 64
constexpr int kWarpN = kBlockN / kWarpsN;               // 64
constexpr int kMmaTilesM = kWarpM / kMmaM;              // 4 m16 tiles per warp
constexpr int kMmaTilesN = kWarpN / kMmaN;              // 8 n8 tiles per warp
constexpr int kKSteps = kBlockK / kMmaK;                // 2 k16 steps per stage
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

static_assert(kBlockM % (kWarpsM * kMmaM) == 0 && kBlockN % (kWarpsN * kMmaN) == 0,
              "the warps must tile the block tile in whole mma tiles");
static_assert(kWarpN % 16 == 0, "one ldmatrix.x4 loads B for two n8 tiles (16 rows n of the [n][j] tile)");
static_assert(kBlockK % kMmaK == 0 && kKSteps % 2 == 0,
              "whole k16 steps per stage, an even number: the two fragment buffers alternate "
              "and step 0 of every stage must land in buffer 0");
static_assert(kStages >= 3,
              "tile k+1 is read while tile k+kStages-1 is written into the stage tile k-1 vacated; "
              "with 2 stages those would be the same buffer");
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
// Edges. A chunk in the padding, past RST, or in a row past M is zero-filled
// (cp.async with source size 0 on the fast path, explicit zeros on the slow
// one); so is a B chunk of a column past Kg or past RST. A partial last tile
// therefore adds 0·0. y is stored only for m < M and k < Kg.
template <class Element, bool kFastLoads>
__global__ void __launch_bounds__(kThreads, kBlocksPerSM)
    implicit_gemm_tensor_core(ConvGeometry cg, int M, const Element* __restrict__ x, const Element* __restrict__ w,
                              Element* __restrict__ y, bool pair_stores) {
  extern __shared__ __align__(128) unsigned char shared[];
  const uint32_t shared_base = gpu::shared_address(shared);

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int group = blockIdx.y;
  const int Kg = cg.K_per_group;
  const int depth = cg.R * cg.S * cg.T;  // RST
  const gpu::TileCoord tile =
      gpu::grouped_tile(blockIdx.x, gpu::ceil_div(M, kBlockM), gpu::ceil_div(Kg, kBlockN), kGroupM);
  const int block_m0 = tile.m * kBlockM;
  const int block_n0 = tile.n * kBlockN;
  const int warp_m0 = (warp / kWarpsN) * kWarpM;  // within the block tile
  const int warp_n0 = (warp % kWarpsN) * kWarpN;

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
      const int n = m / (cg.P * cg.Q), pq = m % (cg.P * cg.Q);
      ih0[i] = (pq / cg.Q) * cg.stride - cg.pad;
      iw0[i] = (pq % cg.Q) * cg.stride - cg.pad;
      row_offset[i] = ((n * cg.H + ih0[i]) * cg.W + iw0[i]) * cg.C + group * cg.T;
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

  // Copies the next k tile (tiles are copied in order 0, 1, 2, ..., once each)
  // into `stage`, then moves the cursor 32 reduction indices on.
  const auto load_tile = [&](int stage) {
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

  // Loads the fragments of k16 step `step` of the stage at `stage_base` into buffer `buf`.
  //
  // B, stored [n][j]: ldmatrix (no .trans) hands lane 4g + t elements (n = g,
  // j = 2t, 2t+1) of each 8×8 matrix — exactly mma_b_coord's b register for
  // that n8 tile and k half. The x4's matrices are (n 0-7, j 0-7), (n 8-15,
  // j 0-7), (n 0-7, j 8-15), (n 8-15, j 8-15), hence the order below
  // (checked on the host in tests/lesson04_implicit_gemm_test.cpp).
  const auto load_fragments = [&](int buf, uint32_t stage_base, int step) {
#pragma unroll
    for (int mi = 0; mi < kMmaTilesM; ++mi)
      gpu::ldmatrix_x4(a_frag[buf][mi], stage_base + a_read[step] + mi * kMmaM * kRowBytes);
#pragma unroll
    for (int nj = 0; nj < kMmaTilesN / 2; ++nj) {
      uint32_t r[4];
      gpu::ldmatrix_x4(r, stage_base + b_read[step] + nj * 16 * kRowBytes);
      b_frag[buf][2 * nj][0] = r[0];      // n 0-7 of the pair,  k 0-7
      b_frag[buf][2 * nj + 1][0] = r[1];  // n 8-15,             k 0-7
      b_frag[buf][2 * nj][1] = r[2];      // n 0-7,              k 8-15
      b_frag[buf][2 * nj + 1][1] = r[3];  // n 8-15,             k 8-15
    }
  };

  float acc[kMmaTilesM][kMmaTilesN][4] = {};  // D fragments (gpu::mma_c_coord)

  // ---- the pipeline: rung 10's, unchanged ---------------------------------------
  //
  //     prologue: start tiles 0 .. kStages-2 (one commit group each)
  //     for kt:   step 0:  start tile kt+kStages-1 into the stage tile kt-1 left
  //               steps:   ldmatrix step s+1 while the mma of step s run
  //               last step: wait until tile kt+1 has landed, barrier, then
  //                          ldmatrix its step 0 (while the mma of our last step run)
  //
  // One commit group per tile, even an empty one past the end, so "tile kt+1
  // has landed" is always "at most kStages-2 groups still pending"; the one
  // barrier per tile publishes tile kt+1 and certifies every warp is done
  // reading tile kt-1 (see rung 10 for the full argument).
  const int k_tiles = gpu::ceil_div(depth, kBlockK);
#pragma unroll
  for (int t = 0; t < kStages - 1; ++t) {
    if (t < k_tiles) load_tile(t);
    gpu::cp_async_commit();
  }
  gpu::cp_async_wait<kStages - 2>();
  __syncthreads();

  int read_stage = 0;             // stage holding tile kt
  int write_stage = kStages - 1;  // stage that receives tile kt + kStages - 1
  uint32_t read_base = shared_base;
  load_fragments(0, read_base, 0);

  for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
    for (int step = 0; step < kKSteps; ++step) {
      if (step == kKSteps - 1) {
        gpu::cp_async_wait<kStages - 2>();  // my copies of tile kt+1 are done
        __syncthreads();                    // everyone's are; everyone is past tile kt-1
        read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
        read_base = shared_base + read_stage * kStageBytes;
      }
      load_fragments((step + 1) % 2, read_base, (step + 1) % kKSteps);

      if (step == 0) {
        if (kt + kStages - 1 < k_tiles) load_tile(write_stage);  // the cursor is at tile kt + kStages - 1
        gpu::cp_async_commit();
        write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
      }

#pragma unroll
      for (int mi = 0; mi < kMmaTilesM; ++mi)
#pragma unroll
        for (int ni = 0; ni < kMmaTilesN; ++ni) {
          const int n = (mi % 2 == 0) ? ni : kMmaTilesN - 1 - ni;  // serpentine: consecutive mma share a fragment
          gpu::mma_m16n8k16<Element>(acc[mi][n], a_frag[step % 2][mi], b_frag[step % 2][n]);
        }
    }
  }
  gpu::cp_async_wait<0>();

  // ---- epilogue: fp32 -> Element, Y[m][k] -> y[m·K + g·Kg + k] -----------------------
  //
  // Lane holds rows g and g+8, columns 2t and 2t+1 of every 16×8 tile
  // (gpu::mma_c_coord). With Kg even (pair_stores), the pair never straddles
  // Kg and sits at an even element: one 32-bit store. Otherwise one by one.
  const int g = lane / 4, t = lane % 4;
  Element* y_group = y + int64_t(group) * Kg;
#pragma unroll
  for (int mi = 0; mi < kMmaTilesM; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = block_m0 + warp_m0 + mi * kMmaM + g + 8 * half;
      if (m >= M) continue;
      Element* y_row = y_group + int64_t(m) * cg.K;
#pragma unroll
      for (int ni = 0; ni < kMmaTilesN; ++ni) {
        const int k = block_n0 + warp_n0 + ni * kMmaN + 2 * t;
        const float v0 = acc[mi][ni][2 * half], v1 = acc[mi][ni][2 * half + 1];
        if (pair_stores) {
          if (k < Kg) *reinterpret_cast<uint32_t*>(y_row + k) = gpu::pack_pair<Element>(v0, v1);
        } else {
          if (k < Kg) y_row[k] = gpu::from_float<Element>(v0);
          if (k + 1 < Kg) y_row[k + 1] = gpu::from_float<Element>(v1);
        }
      }
    }
}

// ---- launcher ------------------------------------------------------------------------

int64_t gemm_rows(const ConvProblem& p) { return int64_t(p.N) * p.P() * p.Q(); }

bool supports(const ConvProblem& p) {
  const int64_t tiles = gpu::ceil_div<int64_t>(gemm_rows(p), kBlockM) * gpu::ceil_div(p.K_per_group(), kBlockN);
  // int offsets into x: a row's offset (tap (0, 0), possibly in the padding) lies within (pad + 1)·(W + 1)·C
  // of x, and the cursor's tap offset (r·W + s)·C + t stays below (R + 33)·(W + 1)·C (j runs up to RST + 31).
  const int64_t x_reach =
      int64_t(p.N) * p.H * p.W * p.C + int64_t(p.R + 2 * p.pad + kBlockK + 2) * (p.W + 1) * p.C;
  // M + kBlockM must fit an int: ceil_div(M, kBlockM) and the last tile's row indices.
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && gemm_rows(p) <= INT_MAX - kBlockM &&
         tiles <= gpu::kMaxGridX &&
         x_reach <= INT_MAX && int64_t(p.K) * p.R * p.S * p.T() <= INT_MAX && p.groups <= gpu::kMaxGridYZ;
}

template <class Element, bool kFastLoads> void launch(const ConvProblem& p, const Args<ConvProblem>& args) {
  const auto kernel = implicit_gemm_tensor_core<Element, kFastLoads>;
  // More than 48 KiB of dynamic shared memory must be asked for, once per kernel.
  static const bool opted_in = [&] {
    gpu::check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes),
                    "cudaFuncSetAttribute(implicit_gemm_tensor_core, MaxDynamicSharedMemorySize)");
    return true;
  }();
  (void)opted_in;
  const ConvGeometry cg = gpu::geometry_of(p);
  const int M = int(gemm_rows(p));
  const dim3 grid(unsigned(gpu::ceil_div(M, kBlockM) * gpu::ceil_div(cg.K_per_group, kBlockN)), unsigned(p.groups));
  auto* y = static_cast<Element*>(args.y);
  const bool pair_stores = cg.K_per_group % 2 == 0 && reinterpret_cast<uintptr_t>(y) % 4 == 0;
  kernel<<<grid, kThreads, kSharedBytes>>>(cg, M, static_cast<const Element*>(args.x),
                                           static_cast<const Element*>(args.w), y, pair_stores);
  gpu::check_launch("implicit_gemm_tensor_core");
}

bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void run(const ConvProblem& p, const Args<ConvProblem>& args) {
  // 16-byte chunks: 8 channels of one tap must be contiguous and aligned in x
  // (T % 8 == 0 makes C, every g·T and every t of a chunk start multiples of 8),
  // and rows of w (RST elements, a multiple of 8 then) must start aligned.
  const bool fast = p.T() % kChunkElems == 0 && aligned_16(args.x) && aligned_16(args.w);
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (fast)
      launch<Element, true>(p, args);
    else
      launch<Element, false>(p, args);
  });
}

const Register<ConvProblem> reg{{
    .name = "06_implicit_gemm_tensor_core",
    .device = Device::cuda,
    .lesson = 4,
    .supports = supports,
    .run = run,
    .idea = "gemm rung 10's mma.sync/ldmatrix/cp.async pipeline (128x128x32, 4 stages) on the im2col view: "
            "padding = zero-fill cp.async; f16/bf16",
}};

}  // namespace

// The same conv, callable from other variants (gpu/conv2d/implicit_gemm_tensor_core.cuh):
// lesson 06's 10_pointwise runs its fp16 1x1 convs here, where the view is the identity.
namespace gpu::tensor_core_conv {
bool supports(const ConvProblem& p) { return ::convlab::supports(p); }
void run(const ConvProblem& p, const Args<ConvProblem>& args) { ::convlab::run(p, args); }
}  // namespace gpu::tensor_core_conv

}  // namespace convlab
