// gpu/conv2d/06b_grouped.cu — lesson 06, GPU rung 06b: grouped convolution, one group per tensor-core tile.
//
// Idea over 06a_depthwise: with a group width T = 8 (ConvFirst) or 32
// (ResNeXt) each output does T·R·S = 72 or 288 multiply-adds — 16× or 64×
// a depthwise conv's — and the intensity (Eq. 24 with K = C: T·R·S/2 = 36 flop/B at
// fp16 for T = 8) is below the H200's ridge (~175) but far above
// depthwise's 4.5: both the bytes and the FMAs now matter. fp32 FMA on the
// CUDA cores tops out near 50 TFLOP/s; the tensor cores do not, and one
// group is exactly the shape of an mma.sync.m16n8k16 with K/groups = 8:
//
//   per group g, a GEMM   Y_g[pixels, Kg] = A_g[pixels, R·S·T] · W_gᵀ
//   A_g[m, j] = x[n, p·stride + r − pad, q·stride + s − pad, g·T + t]     j = (r·S + s)·T + t
//   one mma = 16 output pixels × 8 output channels × 16 reduction indices
//           = (T = 8)  2 taps × 8 channels       (T ≥ 16)  16 channels of one tap
//
// A is never built. With T % 8 == 0 the reduction indices j .. j+7 (j a
// multiple of 8) are 8 consecutive channels of ONE tap of ONE input pixel:
// 16 contiguous, aligned bytes of NHWC x, which is exactly one row of an
// ldmatrix 8x8 matrix. So a block stages its tile of x in shared memory as it
// is (pixels × channels, no im2col), and each lane hands ldmatrix.x4 the
// address of the row it supplies: its output pixel's window corner, moved by
// the tap. One ldmatrix.x4 loads an mma's whole A fragment. B = W_gᵀ is w's
// own rows (KRSC: [Kg][R·S·T]), staged once per block and read with
// ldmatrix.x2, no .trans; C's pairs are adjacent output channels, one half2
// store. The index arithmetic lives in gpu/lib/grouped_indexing.cuh and
// is checked on the host by tests/lesson06_grouped_test.cpp.
//
//   plain loops:                              one block (8 warps):
//     for n, p, q, k (g = k / Kg):              cp.async x[n, 8 output rows + halo, ≤ 32 columns + halo,
//       acc = Σ_{r,s,t} x[.., g·T + t]                      64 channels] and w[the slab's outputs, R·S·T]
//                     · w[k, r, s, t]             into shared memory, zeros in the padding; one barrier
//       y[n, p, q, k] = acc                       each warp, for its run of (column, 16-pixel m-tile) tasks:
//                                                   for each k-step of 16 reduction indices:
//                                                     a[4] ← ldmatrix.x4 (16 pixels × 16 indices)
//                                                     per n8 tile: b[2] (ldmatrix.x2 or registers), mma.sync
//                                                   round to fp16, half2 stores
//
// Two k loops (the kernel's comments show both). Resident, for any filter of
// R·S = 9 taps (3x3, but also 1x9 or 9x1; the taps' layout is still read
// from the shape at run time) and only T = 8 or 16 (T ≤ 16: at T = 32 the
// 18 k-steps would not fit kMaxResidentSteps): the k loop is compiled in (5
// or 9 k-steps), every lane's tap offsets are computed once per block, and a
// warp holds one n8 tile's whole B (10 or 18 registers) while it sweeps
// m-tiles: per k-step one ldmatrix, one add and one mma. Streamed, for everything else: a cursor
// walks the tap offsets by additions, and per k-step one A fragment feeds all
// Kg/8 n-tiles, each with its own ldmatrix.x2 of B.
//
// Tile: kTileP = 8 output rows × up to kTileQ = 32 output columns (a 28-wide
// layer: 224 pixels = 14 m-tiles, no waste), a slab of 64 input channels (8
// groups of 8, 2 of 32) and their outputs; fewer rows (4, 2, 1) where a block
// of 8 would leave no room for a second one on its SM (stride 2, large
// filters). Staged pixels are 64·2 + 16 = 144 bytes apart, an odd number (9)
// of 16-byte chunks, so the 8 rows of one ldmatrix phase (8 consecutive
// output pixels) fall in 8 different bank groups at stride 1 (2-way at
// stride 2); staged filter rows are padded the same way. Shared memory for
// the T = 8 layer: 10 × 30 pixels × 144 B + 64 filter rows × 176 B = 53 KiB:
// four blocks of 256 threads per SM.
//
// Floor, N=128 28×28 C=K=256 T=8 3x3 s1 fp16 on an H200: 3.70 GFLOP, 102.8
// MB compulsory (intensity 36). Memory floor at 4.22 TB/s: 24.4 µs; the
// tensor-core floor is ~6 µs (mma.sync at ~600 TFLOP/s), and the CUDA-core
// fp32 floor ~74 µs — why FMA cannot reach cuDNN's 32 TFLOP/s (116 µs) with
// room to spare and mma can.
//
//   T = 8  (groups=32)   10 0.0588 ms  62.9 TFLOP/s   cuDNN 0.1175 ms  31.5 TFLOP/s   10/cuDNN 2.00×
//   T = 32 (groups=8)    10 0.1345 ms   110 TFLOP/s   cuDNN 0.0886 ms   167 TFLOP/s   0.66×
//
// fp32, and fp16 shapes the mma path cannot take (T not in {8, 16, 32, 64},
// K/groups not a multiple of 8 up to 32, unaligned tensors, a tile and
// filter slab over 227 KiB of shared memory), run an FMA
// kernel on the CUDA cores: one thread per (group, output pixel) with the
// group's K/groups ≤ 32 accumulators in registers, weights read as warp-wide
// broadcasts (wider groups: one thread per output).
// Supported: f32 and f16, groups > 1 and not depthwise (T = Kg = 1 is 06a_depthwise's);
// any R·S ≤ 64 taps whose tile and filter slab fit in shared memory (mma
// path; the other paths have no limit), stride, pad.
// Run just this: build/convlab run conv2d/gpu/06b_grouped --shape N=128,H=28,C=256,K=256,R=3,pad=1,groups=32,dtype=f16
#include <climits>
#include <cstdint>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/grouped_indexing.cuh"  // the view's index arithmetic (checked on the host)

