// gpu/lib/convfirst_blurpool.cuh — the stride-2 (BlurPool) ConvFirst block in one kernel, less its conv.
//
// Lesson 10's two stride-2 rungs (gpu/convfirst/10d_fused_blurpool.cu, 10f_fused_blurpool_composed.cu)
// differ only in how they compute T = blurpool(gconv3x3(x) + conv_b) from the staged x rows. This
// header is the rest, once: the tile sizes, the staging, the blurred shortcut S, Z's start, the
// hidden-chunk loop and the store. A rung hands the kernel its conv as a type:
//
//   struct MyConv {
//     static constexpr bool kMakesS = false;  // true: run() also writes the warp's rows of S (tile.s_base)
//     // Writes this warp's rows of T (T tile at tile.t_base, rows tile.warp_row0 .. + kWarpRows,
//     // ChunkSwizzle<kARowChunks>, store_blurred) from the staged x; may read only its own weights
//     // and the staged rows.
//     template <class Cfg, class Element>
//     static __device__ void run(const BlurpoolTile& tile, const void* weights, const Element* conv_b);
//   };
//
//   stage x[2 rows above .. 2 below the tile's rows] in shared memory    cp.async, once (with Wsc, U/V chunk 0)
//   T  = the rung's conv                                                   shared memory [pixels × C], f16/bf16
//   S  = blurpool(x)                      fp32 sums of 9 staged pixels    shared memory [pixels × C], f16/bf16
//                                         (unless the conv made it: kMakesS)
//   Z  = S·Wsc + bsc + b  (C_out ≠ C)     mma.sync, A = S, B = Wsc        registers, fp32
//   Z  = S + b            (C_out = C)
//   for r in chunks of TH hidden channels: H_r = φ(T·U^r + a_r); Z += H_r·V_r   (gpu/lib/ffn_hidden_loop.cuh,
//                                         a staged once per CTA as fp32 in shared memory)
//   y[tile] = Z                           one rounding, through the warp's dead T/S rows, 16-byte stores
//
// Tiles: a CTA owns kBlockRows = Warps·WarpRows consecutive output pixels of the flattened
// N·P·Q index (tiles may span rows and images). It stages the flattened x rows
// n0·H + 2p0 − 2 .. n1·H + 2p1 + 2 of its first and last output pixels: contiguous in NHWC
// memory (rows of other images inside that range are never read, the masks see to it), at most
// 2k + 3 rows for k output rows touched; pixels kPixelBytes = 2·C + 16 apart (an odd number of
// 16-byte chunks), each row's even columns first and then its odd ones (s2::column_slot):
// consecutive output pixels read x columns two apart, which are then neighbouring slots, so
// ldmatrix's 8 rows fall in 8 different bank groups. T and S rows are written and read by the
// same warp: no block barrier between the conv and the hidden loop.
//
// Contract of the kernel. x [N, H, W, C], conv_b [C], U [C, hidden], a [hidden], V [hidden, C_out],
// b [C_out], Wsc [C, C_out] and bsc [C_out] when C_out ≠ C (else unused), y [N, P, Q, C_out];
// Element = __half or __nv_bfloat16; 16-byte-aligned x, U, V, Wsc, y; fp32 accumulation; T and S
// rounded to Element once (they are GEMM A operands), H_r once, y once. Grid: ceil(M / kBlockRows)
// CTAs, M = N·P·Q; shared_bytes<Cfg>(p) dynamic shared. Edge duties: staged rows outside [0, N·H)
// and hidden columns ≥ hidden are zero-filled (cp.async source size 0); output pixels ≥ M compute on
// the zero pixel and are never stored; blur taps outside the image are skipped.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>

#include "ops/convfirst.hpp"
#include "gpu/lib/blurpool_s2_indexing.cuh"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_hidden_loop.cuh"
#include "gpu/lib/mma.cuh"

