// gpu/convfirst/10b_fused.cu — lesson 10, GPU rung b: the whole ConvFirst block in ONE kernel.
//
// Idea over 10a_layer_by_layer: block fusion (§5.3.1, Fig. 7b). An FFN is
// pixel-wise and the grouped conv comes first, so a tile of output pixels
// depends only on its input tile plus a one-pixel halo. One CTA computes its
// tile from x to y with every intermediate on the chip:
//
//   stage x[tile + halo rows] in shared memory                  cp.async, once (with U/V chunk 0)
//   T   = gconv3x3(x) + conv_b        mma.sync m16n8k16           shared memory [pixels × C], f16/bf16
//   Z   = x[tile] + b                 the residual starts Z       registers, fp32
//   for r in chunks of TH hidden channels:                        U^r, V_r: cp.async, two stages
//     H_r = φ(T · U^r + a_r)          mma.sync, fp32 → f16/bf16   registers
//     Z  += H_r · V_r                 mma.sync, A = H_r straight from registers (lesson 08)
//   y[tile] = Z                       one rounding, one store
//
// The grouped conv on tensor cores. With group width 8, one group is a small
// GEMM per tile: Y_g[pixels, 8] = A_g[pixels, 9 taps × 8 channels] · W_gᵀ.
// One m16n8k16 covers 16 pixels × the group's 8 outputs × two taps (k 0–7
// = tap 2j, channels 0–7; k 8–15 = tap 2j+1): five mma per group and
// m-tile, the fifth with its upper half zero (tap "9" is a zero pixel and a
// zero B register). Eight channels of one pixel are 16 contiguous bytes of
// NHWC x, i.e. one row of an ldmatrix 8x8 matrix, so A is never built:
// lane l hands ldmatrix.x4 the staged address of its pixel (m-tile row
// l % 16) moved by the tap 2j + l / 16, or of a zero pixel where the tap
// falls outside the image. B of a group (10 registers per lane: w[g·8+n][tap][2t,
// 2t+1] is one aligned 32-bit word of KRSC w) comes straight from global
// memory through L1, once per group per warp.
//
//   plain loops (ref::convfirst_block)            here, per warp and its m-tiles of 16 pixels:
//     for pixel, k (group g = k / 8):               for group g:  b[5][2] ← w (global, L1)
//       t = conv_b[k] + Σ_{tap, ci}                   for m-tile:  acc = 0
//           x[pixel + tap, 8g + ci]·w[k, tap, ci]       for j < 5: a ← ldmatrix.x4(addr[j] + 16·g); mma(acc, a, b[j])
//                                                       T[rows, 8g .. 8g+7] ← round(acc + conv_b)
//
// The conv's accumulator tile is [16 pixels × 8 channels] per group, so the
// warp that computed rows of T is the warp that reads them in the FFN:
// T needs no block barrier, only the staged x does.
//
// Tiles: a CTA owns kBlockRows = 128 consecutive pixels of the flattened
// N·H·W index (tiles may span rows and images), warps own kWarpRows of them.
// Its halo is the whole input rows from one above its first pixel's row to
// one below its last: contiguous in NHWC memory, staged as is with pixels
// kPixelBytes = 2·C + 16 apart (an odd number of 16-byte chunks: the 8 rows of
// one ldmatrix phase, consecutive pixels, fall in 8 different bank groups).
// Taps that leave the image (h or w out of range, including a neighbouring
// image's row inside the staged rows) read the zero pixel instead.
//
// ---- the floor (H200 probe: cuBLAS f16 GEMM 760 TFLOP/s, device copy 4.23 TB/s)
// N=128 56x56 C=64 α=4 f16: 15.0 GMAC = 30.0 GFLOP (conv 12%, FFN 88%),
// min_bytes 103 MB: compute floor 0.040 ms, memory floor 0.024 ms: compute
// bound (intensity 291 FLOP/B against a ridge of ~180). The prediction and
// the measurements are in lessons/10-convfirst/NOTES.md.
//
// Tunables: per channel count a FusedConfig (warps, rows per warp, hidden chunk, blocks per SM), below.
// Supported: f16 and bf16; stride 1 (the stride-2 block runs on 10a and cudnn);
// C = C_out ∈ {16, 32, 64, 128, 256}; hidden a multiple of 8; group width 8;
// shapes whose staged rows fit shared memory (W up to about 20 at C = 256, 90 at C = 128,
// 300 at C = 64: the halo grows with W);
// 16-byte-aligned buffers.
// Run just this: build/convlab run convfirst/gpu/10b_fused --shape N=128,H=56,C=64,dtype=f16
#include <climits>
#include <cstdint>