namespace convlab {
namespace {

using gpu::ConvGeometry;
using gpu::grouped::kMmaK;
using gpu::grouped::ReductionCursor;
using gpu::grouped::RowMajorCursor;
using gpu::grouped::TapLayout;

// ---- tunables --------------------------------------------------------------------
constexpr int kThreads = 256;                  // 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kTileP = 8;                      // most output rows per block tile (halved, see tile_shape)
constexpr int kTileQ = 32;                     // most output columns per block tile
constexpr int kSlabChannels = 64;              // input channels per block (whole groups)
constexpr int kPixelBytes = kSlabChannels * 2 + 16;  // shared-memory stride of one staged pixel
constexpr int kMmaM = 16, kMmaN = 8;           // output pixels × output channels of one mma
constexpr int kMaxNTiles = 4;                  // K/groups ≤ 32: accumulators kMaxNTiles × 4 floats
constexpr int kResidentTaps = 9;               // R·S compiled into the resident path: any R·S = 9 (3x3, 1x9, 9x1)
constexpr int kMaxResidentSteps = 9;           // resident B: ≤ 9 k-steps × 2 registers per lane
constexpr int kMaxTaps = 64;                   // R·S of the mma path (shared-memory sizes stay small ints)
constexpr int kMaxShared = 227 * 1024;         // sm_90's opt-in limit per block: filter slab + staged tile
constexpr int kTwoBlocksShared = 113 * 1024;   // the most that two blocks per SM can each have (228 KiB, 1 reserved)
constexpr int kMaxFmaKg = 32;                  // FMA path: accumulators per thread (one group's outputs)
constexpr int kChunksPerPixel = kSlabChannels / 8;      // 16-byte chunks of a staged pixel
constexpr int kPixelsPerPass = kThreads / kChunksPerPixel;  // staged pixels the block's threads copy at once
static_assert(kPixelBytes % 16 == 0, "staged pixels start 16-byte aligned (ldmatrix rows, cp.async)");
static_assert((kPixelBytes / 16) % 2 == 1, "odd number of 16-byte chunks: 8 consecutive pixels, 8 bank groups");
static_assert(kThreads % kChunksPerPixel == 0, "a thread stages the same chunk of every pixel it visits");
static_assert((kTileP * kTileQ) % kMmaM == 0, "a full tile is whole m16 tiles");
static_assert(kSlabChannels % 8 == 0, "the slab is whole 16-byte chunks");

// A block's shared memory, [filter slab][staged x tile]:
//   filter slab  [filter_rows][filter_row_bytes]  w rows of the slab's output channels, the
//                reduction padded with zeros to whole k-steps, plus 16 bytes so that a row is an
//                odd number of 16-byte chunks (8 rows of one ldmatrix phase, 8 bank groups)
//   x tile       [rows_in][cols_in] pixels, kPixelBytes each (the slab's 64 channels + 16 bytes)
struct TileShape {
  int tile_p;            // output rows per tile: kTileP, or fewer (tile_shape)
  int tile_q;            // output columns per tile: min(Q, kTileQ)
  int rows_in;           // staged input rows:    (tile_p − 1)·stride + R
  int cols_in;           // staged input columns: (tile_q − 1)·stride + S
  int k_steps;           // ceil(R·S·T / 16)
  int filter_rows;       // output channels of a full slab: (kSlabChannels / T)·K/groups
  int filter_row_bytes;  // k_steps·32 + 16
  RowMajorCursor m_step;       // 16 pixels (one m-tile) in tile_q-wide rows: at(16, tile_q)
  RowMajorCursor filter_pass;  // kThreads staged filter chunks in 2·k_steps-chunk rows
  __host__ __device__ int filter_bytes() const { return filter_rows * filter_row_bytes; }
  std::size_t shared_bytes() const { return filter_bytes() + std::size_t(rows_in) * cols_in * kPixelBytes; }
};

TileShape tile_shape_with_rows(const ConvProblem& p, int tile_p) {
  const int tile_q = p.Q() < kTileQ ? p.Q() : kTileQ;
  const int k_steps = gpu::ceil_div(p.R * p.S * p.T(), kMmaK);
  return {tile_p,
          tile_q,
          (tile_p - 1) * p.stride + p.R,
          (tile_q - 1) * p.stride + p.S,
          k_steps,
          kSlabChannels / p.T() * p.K_per_group(),
          k_steps * kMmaK * 2 + 16,
          RowMajorCursor::at(kMmaM, tile_q),
          RowMajorCursor::at(kThreads, 2 * k_steps)};
}

// kTileP rows, halved (down to one) while two blocks would not fit an SM:
// at stride 2 or with a large filter a block of 8 rows could be the only one
// on its SM, with nothing to run while it stages.
TileShape tile_shape(const ConvProblem& p) {
  TileShape ts = tile_shape_with_rows(p, kTileP);
  while (ts.tile_p > 1 && ts.shared_bytes() > kTwoBlocksShared) ts = tile_shape_with_rows(p, ts.tile_p / 2);
  return ts;
}

bool mma_eligible(const ConvProblem& p) {
  const int T = p.T(), Kg = p.K_per_group();
  if (p.dtype != DType::f16 || !(T == 8 || T == 16 || T == 32 || T == 64) || Kg % 8 != 0 || Kg > kMmaN * kMaxNTiles ||
      p.R * p.S > kMaxTaps)
    return false;
  const TileShape ts = tile_shape(p);
  return ts.shared_bytes() <= kMaxShared &&
         int64_t(kTileP) * p.Q() * p.K <= INT_MAX &&  // a tile's y byte offsets fit a uint32_t
         int64_t(p.N) * gpu::ceil_div(p.P(), ts.tile_p) * gpu::ceil_div(p.Q(), kTileQ) <= gpu::kMaxGridX &&
         gpu::ceil_div(p.C, kSlabChannels) <= gpu::kMaxGridYZ;
}

// A of a k-step whose upper 8 reduction indices lie past R·S·T (T = 8 and R·S
// odd: 72 = 4·16 + 8 for a 3x3): ldmatrix.x2 loads a0, a1 (k 0–7, rows 0–7
// and 8–15, from the addresses of lanes 0–15) and a2 = a3 = 0 stand for the
// missing half. Zeros in registers, not zeros read from somewhere: whatever
// lies past the tile could be Inf or NaN, and NaN·0 is NaN.
//
// Every lane still computes the address it would hand ldmatrix.x4. For lanes
// 16–31 that is reduction index R·S·T, i.e. tap R·S = (filter row R, column
// 0): one row below the pixel's window. For a pixel in the tile's last output
// row that row is past the staged tile, and since the x tile is the last part
// of the block's dynamic shared memory, past its end too. That is safe:
// ldmatrix .x2 reads only the addresses of lanes 0–15 (two 8x8 matrices, 8
// row addresses each); lanes 16–31's are computed and never dereferenced.
__device__ __forceinline__ void load_a_lower_half(uint32_t (&a)[4], uint32_t row_address) {
  uint32_t lower[2];
  gpu::ldmatrix_x2(lower, row_address);
  a[0] = lower[0];
  a[1] = lower[1];
  a[2] = a[3] = 0u;
}

// Kernel contract (mma path):
//   x [N, H, W, C], w [K, R, S, T], y [N, P, Q, K], fp16, 16-byte aligned,
//   T ∈ {8, 16, 32, 64} (so C % 8 == 0), Kg = K/groups ∈ {8, 16, 24, 32}.
//   kTaps = R·S compiled in (kResidentTaps, resident path), or 0: R·S from g (streamed path).
//   blockIdx.x = (n, tile row, tile column) of tile_p × tile_q output pixels;
//   blockIdx.y = slab of kSlabChannels input channels = kSlabChannels/T groups
//   (fewer in the last slab when C is not a multiple) and their outputs.
//   Dynamic shared memory: ts.shared_bytes(), laid out as TileShape says.
//   Edge duties: staged pixels outside the image and channels past C are
//   zeros (cp.async zero-fill), and so are the filter columns past R·S·T;
//   m-tile rows past the tile or the image compute on staged pixel 0 and are
//   not stored; reduction indices past R·S·T are zero A registers
//   (load_a_lower_half), whose lanes 16–31 compute addresses one filter row
//   below the window — past the staged tile, and for the tile's last output
//   row even past the dynamic shared memory — which ldmatrix .x2 never reads
//   (it uses only lanes 0–15's addresses).
template <int kT, int kTaps>
__global__ void __launch_bounds__(kThreads)
    grouped_mma(ConvGeometry g, TileShape ts, int tiles_p, int tiles_q, const __half* __restrict__ x,
                const __half* __restrict__ w, __half* __restrict__ y) {
  constexpr bool kResident = kTaps > 0;
  constexpr int kResidentSteps = kResident ? gpu::ceil_div(kTaps * kT, kMmaK) : 1;  // k-steps, resident path
  constexpr int kResidentFullSteps = kTaps * kT / kMmaK;                         // ... with both halves inside
  static_assert(kResidentSteps <= kMaxResidentSteps, "resident B: 2 registers per k-step");
  constexpr int kTaskNTiles = kResident ? 1 : kMaxNTiles;  // n8 tiles one task accumulates

  extern __shared__ __align__(16) unsigned char shared[];  // [filter slab][x tile], see TileShape
  const uint32_t filter_tile = gpu::shared_address(shared);
  const uint32_t x_tile = filter_tile + ts.filter_bytes();

  const int tile_index = blockIdx.x;
  const int tq = tile_index % tiles_q, tp = (tile_index / tiles_q) % tiles_p, n = tile_index / (tiles_q * tiles_p);
  const int p0 = tp * ts.tile_p, q0 = tq * ts.tile_q;
  const int c_slab = blockIdx.y * kSlabChannels;
  const int slab_channels = min(kSlabChannels, g.C - c_slab);  // a multiple of kT
  const int slab_groups = slab_channels / kT;
  const int Kg = g.K_per_group, n_tiles = Kg / kMmaN;
  const int depth = g.R * g.S * kT;  // reduction indices R·S·T

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  // ---- stage x and the slab's filters: 16-byte cp.async, every copy in flight at once ----
  //
  // No registers hold the data on the way and no thread waits for a load
  // before it issues the next, so all of a thread's copies overlap (a loop of
  // loads into registers needs them batched by hand). A copy of 0 source
  // bytes reads nothing and writes 16 zero bytes: the padding.
  {
    // x: thread i copies chunk i % 8 (8 channels) of staged column i / 8
    // (and i / 8 + 32, ... for tiles wider than 32 pixels), every row of it.
    const int chunk = threadIdx.x % kChunksPerPixel;
    const int ih0 = p0 * g.stride - g.pad, iw0 = q0 * g.stride - g.pad;
    const int64_t x_row_step = int64_t(g.W) * g.C;  // one input row down
    for (int col = threadIdx.x / kChunksPerPixel; col < ts.cols_in; col += kPixelsPerPass) {
      const int iw = iw0 + col;
      const bool col_in = chunk * 8 < slab_channels && unsigned(iw) < unsigned(g.W);  // else zeros
      int64_t offset = ((int64_t(n) * g.H + ih0) * g.W + iw) * g.C + c_slab + chunk * 8;  // x at (ih0 + row, iw)
      uint32_t dst = x_tile + col * kPixelBytes + chunk * 16;
      for (int row = 0; row < ts.rows_in; ++row, offset += x_row_step, dst += ts.cols_in * kPixelBytes) {
        const bool in = col_in && unsigned(ih0 + row) < unsigned(g.H);
        gpu::cp_async_16(dst, in ? x + offset : x, in);
      }
    }

    // w: the slab's output channels are consecutive rows of w (KRSC), each
    // R·S·T = depth / 8 chunks long, staged as 2·k_steps chunks (zeros past
    // the end). Thread i copies chunks i, i + 256, ... of the staged rows.
    const int filter_rows = slab_groups * Kg, row_chunks = 2 * ts.k_steps, depth_chunks = depth / 8;
    const __half* w_slab = w + int64_t(blockIdx.y) * (kSlabChannels / kT) * Kg * depth;  // the slab's first row
    for (RowMajorCursor c = RowMajorCursor::at(threadIdx.x, row_chunks); c.row < filter_rows;
         c.advance(ts.filter_pass, row_chunks)) {
      const bool in = c.col < depth_chunks;
      gpu::cp_async_16(filter_tile + c.row * ts.filter_row_bytes + c.col * 16,
                       in ? w_slab + c.row * depth + c.col * 8 : w, in);
    }
  }
  gpu::cp_async_commit();
  gpu::cp_async_wait<0>();
  __syncthreads();  // the only barrier: from here on warps read shared memory only

  const int gi = lane / 4, ti = lane % 4;  // mma "group" and "thread in group"
  const TapLayout layout{g.S, ts.cols_in, kPixelBytes};

  // ---- which bytes this lane hands ldmatrix ------------------------------------------
  //
  // A (ldmatrix.x4, gpu::ldmatrix_x4_row_address): lane l supplies m-tile
  // row a_row.row = l % 16 at reduction indices 16·ks + a_row.col .. +7
  // (a_row.col = 0 or 8): 8 channels of one tap of that row's input window,
  // at byte offset reduction_offset(16·ks + a_row.col) from the window's
  // corner pixel. The cursor walks those offsets by additions.
  //
  // B (ldmatrix.x2, gpu::grouped::ldmatrix_x2_b_row_address): lane l supplies
  // filter row n = l % 8 of the n8 tile at reduction index 16·ks + 8·(l / 8):
  // the staged filter is B = wᵀ stored [n][j], the mma's "col" operand as it is.
  const gpu::MatrixCoord a_row = gpu::ldmatrix_x4_row_address(lane);
  const gpu::MatrixCoord b_row = gpu::grouped::ldmatrix_x2_b_row_address(lane);
  const ReductionCursor<kT> a_start = ReductionCursor<kT>::at(a_row.col, layout);
  uint32_t a_shift[kResidentSteps];  // resident path: every k-step's offset, walked once per block
  if constexpr (kResident) {
    ReductionCursor<kT> a_at = a_start;
#pragma unroll
    for (int ks = 0; ks < kResidentSteps; ++ks, a_at.advance_k_step(layout)) a_shift[ks] = a_at.offset;
  }

  // ---- the warps' tasks ----------------------------------------------------------------
  //
  // A task is one m-tile (16 output pixels of the tile, numbered row by row)
  // of one "column": on the resident path one n8 tile of one group, on the
  // streamed path all Kg/8 n8 tiles of one group. Tasks are numbered column
  // by column and each warp takes a contiguous run of them, so it sweeps the
  // m-tiles of one column (rarely two) with the same B:
  //
  //   resident (R·S = 9, T = 8 or 16):           streamed (any other filter):
  //     b[ks] ← ldmatrix.x2, ks < k_steps            for each m-tile:
  //     for each m-tile:                               for ks < k_steps:
  //       for ks < k_steps (unrolled):                   a ← ldmatrix.x4 at the cursor
  //         a ← ldmatrix.x4 at a_shift[ks]               for nt < Kg/8: b ← ldmatrix.x2; mma
  //         mma(acc, a, b[ks])                         store
  //       store
  //
  // Resident B costs 2·k_steps registers (10 for T = 8): a whole filter
  // column, so the inner loop is one ldmatrix and one mma per k-step. Past
  // 9 k-steps (T ≥ 32) B is streamed, and A is shared by the group's n-tiles.
  const int tile_rows = min(ts.tile_p, g.P - p0), tile_cols = min(ts.tile_q, g.Q - q0);
  const int m_tiles = gpu::ceil_div(tile_rows * ts.tile_q, kMmaM);
  const int columns = kResident ? slab_groups * n_tiles : slab_groups;
  const int tasks = columns * m_tiles;
  const int tasks_per_warp = gpu::ceil_div(tasks, kWarps);
  const int warp_end = min(tasks, (warp + 1) * tasks_per_warp);
  constexpr uint32_t kNotStored = ~0u;  // y byte offset of an A row past the tile or the image
  __half* y_tile = y + ((int64_t(n) * g.P + p0) * g.Q + q0) * g.K;

  for (int task = warp * tasks_per_warp; task < warp_end;) {
    const int column = task / m_tiles;
    const int column_end = min(warp_end, (column + 1) * m_tiles);
    const int gs = kResident ? column / n_tiles : column;  // group within the slab
    const int nt0 = kResident ? column % n_tiles : 0;      // the task's first n8 tile
    const int group = blockIdx.y * (kSlabChannels / kT) + gs;
    const uint32_t a_group = x_tile + gs * kT * 2;  // the group's channels of staged pixel 0
    const uint32_t b_column = filter_tile + (gs * Kg + nt0 * kMmaN + b_row.row) * ts.filter_row_bytes + b_row.col * 2;
    unsigned char* y_column = reinterpret_cast<unsigned char*>(y_tile + group * Kg + nt0 * kMmaN + 2 * ti);

    uint32_t b_resident[kResidentSteps][2];  // resident path: B of the column's n8 tile, every k-step
    if constexpr (kResident) {
#pragma unroll
      for (int ks = 0; ks < kResidentSteps; ++ks) gpu::ldmatrix_x2(b_resident[ks], b_column + ks * kMmaK * 2);
    }

    // The output pixel whose A row this lane supplies, walked 16 pixels per m-tile.
    RowMajorCursor pixel = RowMajorCursor::at((task - column * m_tiles) * kMmaM + a_row.row, ts.tile_q);
    for (; task < column_end; ++task, pixel.advance(ts.m_step, ts.tile_q)) {
      const bool in_tile = pixel.row < tile_rows && pixel.col < tile_cols;
      const uint32_t a_pixel =  // its window corner (rows past the tile: staged pixel 0, any in-tile address)
          a_group + (in_tile ? (pixel.row * ts.cols_in + pixel.col) * g.stride * kPixelBytes : 0);
      const uint32_t y_bytes = in_tile ? uint32_t(pixel.row * g.Q + pixel.col) * g.K * 2 : kNotStored;  // from y_tile

      float acc[kTaskNTiles][4] = {};
      if constexpr (kResident) {
#pragma unroll
        for (int ks = 0; ks < kResidentFullSteps; ++ks) {
          uint32_t a[4];
          gpu::ldmatrix_x4(a, a_pixel + a_shift[ks]);
          gpu::mma_m16n8k16<__half>(acc[0], a, b_resident[ks]);
        }
        if constexpr (kResidentFullSteps < kResidentSteps) {
          uint32_t a[4];
          load_a_lower_half(a, a_pixel + a_shift[kResidentFullSteps]);
          gpu::mma_m16n8k16<__half>(acc[0], a, b_resident[kResidentFullSteps]);
        }
      } else {
        uint32_t b_step = b_column;  // B row address of n8 tile 0 at the current k-step
        const auto multiply = [&](const uint32_t(&a)[4]) {
#pragma unroll
          for (int nt = 0; nt < kMaxNTiles; ++nt) {
            if (nt >= n_tiles) break;
            uint32_t b[2];
            gpu::ldmatrix_x2(b, b_step + nt * kMmaN * ts.filter_row_bytes);
            gpu::mma_m16n8k16<__half>(acc[nt], a, b);
          }
        };
        ReductionCursor<kT> a_at = a_start;
        for (int ks = 0; ks < depth / kMmaK; ++ks, a_at.advance_k_step(layout), b_step += kMmaK * 2) {
          uint32_t a[4];
          gpu::ldmatrix_x4(a, a_pixel + a_at.offset);
          multiply(a);
        }
        if (kT == 8 && depth % kMmaK != 0) {
          uint32_t a[4];
          load_a_lower_half(a, a_pixel + a_at.offset);
          multiply(a);
        }
      }

      // C: this lane holds rows gi and gi + 8 (gpu::mma_c_coord), channels
      // 2ti, 2ti+1 of each n8 tile: one half2 store each. Those rows' pixels
      // are the A rows that lanes gi and gi + 8 supplied: ask them.
      const uint32_t y_lo = __shfl_sync(0xffffffffu, y_bytes, gi), y_hi = __shfl_sync(0xffffffffu, y_bytes, gi + 8);
#pragma unroll
      for (int nt = 0; nt < kTaskNTiles; ++nt) {
        if (!kResident && nt >= n_tiles) break;
        const int nt_bytes = nt * kMmaN * 2;
        if (y_lo != kNotStored)
          *reinterpret_cast<__half2*>(y_column + y_lo + nt_bytes) = __floats2half2_rn(acc[nt][0], acc[nt][1]);
        if (y_hi != kNotStored)
          *reinterpret_cast<__half2*>(y_column + y_hi + nt_bytes) = __floats2half2_rn(acc[nt][2], acc[nt][3]);
      }
    }
  }
}

// FMA path (fp32, and fp16 shapes the mma path cannot take), K/groups ≤
// kMaxFmaKg: one thread per (group, output pixel) computes all Kg outputs of
// its group. Threads are numbered pixel-fastest within a group, so the 32
// threads of a warp share the group and every weight load is one broadcast
// address — except where N·P·Q % 32 ≠ 0: then a warp that straddles a group
// boundary spans two groups (more if N·P·Q < 32), and its weight loads are two
// broadcast addresses, still correct. Each x value loaded feeds Kg FMAs.
//
//   for (group, pixel) = thread:  acc[0..Kg) = 0
//     for r, s in the image:  for t < T:
//       xv = x[pixel at (r, s), group·T + t]
//       for j < Kg:  acc[j] += xv · w[group·Kg + j, r, s, t]        (same address across the warp)
//     y[pixel, group·Kg .. + Kg) = acc
template <class Element, int kAcc>  // kAcc ≥ K/groups accumulators: 8, 16 or 32
__global__ void __launch_bounds__(256)
    grouped_fma(ConvGeometry g, int64_t pixels, int64_t work, const Element* __restrict__ x,
                const Element* __restrict__ w, Element* __restrict__ y) {
  const int taps_t = g.R * g.S * g.T;  // one output channel's weights
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < work; i += int64_t(gridDim.x) * blockDim.x) {
    const int group = int(i / pixels);
    const int64_t m = i - group * pixels;  // output pixel (n·P + p)·Q + q
    const int q = int(m % g.Q), p = int((m / g.Q) % g.P), n = int(m / (int64_t(g.Q) * g.P));
    const Element* w_group = w + int64_t(group) * g.K_per_group * taps_t;
    float acc[kAcc];
#pragma unroll
    for (int j = 0; j < kAcc; ++j) acc[j] = 0.f;
    for (int r = 0; r < g.R; ++r) {
      const int ih = p * g.stride - g.pad + r;
      if (ih < 0 || ih >= g.H) continue;
      for (int s = 0; s < g.S; ++s) {
        const int iw = q * g.stride - g.pad + s;
        if (iw < 0 || iw >= g.W) continue;
        const Element* src = x + ((int64_t(n) * g.H + ih) * g.W + iw) * g.C + int64_t(group) * g.T;
        const Element* w_tap = w_group + (r * g.S + s) * g.T;
        for (int t = 0; t < g.T; ++t) {
          const float xv = gpu::to_float(src[t]);
#pragma unroll
          for (int j = 0; j < kAcc; ++j)
            if (j < g.K_per_group) acc[j] = fmaf(xv, gpu::to_float(w_tap[j * taps_t + t]), acc[j]);
        }
      }
    }
    Element* out = y + m * g.K + int64_t(group) * g.K_per_group;
#pragma unroll
    for (int j = 0; j < kAcc; ++j)
      if (j < g.K_per_group) out[j] = gpu::from_float<Element>(acc[j]);
  }
}

// Plain path (K/groups > kMaxFmaKg): one thread per output element y[n, p, q, k], fp32 accumulation.
template <class Element>
__global__ void grouped_plain(ConvGeometry g, int64_t outputs, const Element* __restrict__ x,
                              const Element* __restrict__ w, Element* __restrict__ y) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < outputs; i += int64_t(gridDim.x) * blockDim.x) {
    const int k = int(i % g.K);
    const int64_t pixel = i / g.K;
    const int q = int(pixel % g.Q), p = int((pixel / g.Q) % g.P), n = int(pixel / (int64_t(g.Q) * g.P));
    const int c0 = (k / g.K_per_group) * g.T;
    const Element* w_row = w + int64_t(k) * g.R * g.S * g.T;
    float acc = 0.f;
    for (int r = 0; r < g.R; ++r) {
      const int ih = p * g.stride - g.pad + r;
      if (ih < 0 || ih >= g.H) continue;
      for (int s = 0; s < g.S; ++s) {
        const int iw = q * g.stride - g.pad + s;
        if (iw < 0 || iw >= g.W) continue;
        const Element* src = x + ((int64_t(n) * g.H + ih) * g.W + iw) * g.C + c0;
        const Element* wt = w_row + (r * g.S + s) * g.T;
        for (int t = 0; t < g.T; ++t) acc = fmaf(gpu::to_float(src[t]), gpu::to_float(wt[t]), acc);
      }
    }
    y[i] = gpu::from_float<Element>(acc);
  }
}