namespace convlab::gpu::blurpool_s2 {

// Fixed by the hardware and the block.
inline constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
inline constexpr int kChunkElems = 8;  // 16 bytes = 8 f16/bf16: one cp.async, one ldmatrix row, one group
inline constexpr int kElemBytes = 2;
inline constexpr int kGroupWidth = 8;  // one group = one ldmatrix row = one n8 tile of the conv
inline constexpr int kMaxShared = 227 * 1024;

// ---- tunables, one configuration per (C, C_out) -----------------------------------------
//   Warps      warps per CTA; each owns WarpRows consecutive output pixels of the tile
//   WarpRows   output pixels per warp (whole m16 tiles)
//   Chunk      TH, hidden channels per loop step
//   MinBlocks  CTAs per SM promised to ptxas
// The hidden loop is gpu::FfnLoopConfig's (with C_out columns); the block adds the T tile
// (the loop's A tile), the S tile (the projection's A operand), Wsc and the staged x rows.
template <int C, int COut, int Warps, int WarpRows, int Chunk, int MinBlocks>
struct S2Config : gpu::FfnLoopConfig<C, Warps, WarpRows, Chunk, MinBlocks, COut> {
  using Loop = gpu::FfnLoopConfig<C, Warps, WarpRows, Chunk, MinBlocks, COut>;
  static constexpr bool kProjection = COut != C;
  static constexpr int kGroups = C / kGroupWidth;
  static constexpr int kPixelBytes = C * kElemBytes + 16;  // staged x pixel
  static constexpr int kPixelChunks = C / kChunkElems;     // 16-byte chunks of a pixel's channels
  static constexpr int kTileBytes = Loop::kATileBytes;     // T and S: [kBlockRows][kRowElems], swizzled
  static constexpr int kWscBytes = kProjection ? C * Loop::kVRowElems * kElemBytes : 0;  // [C][COut], swizzled as V
  // [stage 0 | stage 1 | T tile | S tile | Wsc | zero pixel | a as fp32, whole chunks | staged x rows]
  // (the last two have run-time sizes: bias_bytes(hidden), the rows' shared_bytes)
  static constexpr int kFixedBytes = 2 * Loop::kStageBytes + 2 * kTileBytes + kWscBytes + kPixelBytes;
  static CONVLAB_HOST_DEVICE constexpr int bias_bytes(int hidden) { return (hidden + Chunk - 1) / Chunk * Chunk * 4; }
  static_assert(Chunk % 4 == 0, "the staged bias keeps the x rows 16-byte aligned");

  static_assert(COut == C || COut == 2 * C, "the shortcut is the identity or a projection to 2·C");
  static_assert((kPixelBytes / 16) % 2 == 1, "odd number of 16-byte chunks per staged pixel: no bank conflicts");
  static_assert((kPixelChunks & (kPixelChunks - 1)) == 0, "staging divides by the chunks per pixel with a shift");
  static_assert(Loop::kStageBytes % 128 == 0 && kTileBytes % 128 == 0 && kWscBytes % 128 == 0,
                "swizzled tiles start on 128-byte lines");
  static_assert(kFixedBytes % 16 == 0, "the staged rows start 16-byte aligned");
  static_assert(Loop::kMTiles == 1 || Loop::kMTiles == 2, "one or two m16 tiles per warp");
};

// 8 warps × 16 output pixels: Z is kZTiles·4 = C_out/2 registers per lane, H_r TH/2.
using Config16x16 = S2Config<16, 16, 8, 16, 64, 1>;
using Config16x32 = S2Config<16, 32, 8, 16, 64, 1>;
using Config32x32 = S2Config<32, 32, 8, 16, 64, 1>;
using Config32x64 = S2Config<32, 64, 8, 16, 64, 1>;
using Config64x64 = S2Config<64, 64, 8, 16, 64, 1>;
using Config64x128 = S2Config<64, 128, 8, 16, 64, 1>;
using Config128x128 = S2Config<128, 128, 8, 16, 64, 1>;
using Config128x256 = S2Config<128, 256, 8, 16, 32, 1>;  // Z 128 registers: a 32-wide chunk

template <class Cfg> std::size_t shared_bytes(const ConvFirstProblem& p) {
  const int64_t rows = staged_rows_bound(Cfg::kBlockRows, p.N, p.P(), p.Q());
  return std::size_t(Cfg::kFixedBytes) + std::size_t(Cfg::bias_bytes(p.hidden)) +
         std::size_t(rows) * std::size_t(p.W) * Cfg::kPixelBytes;
}
template <class Cfg> bool fits(const ConvFirstProblem& p) { return shared_bytes<Cfg>(p) <= std::size_t(kMaxShared); }

// Calls f(Cfg{}) with the configuration of p's (C, C_out); false when there is none.
template <class F> bool with_config(const ConvFirstProblem& p, F&& f) {
  const bool wide = p.C_out == 2 * p.C;
  if (p.C_out != p.C && !wide) return false;
  switch (p.C) {
    case 16: return wide ? f(Config16x32{}) : f(Config16x16{});
    case 32: return wide ? f(Config32x64{}) : f(Config32x32{});
    case 64: return wide ? f(Config64x128{}) : f(Config64x64{});
    case 128: return wide ? f(Config128x256{}) : f(Config128x128{});
    default: return false;
  }
}

// What both rungs support: f16/bf16, stride 2, group width 8, hidden a multiple of 8, index
// ranges inside int, a configuration for (C, C_out) whose staged rows fit shared memory.
inline bool supports_block(const ConvFirstProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && p.stride == 2 && p.group_width == kGroupWidth &&
         p.hidden % kChunkElems == 0 && p.output_pixels() + 256 < double(INT_MAX) &&
         double(p.N) * p.H + 4 < double(INT_MAX) &&
         with_config(p, [&](auto cfg) { return fits<decltype(cfg)>(p); });
}

// Where output pixel m's taps point: the staged address of x pixel (2p, 2q) and the axis
// masks (axis_mask); a pixel ≥ M gets empty masks (every tap reads the zero pixel).
struct PixelSite {
  uint32_t centre;
  unsigned row_mask, col_mask;
};

// What a rung's conv sees of the tile.
struct BlurpoolTile {
  int M, P, Q, H, W;
  int first_row;     // flattened x row of staged row 0 (may be < 0)
  int row_bytes;     // W · kPixelBytes
  int pixel_bytes;   // kPixelBytes
  int block_pixel0;  // the CTA's first output pixel
  int warp_row0;     // this warp's first row of the tile
  uint32_t x_base, zero_pixel, t_base, s_base;  // shared addresses: staged row 0, the zero pixel, the T and S tiles