#include "ops/convfirst.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_hidden_loop.cuh"
#include "gpu/lib/mma.cuh"

namespace convlab {
namespace {

// Fixed by the hardware and the block.
constexpr int kMmaM = 16, kMmaN = 8;
constexpr int kChunkElems = 8;   // 16 bytes = 8 f16/bf16: one cp.async, one ldmatrix row, one group
constexpr int kElemBytes = 2;
constexpr int kGroupWidth = 8;   // one group = one ldmatrix row = one n8 tile of the conv
constexpr int kConvSteps = 5;    // k16 steps over 9 taps × 8 channels (the 5th half zero)
constexpr int kMaxShared = 227 * 1024;

// ---- tunables, one configuration per channel count ----------------------------------
//   Warps      warps per CTA; each owns WarpRows consecutive pixels of the tile
//   WarpRows   pixels per warp (whole m16 tiles): B fragments are reused WarpRows/16 times
//   Chunk      TH, hidden channels per loop step
//   MinBlocks  CTAs per SM promised to ptxas
// The hidden loop and its tile sizes are gpu::FfnLoopConfig's (gpu/lib/ffn_hidden_loop.cuh,
// lesson 08's loop); this rung adds the conv's T tile (the loop's A tile) and the staged x rows.
template <int C, int Warps, int WarpRows, int Chunk, int MinBlocks>
struct FusedConfig : gpu::FfnLoopConfig<C, Warps, WarpRows, Chunk, MinBlocks> {
  using Loop = gpu::FfnLoopConfig<C, Warps, WarpRows, Chunk, MinBlocks>;
  static constexpr int kGroups = C / kGroupWidth;
  static constexpr int kTRowChunks = Loop::kARowChunks;
  static constexpr int kPixelBytes = C * kElemBytes + 16;  // staged x pixel
  static constexpr int kPixelChunks = C / kChunkElems;     // 16-byte chunks of a pixel's channels
  static constexpr int kTTileBytes = Loop::kATileBytes;
  // [stage 0 | stage 1 | T tile | zero pixel | staged x rows (run-time size)]
  static constexpr int kFixedBytes = 2 * Loop::kStageBytes + kTTileBytes + kPixelBytes;