bool supports(const ConvProblem& p) {
  const bool depthwise = p.T() == 1 && p.K_per_group() == 1;
  return (p.dtype == DType::f32 || p.dtype == DType::f16) && p.groups > 1 && !depthwise &&
         int64_t(p.K) * p.R * p.S * p.T() <= INT_MAX;
}

template <int kT, int kTaps> void launch_mma(const ConvProblem& p, const Args<ConvProblem>& args) {
  const auto kernel = grouped_mma<kT, kTaps>;
  gpu::allow_dynamic_shared(kernel, kMaxShared, "grouped_mma");  // the opt-in limit covers every tile shape
  const TileShape ts = tile_shape(p);
  const int tiles_p = gpu::ceil_div(p.P(), ts.tile_p), tiles_q = gpu::ceil_div(p.Q(), ts.tile_q);
  const dim3 grid(unsigned(int64_t(p.N) * tiles_p * tiles_q), unsigned(gpu::ceil_div(p.C, kSlabChannels)));
  kernel<<<grid, kThreads, ts.shared_bytes()>>>(gpu::geometry_of(p), ts, tiles_p, tiles_q,
                                                static_cast<const __half*>(args.x),
                                                static_cast<const __half*>(args.w), static_cast<__half*>(args.y));
  gpu::check_launch("grouped_mma");
}