  __device__ __forceinline__ PixelSite site_of(int m) const {
    if (m >= M) return {x_base, 0u, 0u};
    const OutPixel o = decode(m, P, Q);
    const int row = o.n * H + 2 * o.p - first_row;  // staged row of x row 2p
    // column 2q sits at slot q (column_slot: even columns first)
    return {x_base + uint32_t((row * W + o.q) * pixel_bytes), axis_mask(2 * o.p, H), axis_mask(2 * o.q, W)};
  }
  // The staged address of the x pixel (2p + dr, 2q + dc) of a site (dr, dc in −2 .. 2).
  __device__ __forceinline__ uint32_t offset(int dr, int dc) const {
    return uint32_t(dr * row_bytes + column_slot_offset(dc, W) * pixel_bytes);
  }
};

// What a warp's conv needs of its pixels, per m16 tile: the pixel whose staged address this lane
// hands ldmatrix (row lane % 16; lanes 16-31 supply a step's odd tap), and the conv bias's factor
// Σ β_iβ_j (× 16) over the valid blur taps of the accumulator rows g and g + 8.
template <int kMTiles> struct ConvSites {
  PixelSite a_site[kMTiles];
  int bias_w[kMTiles][2];
  bool upper;  // this lane supplies the odd tap of a step

  __device__ __forceinline__ explicit ConvSites(const BlurpoolTile& tile) {
    const int lane = threadIdx.x % 32, g = lane / 4;
    const gpu::MatrixCoord a_row = gpu::ldmatrix_x4_row_address(lane);
    upper = a_row.col != 0;
#pragma unroll
    for (int mi = 0; mi < kMTiles; ++mi) {
      const int m_tile = tile.block_pixel0 + tile.warp_row0 + mi * kMmaM;
      a_site[mi] = tile.site_of(m_tile + a_row.row);
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const PixelSite acc_site = tile.site_of(m_tile + g + 8 * half);
        bias_w[mi][half] = bias_weight(acc_site.row_mask, acc_site.col_mask);
      }
    }
  }
  // acc[mi][grp] starts as the weighted conv bias of channels 8·(group0 + grp) + 2t, +1.
  template <int kGroups, class Element>
  __device__ __forceinline__ void start(float (&acc)[kMTiles][kGroups][4], const Element* Bc, int group0) const {
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int grp = 0; grp < kGroups; ++grp) {
      const int channel = (group0 + grp) * kGroupWidth + 2 * t;
      const float bias0 = gpu::to_float(Bc[channel]), bias1 = gpu::to_float(Bc[channel + 1]);
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi) {
        acc[mi][grp][0] = float(bias_w[mi][0]) * bias0, acc[mi][grp][1] = float(bias_w[mi][0]) * bias1;
        acc[mi][grp][2] = float(bias_w[mi][1]) * bias0, acc[mi][grp][3] = float(bias_w[mi][1]) * bias1;
      }
    }
  }
};