  static_assert(Loop::kKSteps1 * 2 == kGroups, "two conv groups (n8 tiles) make one k16 step of the expand GEMM");
  static_assert((kPixelBytes / 16) % 2 == 1, "odd number of 16-byte chunks per staged pixel: no bank conflicts");
  static_assert((kPixelChunks & (kPixelChunks - 1)) == 0, "staging divides by the chunks per pixel with a shift");
  static_assert(Loop::kStageBytes % 128 == 0, "swizzled tiles start on 128-byte lines");
  static_assert(kFixedBytes % 16 == 0, "the staged rows start 16-byte aligned");
  static_assert(kFixedBytes < kMaxShared, "the fixed part of shared memory fits an SM");
};

// Registers per lane: Z kMTiles·kZTiles·4, H_r kMTiles·kHTiles·4 (as lesson 08's fused FFN).
using Config16 = FusedConfig<16, 4, 32, 64, 2>;
using Config32 = FusedConfig<32, 4, 32, 64, 2>;
using Config64 = FusedConfig<64, 4, 32, 64, 2>;
using Config128 = FusedConfig<128, 8, 16, 64, 1>;
using Config256 = FusedConfig<256, 8, 16, 32, 1>;

// Staged input rows a CTA may need: the rows its kBlockRows pixels touch
// (at most ceil((kBlockRows − 1)/W) + 1) plus one above and one below,
// never more than the N·H rows there are plus those two.
template <class Cfg> int staged_rows(const ConvFirstProblem& p) {
  const int64_t touched = (Cfg::kBlockRows - 1 + p.W - 1) / p.W + 1;
  return int(std::min<int64_t>(touched + 2, int64_t(p.N) * p.H + 2));
}
template <class Cfg> std::size_t shared_bytes(const ConvFirstProblem& p) {
  return Cfg::kFixedBytes + std::size_t(staged_rows<Cfg>(p)) * p.W * Cfg::kPixelBytes;
}

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. x [N, H, W, C], conv_w [C, 3, 3, 8], conv_b [C], U [C, hidden],
// a [hidden], V [hidden, C], b [C], y [N, H, W, C]; Element = __half or
// __nv_bfloat16, 16-byte-aligned x, U, V, y; fp32 accumulation; T rounded to
// Element once (it is the expand GEMM's A operand), H_r once, y once.
// Grid: ceil(M / kBlockRows) CTAs, M = N·H·W; shared_bytes<Cfg>(p) dynamic shared.
// Edge duties: staged rows outside [0, N·H) and hidden columns ≥ hidden are
// zero-filled (cp.async source size 0); pixels ≥ M compute on the zero
// pixel and are never stored; taps outside the image read the zero pixel.
template <class Cfg, class Element>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    convfirst_fused_kernel(int M, int H, int W, int hidden, int staged_row_capacity, ConvFirstActivation act,
                           const Element* __restrict__ X, const Element* __restrict__ Wc,
                           const Element* __restrict__ Bc, const Element* __restrict__ U,
                           const Element* __restrict__ A, const Element* __restrict__ V,
                           const Element* __restrict__ B, Element* __restrict__ Y) {
  constexpr int C = Cfg::kC, TH = Cfg::kChunk;
  using SwizzleT = gpu::ChunkSwizzle<Cfg::kTRowChunks>;

  extern __shared__ __align__(128) unsigned char shared[];
  const uint32_t stages_base = gpu::shared_address(shared);
  const uint32_t t_base = stages_base + 2 * Cfg::kStageBytes;
  const uint32_t zero_pixel = t_base + Cfg::kTTileBytes;
  const uint32_t x_base = zero_pixel + Cfg::kPixelBytes;

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int block_pixel0 = blockIdx.x * Cfg::kBlockRows;  // M < 2^31
  const int warp_row0 = warp * Cfg::kWarpRows;
  const int chunks = gpu::ceil_div(hidden, TH);
  const int NH = M / W;  // image rows over the batch
  const int first_row = block_pixel0 / W - 1;  // flattened image row of staged row 0 (may be −1)
  const int last_pixel = min(block_pixel0 + Cfg::kBlockRows, M) - 1;
  const int rows_staged = last_pixel / W + 1 - first_row + 1;  // ≤ staged_row_capacity

  // ---- stage the halo rows of x (one contiguous range of NHWC memory) and the zero pixel ----
  {
    const int pieces = rows_staged * W * Cfg::kPixelChunks;
    const int64_t x_first = int64_t(first_row) * W * C;  // element offset of staged row 0 (negative: row −1)
    for (int idx = threadIdx.x; idx < pieces; idx += Cfg::kThreads) {
      const int pixel = idx / Cfg::kPixelChunks, piece = idx % Cfg::kPixelChunks;
      const int row = first_row + pixel / W;
      const bool in = row >= 0 && row < NH;
      gpu::cp_async_16(x_base + pixel * Cfg::kPixelBytes + piece * 16,
                       in ? X + (x_first + int64_t(pixel) * C + piece * kChunkElems) : X, in);
    }
    for (int i = threadIdx.x; i < Cfg::kPixelBytes / 4; i += Cfg::kThreads)
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(zero_pixel + 4 * i), "r"(0u) : "memory");
  }
  (void)staged_row_capacity;  // the host sized shared memory for it

  // Commit groups: [x + chunk 0] [chunk 1 or empty], as the hidden loop expects.
  gpu::load_ffn_chunk<Cfg>(stages_base, 0, 0, hidden, U, V);
  gpu::cp_async_commit();
  if (chunks > 1) gpu::load_ffn_chunk<Cfg>(stages_base, 1, 1, hidden, U, V);
  gpu::cp_async_commit();
  gpu::cp_async_wait<1>();  // my x pieces and chunk 0 have landed
  __syncthreads();          // everyone's have, and the zero pixel is written

  // ---- where this lane's pixels sit in the staged rows -------------------------------------
  // staged_of(m) = byte address of pixel m's own staged copy; r, s = tap offsets −1..1.
  const auto tap_address = [&](int m, int dr, int ds) -> uint32_t {
    if (m >= M) return zero_pixel;
    const int row = m / W, w = m - row * W, h = row % H;
    if (h + dr < 0 || h + dr >= H || w + ds < 0 || w + ds >= W) return zero_pixel;
    return x_base + ((row + dr - first_row) * W + w + ds) * Cfg::kPixelBytes;
  };