// The resident path for any filter of R·S = 9 taps (3x3, 1x9, 9x1) whose B
// column fits in registers (T = 8 or 16: 5 or 9 k-steps; T ≥ 32 needs 18 or
// more), the streamed path for everything else.
template <int kT> void launch_mma_width(const ConvProblem& p, const Args<ConvProblem>& args) {
  if constexpr (gpu::ceil_div(kResidentTaps * kT, kMmaK) <= kMaxResidentSteps) {
    if (p.R * p.S == kResidentTaps) {
      launch_mma<kT, kResidentTaps>(p, args);
      return;
    }
  }
  launch_mma<kT, 0>(p, args);
}

void run(const ConvProblem& p, const Args<ConvProblem>& args) {
  // cp.async copies 16-byte chunks of x and w (C, R·S·T multiples of 8, so
  // every chunk is aligned when the base pointers are); y takes half2 stores.
  if (mma_eligible(p) && gpu::aligned_16(args.x) && gpu::aligned_16(args.w) && gpu::aligned_16(args.y)) {
    switch (p.T()) {
      case 8: launch_mma_width<8>(p, args); return;
      case 16: launch_mma_width<16>(p, args); return;
      case 32: launch_mma_width<32>(p, args); return;
      case 64: launch_mma_width<64>(p, args); return;
      default: break;
    }
  }
  gpu::visit_dtype<float, __half>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (p.K_per_group() <= kMaxFmaKg) {
      const int64_t pixels = int64_t(p.N) * p.P() * p.Q(), work = pixels * p.groups;
      constexpr int kFmaThreads = 256;
      const int64_t blocks = gpu::ceil_div<int64_t>(work, kFmaThreads);
      const auto launch_fma = [&](auto kernel) {
        kernel<<<unsigned(blocks < gpu::kMaxGridX ? blocks : gpu::kMaxGridX), kFmaThreads>>>(
            gpu::geometry_of(p), pixels, work, static_cast<const Element*>(args.x),
            static_cast<const Element*>(args.w), static_cast<Element*>(args.y));
        gpu::check_launch("grouped_fma");
      };
      // The fewest accumulators that hold the group: the j loop is unrolled to kAcc, predicated past Kg.
      if (p.K_per_group() <= 8)
        launch_fma(grouped_fma<Element, 8>);
      else if (p.K_per_group() <= 16)
        launch_fma(grouped_fma<Element, 16>);
      else
        launch_fma(grouped_fma<Element, kMaxFmaKg>);
      return;
    }
    const int64_t outputs = int64_t(p.N) * p.P() * p.Q() * p.K;
    constexpr int kPlainThreads = 256;
    const int64_t blocks = gpu::ceil_div<int64_t>(outputs, kPlainThreads);
    grouped_plain<Element><<<unsigned(blocks < gpu::kMaxGridX ? blocks : gpu::kMaxGridX), kPlainThreads>>>(
        gpu::geometry_of(p), outputs, static_cast<const Element*>(args.x), static_cast<const Element*>(args.w),
        static_cast<Element*>(args.y));
    gpu::check_launch("grouped_plain");
  });
}

const Register<ConvProblem> reg{{
    .name = "06b_grouped",
    .device = Device::gpu,
    .lesson = 6,
    .supports = supports,
    .run = run,
    .idea = "grouped, T = 8..64: one group = one mma.sync m16n8k16 column of 8 outputs, one ldmatrix.x4 per A "
            "fragment straight from a staged NHWC tile (no im2col), B from a staged filter slab; f32: FMA",
}};

}  // namespace
}  // namespace convlab