// Rows g and g + 8 of an m16n8 accumulator (channels 8·group + 2t, +1) into the T or S tile at
// `base`, divided by 16 (the blur's normalisation), rounded once, one 32-bit store each.
template <class Cfg, class Element>
__device__ __forceinline__ void store_blurred(uint32_t base, int row, int group, int t, const float acc[4]) {
  using SwizzleT = gpu::ChunkSwizzle<Cfg::kARowChunks>;
  const uint32_t lo = base + SwizzleT::byte_offset(row, group) + 4 * t;
  const uint32_t hi = base + SwizzleT::byte_offset(row + 8, group) + 4 * t;
  const float k16 = 1.0f / 16.0f;
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(lo), "r"(gpu::pack_pair<Element>(acc[0] * k16, acc[1] * k16))
               : "memory");
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(hi), "r"(gpu::pack_pair<Element>(acc[2] * k16, acc[3] * k16))
               : "memory");
}

// y's rows of this warp, Z rounded once, through shared memory so that the global stores are
// whole 16-byte vectors of consecutive output rows (a warp's rows are one contiguous run of y):
// Z rows 0..7 go to the warp's (dead) rows of the T tile, rows 8..15 to its rows of the S tile,
// each as [8][COut] with ChunkSwizzle<COut/8> (an n8 tile of Z is one 16-byte chunk of a row;
// lane (g, t) writes word t of row g's chunk: the eight rows of a store fall in eight bank
// groups). Needs one m16 tile per warp and COut ≥ 32; T and S rows are written and read only by
// their warp, and the warp's last reads of them are done.
template <class Cfg> inline constexpr bool kStoreThroughShared = Cfg::kMTiles == 1 && Cfg::kCOut >= 32;
template <class Cfg, class Element>
__device__ __forceinline__ void store_y(Element* __restrict__ Y, const float (&z_acc)[Cfg::kMTiles][Cfg::kZTiles][4],
                                        uint32_t t_base, uint32_t s_base, int warp_row0, int row0, int M) {
  if constexpr (!kStoreThroughShared<Cfg>) {
    gpu::store_z<Cfg>(Y, z_acc, row0, M);
  } else {
    constexpr int kChunks = Cfg::kCOut / kChunkElems;  // 16-byte chunks of a y row
    using SwizzleY = gpu::ChunkSwizzle<kChunks>;
    static_assert(8 * Cfg::kCOut <= Cfg::kWarpRows * Cfg::kRowElems, "eight y rows fit a warp's rows of T (and S)");
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const uint32_t warp_bytes = uint32_t(warp_row0 * Cfg::kRowElems * kElemBytes);
    const uint32_t half_base[2] = {t_base + warp_bytes, s_base + warp_bytes};
    __syncwarp();  // every lane's last reads of T and S are behind us
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int ni = 0; ni < Cfg::kZTiles; ++ni)
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(half_base[half] + SwizzleY::byte_offset(g, ni) + 4 * t),
                     "r"(gpu::pack_pair<Element>(z_acc[0][ni][2 * half], z_acc[0][ni][2 * half + 1]))
                     : "memory");
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 16 * kChunks / 32; ++i) {
      const int idx = i * 32 + lane, row = idx / kChunks, chunk = idx % kChunks;
      if (row0 + row >= M) continue;
      uint32_t v[4];
      asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                   : "r"(half_base[row / 8] + SwizzleY::byte_offset(row % 8, chunk))
                   : "memory");
      *reinterpret_cast<uint4*>(Y + (int64_t(row0 + row) * Cfg::kCOut + chunk * kChunkElems)) =
          make_uint4(v[0], v[1], v[2], v[3]);
    }
  }
}