  // ---- 1. the grouped conv: T = gconv3x3(x) + conv_b, rows of this warp ------------------------
  {
    const gpu::MatrixCoord a_row = gpu::ldmatrix_x4_row_address(lane);  // pixel row lane % 16, k-half lane / 16
    uint32_t a_addr[Cfg::kMTiles][kConvSteps];
#pragma unroll
    for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
      const int m = block_pixel0 + warp_row0 + mi * kMmaM + a_row.row;
#pragma unroll
      for (int j = 0; j < kConvSteps; ++j) {
        const int tap = 2 * j + a_row.col / 8;  // 0..9; tap 9 does not exist
        a_addr[mi][j] = tap < 9 ? tap_address(m, tap / 3 - 1, tap % 3 - 1) : zero_pixel;
      }
    }
    // TUTORIAL: the plain order would be "for group: for m-tile: for j: mma", a chain of
    // five dependent mma per accumulator and nothing else for the warp to issue meanwhile.
    // Instead every (m-tile, group) accumulator of the warp is live at once (kMTiles ×
    // kGroups × 4 floats), and the loop runs over the five k-steps outermost: per step,
    // the B fragments of all groups are fetched first (independent loads), then A and the
    // mma of group pairs, each mma independent of its neighbours.
    const uint32_t* w_words = reinterpret_cast<const uint32_t*>(Wc);  // [C][9][8] as pairs of channels
    float acc[Cfg::kMTiles][Cfg::kGroups][4];
#pragma unroll
    for (int grp = 0; grp < Cfg::kGroups; ++grp) {
      const float bias0 = gpu::to_float(Bc[grp * kGroupWidth + 2 * t]);  // the conv bias starts the sums
      const float bias1 = gpu::to_float(Bc[grp * kGroupWidth + 2 * t + 1]);
#pragma unroll
      for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
        acc[mi][grp][0] = bias0, acc[mi][grp][1] = bias1;
        acc[mi][grp][2] = bias0, acc[mi][grp][3] = bias1;
      }
    }
#pragma unroll
    for (int j = 0; j < kConvSteps; ++j) {
      // B[k][n] = w[8·grp + n][tap 2j + k / 8][k % 8]: lane (g, t) holds n = g, k = 2t, 2t+1 (b0)
      // and k = 8 + 2t, 9 + 2t (b1), i.e. channels 2t, 2t+1 of taps 2j and 2j+1 (tap 9: zero).
      uint32_t b[Cfg::kGroups][2];
#pragma unroll
      for (int grp = 0; grp < Cfg::kGroups; ++grp) {
        const int k = grp * kGroupWidth + g;
        b[grp][0] = __ldg(w_words + (k * 72 + (2 * j) * 8 + 2 * t) / 2);
        b[grp][1] = j < 4 ? __ldg(w_words + (k * 72 + (2 * j + 1) * 8 + 2 * t) / 2) : 0u;
      }
#pragma unroll
      for (int grp = 0; grp < Cfg::kGroups; grp += 2) {
        uint32_t a[2][Cfg::kMTiles][4];
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
          for (int mi = 0; mi < Cfg::kMTiles; ++mi) gpu::ldmatrix_x4(a[e][mi], a_addr[mi][j] + (grp + e) * 16);
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
          for (int mi = 0; mi < Cfg::kMTiles; ++mi) gpu::mma_m16n8k16<Element>(acc[mi][grp + e], a[e][mi], b[grp + e]);
      }
    }
    // acc[mi][grp]: rows g and g+8 of m-tile mi, channels 8·grp + 2t, +1 → T, one 32-bit store each.
#pragma unroll
    for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
      for (int grp = 0; grp < Cfg::kGroups; ++grp) {
        const int row = warp_row0 + mi * kMmaM + g;
        const uint32_t lo = t_base + SwizzleT::byte_offset(row, grp) + 4 * t;
        const uint32_t hi = t_base + SwizzleT::byte_offset(row + 8, grp) + 4 * t;
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(lo), "r"(gpu::pack_pair<Element>(acc[mi][grp][0], acc[mi][grp][1]))
                     : "memory");
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(hi), "r"(gpu::pack_pair<Element>(acc[mi][grp][2], acc[mi][grp][3]))
                     : "memory");
      }
  }
  __syncwarp();  // this warp's rows of T are written (only this warp reads them)

  // ---- 2. Z starts as the residual plus b (Fig. 7b: "initialise the accumulators with the input tile")
  float z_acc[Cfg::kMTiles][Cfg::kZTiles][4];
#pragma unroll
  for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = block_pixel0 + warp_row0 + mi * kMmaM + g + 8 * half;
      const uint32_t centre = tap_address(m, 0, 0);