// ---- the kernel ------------------------------------------------------------------------
template <class Cfg, class Element, class Conv>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    convfirst_blurpool_kernel(int M, int NH, int P, int Q, int H, int W, int hidden, ConvFirstActivation act,
                              const Element* __restrict__ X, const void* __restrict__ conv_weights,
                              const Element* __restrict__ Bc, const Element* __restrict__ U,
                              const Element* __restrict__ A, const Element* __restrict__ V,
                              const Element* __restrict__ B, const Element* __restrict__ Wsc,
                              const Element* __restrict__ Bsc, Element* __restrict__ Y) {
  constexpr int C = Cfg::kC, COut = Cfg::kCOut, kPixelBytes = Cfg::kPixelBytes;
  using SwizzleT = gpu::ChunkSwizzle<Cfg::kARowChunks>;  // T and S tiles
  using SwizzleW = gpu::ChunkSwizzle<Cfg::kVRowChunks>;  // Wsc, laid out as a V stage

  extern __shared__ __align__(128) unsigned char shared[];
  const uint32_t stages_base = gpu::shared_address(shared);
  const uint32_t t_base = stages_base + 2 * Cfg::kStageBytes;
  const uint32_t s_base = t_base + Cfg::kTileBytes;
  const uint32_t wsc_base = s_base + Cfg::kTileBytes;
  const uint32_t zero_pixel = wsc_base + Cfg::kWscBytes;
  const uint32_t bias_base = zero_pixel + kPixelBytes;
  const uint32_t x_base = bias_base + Cfg::bias_bytes(hidden);

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int block_pixel0 = blockIdx.x * Cfg::kBlockRows;  // M < 2^31
  const int warp_row0 = warp * Cfg::kWarpRows;
  const int chunks = gpu::ceil_div(hidden, Cfg::kChunk);
  const int last_pixel = min(block_pixel0 + Cfg::kBlockRows, M) - 1;
  const int first_row = first_staged_row(block_pixel0, P, Q, H);
  const int rows_staged = staged_rows(block_pixel0, last_pixel, P, Q, H);  // ≤ the host's bound
  const BlurpoolTile tile{M,      P,          Q,      H,      W, first_row, W * kPixelBytes, kPixelBytes, block_pixel0,
                          warp_row0, x_base, zero_pixel, t_base, s_base};

  // ---- stage the x rows (one contiguous range of NHWC memory), Wsc and the zero pixel ----
  {
    // A thread copies one 16-byte piece of every kPixelStep-th pixel of the staged range (contiguous
    // in NHWC memory); the source moves by a constant, the destination row and column by additions
    // (two divisions per thread, none per piece), rows outside [0, N·H) by a compare of the index.
    constexpr int kPixelStep = Cfg::kThreads / Cfg::kPixelChunks;
    static_assert(Cfg::kThreads % Cfg::kPixelChunks == 0, "a thread keeps one piece of its pixels");
    const int pixels = rows_staged * W, piece = threadIdx.x % Cfg::kPixelChunks;
    const int in_first = max(0, -first_row) * W, in_end = min(rows_staged, NH - first_row) * W;  // pixels in [0, N·H)
    const int step_rows = kPixelStep / W, step_cols = kPixelStep - step_rows * W, half = (W + 1) / 2;
    int pixel = threadIdx.x / Cfg::kPixelChunks;
    int w = pixel % W;
    uint32_t row_dst = x_base + uint32_t(pixel / W * W * kPixelBytes + piece * 16);  // staged row's first slot
    int64_t src = int64_t(first_row) * W * C + int64_t(pixel) * C + piece * kChunkElems;  // < 0 above image 0
    for (; pixel < pixels; pixel += kPixelStep, src += kPixelStep * C) {
      const bool in = pixel >= in_first && pixel < in_end;
      const int slot = (w & 1) ? half + (w >> 1) : (w >> 1);  // column_slot(w, W)
      gpu::cp_async_16(row_dst + slot * kPixelBytes, in ? X + src : X, in);
      w += step_cols;
      row_dst += step_rows * W * kPixelBytes;
      if (w >= W) w -= W, row_dst += W * kPixelBytes;
    }
    if constexpr (Cfg::kProjection) {
      constexpr int kPiecesPerRow = COut / kChunkElems;
      for (int idx = threadIdx.x; idx < C * kPiecesPerRow; idx += Cfg::kThreads) {
        const int c = idx / kPiecesPerRow, piece = idx % kPiecesPerRow;
        gpu::cp_async_16(wsc_base + SwizzleW::byte_offset(c, piece), Wsc + c * COut + piece * kChunkElems, true);
      }
    }
    for (int i = threadIdx.x; i < kPixelBytes / 4; i += Cfg::kThreads)
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(zero_pixel + 4 * i), "r"(0u) : "memory");
    // a as fp32, zero past hidden: the hidden loop reads a chunk's pairs with one 8-byte load each.
    for (int i = threadIdx.x; i < Cfg::bias_bytes(hidden) / 4; i += Cfg::kThreads)
      asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(bias_base + 4 * i), "f"(i < hidden ? gpu::to_float(A[i]) : 0.0f)
                   : "memory");
  }
  // Commit groups: [x + Wsc + chunk 0] [chunk 1 or empty], as the hidden loop expects.
  gpu::load_ffn_chunk<Cfg>(stages_base, 0, 0, hidden, U, V);
  gpu::cp_async_commit();
  if (chunks > 1) gpu::load_ffn_chunk<Cfg>(stages_base, 1, 1, hidden, U, V);
  gpu::cp_async_commit();
  gpu::cp_async_wait<1>();  // my x, Wsc and chunk-0 pieces have landed
  __syncthreads();          // everyone's have, and the zero pixel is written

  // ---- 1. T = blurpool(gconv3x3(x) + conv_b), rows of this warp: the rung's conv ----------------
  Conv::template run<Cfg, Element>(tile, conv_weights, Bc);

  // ---- 2. S = blurpool(x), rows of this warp: one (pixel, 8-channel piece) per lane and step ----
  //         (unless the rung's conv made S beside T from the same fragments)
  if constexpr (!Conv::kMakesS)
  for (int idx = lane; idx < Cfg::kWarpRows * Cfg::kPixelChunks; idx += 32) {
    const int row = idx / Cfg::kPixelChunks, piece = idx % Cfg::kPixelChunks;
    const PixelSite st = tile.site_of(block_pixel0 + warp_row0 + row);
    float s[kChunkElems] = {};
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
      for (int j = 0; j < 3; ++j) {
        if (!blur_tap_valid(i, j, st.row_mask, st.col_mask)) continue;
        const float beta = float(binomial(i) * binomial(j));
        const uint32_t address = st.centre + tile.offset(i - 1, j - 1) + piece * 16;
        uint32_t words[4];
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(words[0]), "=r"(words[1]), "=r"(words[2]), "=r"(words[3])
                     : "r"(address)
                     : "memory");
        const Element* e = reinterpret_cast<const Element*>(words);
#pragma unroll
        for (int c = 0; c < kChunkElems; ++c) s[c] += beta * gpu::to_float(e[c]);
      }
    uint32_t packed[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) packed[w] = gpu::pack_pair<Element>(s[2 * w] / 16.0f, s[2 * w + 1] / 16.0f);
    gpu::st_shared_16(s_base + SwizzleT::byte_offset(warp_row0 + row, piece), packed);
  }
  __syncwarp();  // this warp's rows of T and S are written (only this warp reads them)

  // ---- 3. Z starts as the shortcut plus b ---------------------------------------------------
  float z_acc[Cfg::kMTiles][Cfg::kZTiles][4];
  if constexpr (Cfg::kProjection) {
    // Z = S·Wsc + bsc + b: the expand step of the hidden loop with U^r → Wsc, one k16 step per 16 channels.
#pragma unroll
    for (int ni = 0; ni < Cfg::kZTiles; ++ni) {
      const int col = ni * kMmaN + 2 * t;
      const float b0 = gpu::to_float(B[col]) + gpu::to_float(Bsc[col]);
      const float b1 = gpu::to_float(B[col + 1]) + gpu::to_float(Bsc[col + 1]);
#pragma unroll
      for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
        z_acc[mi][ni][0] = b0, z_acc[mi][ni][1] = b1;
        z_acc[mi][ni][2] = b0, z_acc[mi][ni][3] = b1;
      }
    }
    const gpu::MatrixCoord lane_row = gpu::ldmatrix_x4_row_address(lane);
#pragma unroll
    for (int s = 0; s < Cfg::kKSteps1; ++s) {
      uint32_t a_frag[Cfg::kMTiles][4];
#pragma unroll
      for (int mi = 0; mi < Cfg::kMTiles; ++mi)
        gpu::ldmatrix_x4(a_frag[mi], s_base + SwizzleT::byte_offset(warp_row0 + mi * kMmaM + lane_row.row,
                                                                    (s * kMmaK + lane_row.col) / kChunkElems));
#pragma unroll
      for (int nj = 0; nj < Cfg::kZTiles / 2; ++nj) {
        uint32_t w_frag[4];  // B fragments of Z's n8 tiles 2nj (regs 0, 1) and 2nj+1 (regs 2, 3)
        gpu::ldmatrix_x4_trans(w_frag, wsc_base + SwizzleW::byte_offset(s * kMmaK + lane_row.row,
                                                                        (nj * 16 + lane_row.col) / kChunkElems));
        const uint32_t b_lo[2] = {w_frag[0], w_frag[1]}, b_hi[2] = {w_frag[2], w_frag[3]};
#pragma unroll
        for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
          gpu::mma_m16n8k16<Element>(z_acc[mi][2 * nj], a_frag[mi], b_lo);
          gpu::mma_m16n8k16<Element>(z_acc[mi][2 * nj + 1], a_frag[mi], b_hi);
        }
      }
    }
  } else {
    // Z = S + b: element (row, 8·ni + 2t + e) is word t of chunk ni of S's row.
#pragma unroll
    for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = warp_row0 + mi * kMmaM + g + 8 * half;
#pragma unroll
        for (int ni = 0; ni < Cfg::kZTiles; ++ni) {
          const int col = ni * kMmaN + 2 * t;
          uint32_t pair;
          asm volatile("ld.shared.b32 %0, [%1];\n"
                       : "=r"(pair)
                       : "r"(s_base + SwizzleT::byte_offset(row, ni) + 4 * t)
                       : "memory");
          const Element* e = reinterpret_cast<const Element*>(&pair);
          z_acc[mi][ni][2 * half] = gpu::to_float(e[0]) + gpu::to_float(B[col]);
          z_acc[mi][ni][2 * half + 1] = gpu::to_float(e[1]) + gpu::to_float(B[col + 1]);
        }
      }
  }

  // ---- 4. Eq. 32 over hidden chunks: the shared loop with A = T --------------------------------
  gpu::ffn_hidden_loop<Cfg>(z_acc, t_base, stages_base, warp_row0, hidden,
                            gpu::SharedBias{reinterpret_cast<const float*>(shared + (bias_base - stages_base))}, U, V,
                            gpu::ReluOrSilu{act == ConvFirstActivation::relu});

  // ---- 5. one store of y (b and the shortcut are already in Z) ---------------------------------
  store_y<Cfg, Element>(Y, z_acc, t_base, s_base, warp_row0, block_pixel0 + warp_row0, M);
}