#pragma unroll
      for (int ni = 0; ni < Cfg::kZTiles; ++ni) {
        const int col = ni * kMmaN + 2 * t;
        uint32_t pair;
        asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(pair) : "r"(centre + col * kElemBytes) : "memory");
        const Element* e = reinterpret_cast<const Element*>(&pair);
        z_acc[mi][ni][2 * half] = gpu::to_float(e[0]) + gpu::to_float(B[col]);
        z_acc[mi][ni][2 * half + 1] = gpu::to_float(e[1]) + gpu::to_float(B[col + 1]);
      }
    }

  // ---- 3. Eq. 32 over hidden chunks: lesson 08's loop with A = T (gpu/lib/ffn_hidden_loop.cuh) ----
  //
  // TUTORIAL: the plain loop is  for r: { H = φ(T·U^r + a_r); Z += H·V_r; }
  // U^r, V_r are double-buffered (chunk r+1 in flight while chunk r is used);
  // H_r never leaves the warp's registers.
  gpu::ffn_hidden_loop<Cfg>(z_acc, t_base, stages_base, warp_row0, hidden, A, U, V,
                            gpu::ReluOrSilu{act == ConvFirstActivation::relu});

  // ---- 4. one store of y (b and the residual are already in Z) --------------------------------
  gpu::store_z<Cfg>(Y, z_acc, block_pixel0 + warp_row0, M);
}

// ---- launcher ------------------------------------------------------------------------------

template <class Cfg> bool fits(const ConvFirstProblem& p) { return shared_bytes<Cfg>(p) <= std::size_t(kMaxShared); }

bool config_fits(const ConvFirstProblem& p) {
  switch (p.C) {
    case 16: return fits<Config16>(p);
    case 32: return fits<Config32>(p);
    case 64: return fits<Config64>(p);
    case 128: return fits<Config128>(p);
    case 256: return fits<Config256>(p);
    default: return false;
  }
}

bool supports(const ConvFirstProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && p.stride == 1 && p.group_width == kGroupWidth &&
         p.C_out == p.C && p.hidden % kChunkElems == 0 && p.input_pixels() * p.C < 9.0e18 &&
         p.input_pixels() + 256 < double(INT_MAX) && config_fits(p);
}

template <class Cfg, class Element> void launch(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a) {
  const auto kernel = convfirst_fused_kernel<Cfg, Element>;
  const std::size_t shared = shared_bytes<Cfg>(p);
  gpu::allow_dynamic_shared(kernel, shared, "convfirst_fused_kernel");
  const int M = int(p.input_pixels());
  const int blocks = gpu::ceil_div(M, Cfg::kBlockRows);
  kernel<<<blocks, Cfg::kThreads, shared>>>(
      M, p.H, p.W, p.hidden, staged_rows<Cfg>(p), p.activation, static_cast<const Element*>(a.x),
      static_cast<const Element*>(a.conv_w), static_cast<const Element*>(a.conv_b), static_cast<const Element*>(a.u),
      static_cast<const Element*>(a.a), static_cast<const Element*>(a.v), static_cast<const Element*>(a.b),
      static_cast<Element*>(a.y));
  gpu::check_launch("convfirst_fused_kernel");
}

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a) {
  if (!gpu::aligned_16(a.x) || !gpu::aligned_16(a.u) || !gpu::aligned_16(a.v) || !gpu::aligned_16(a.y) ||
      reinterpret_cast<uintptr_t>(a.conv_w) % 4 != 0)
    throw Unsupported("convfirst/gpu/10b_fused: x, u, v and y must be 16-byte aligned, conv_w 4-byte aligned");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    switch (p.C) {
      case 16: launch<Config16, Element>(p, a); break;
      case 32: launch<Config32, Element>(p, a); break;
      case 64: launch<Config64, Element>(p, a); break;
      case 128: launch<Config128, Element>(p, a); break;
      case 256: launch<Config256, Element>(p, a); break;
      default: throw Unsupported("convfirst/gpu/10b_fused: C must be 16, 32, 64, 128 or 256");
    }
  });
}

const Register<ConvFirstProblem> reg{{
    .name = "10b_fused",
    .device = Device::gpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .idea = "Fig. 7b in one kernel: halo tile in smem, gconv on mma.sync into a T tile, Z = x + b, hidden-chunk "
            "loop H = φ(T·U_r + a_r) in registers, Z += H·V_r; one store of y",
}};

}  // namespace
}  // namespace convlab