// Launches the block with the rung's conv on the stream's default (the harness's) stream.
template <class Cfg, class Element, class Conv>
void launch_block(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a, const void* conv_weights,
                  const char* name) {
  const auto kernel = convfirst_blurpool_kernel<Cfg, Element, Conv>;
  const std::size_t shared = shared_bytes<Cfg>(p);
  gpu::allow_dynamic_shared(kernel, shared, name);
  const int M = int(p.output_pixels());
  const int blocks = gpu::ceil_div(M, Cfg::kBlockRows);
  kernel<<<blocks, Cfg::kThreads, shared>>>(
      M, p.N * p.H, p.P(), p.Q(), p.H, p.W, p.hidden, p.activation, static_cast<const Element*>(a.x), conv_weights,
      static_cast<const Element*>(a.conv_b), static_cast<const Element*>(a.u), static_cast<const Element*>(a.a),
      static_cast<const Element*>(a.v), static_cast<const Element*>(a.b),
      static_cast<const Element*>(a.shortcut_w), static_cast<const Element*>(a.shortcut_b),
      static_cast<Element*>(a.y));
  gpu::check_launch(name);
}

// The alignment every stride-2 rung needs; throws Unsupported naming the rung otherwise.
inline void check_block_alignment(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a, const char* rung) {
  if (!gpu::aligned_16(a.x) || !gpu::aligned_16(a.u) || !gpu::aligned_16(a.v) || !gpu::aligned_16(a.y) ||
      (p.has_projection() && !gpu::aligned_16(a.shortcut_w)) || reinterpret_cast<uintptr_t>(a.conv_w) % 4 != 0)
    throw Unsupported(std::string(rung) +
                      ": x, u, v, shortcut_w and y must be 16-byte aligned, conv_w 4-byte aligned");
}

}  // namespace convlab::gpu::blurpool_s2
