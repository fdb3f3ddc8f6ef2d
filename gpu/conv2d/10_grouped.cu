// gpu/conv2d/10_grouped.cu — lesson 06, GPU rung 10: grouped convolution, one group per tensor-core tile.
//
// Idea over 09_depthwise: with a group width T = 8 (ConvFirst) or 32
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
// In the mma's A fragment (gpu/common/mma.cuh) lane 4g + t holds, for rows
// (pixels) g and g + 8, the reduction pairs k = 2t, 2t+1 and 8 + 2t, 9 + 2t:
// with k ↔ (tap, channel) as above, every pair is TWO ADJACENT CHANNELS of one
// pixel at one tap — one 32-bit word of NHWC x. So A needs no ldmatrix and no
// im2col: each fragment register is one 32-bit shared-memory load from a
// staged tile of x, and the tap only moves the pixel address. Likewise B's
// pairs are two adjacent t of one row of w (KRSC: [K, R, S, T]), one 32-bit
// load, and C's pairs are two adjacent output channels: one half2 store.
//
//   plain loops:                              one block:
//     for n, p, q, k (g = k / Kg):              stage x[n, rows of the tile + halo, cols + halo, slab of 64 channels]
//       acc = Σ_{r,s,t} x[.., g·T + t]            into shared memory (16-byte loads, zeros in the padding)
//                     · w[k, r, s, t]           each warp, for its (16-pixel m-tile, group) tasks:
//       y[n, p, q, k] = acc                       for each k16 step of the R·S·T reduction:
//                                                   a[4]  ← 4 × 32-bit shared loads (2 pixels × 2 pairs)
//                                                   for each 8-channel n-tile of the group:
//                                                     b[2] ← 2 × 32-bit loads of w (L1-resident)
//                                                     mma.sync m16n8k16, fp32 accumulators
//                                                 round to fp16, half2 stores
//
// Tile: kTileP = 4 output rows × up to kTileQ = 32 output columns (the rows
// of a 28-wide layer are 112 pixels = 7 m-tiles, no waste), a channel slab
// of 64 input channels (8 groups of 8, 2 of 32) and their outputs. The shared
// tile's pixels are 64·2 + 16 bytes apart: 36 words, so the 8 pixels a
// fragment load touches fall in 8 different 4-bank groups (conflict-free at
// stride 1, 2-way at stride 2).
//
// Floor and prediction, N=128 28×28 C=K=256 T=8 3x3 s1 fp16 on an H200:
// 3.70 GFLOP, 102.8 MB compulsory (intensity 36). Memory floor at 4.22 TB/s:
// 24.4 µs; the tensor-core floor is ~6 µs (mma.sync at ~600 TFLOP/s), and the
// CUDA-core fp32 floor ~74 µs — why FMA cannot reach cuDNN's 32 TFLOP/s
// (116 µs) with room to spare and mma can. Per m-tile × group task a warp
// issues 5 k-steps × (4 LDS + 2 LDG + 1 mma): ~18 M warp instructions in all,
// ~17 µs of issue on 132 SMs. x is read ~1.6× through L2 (row and column
// halo). Expected: 40–70 µs, 50–90 TFLOP/s, 1.6–2.8× cuDNN. T = 32: 14.8
// GFLOP, 4 n-tiles per A fragment, expected ~150–250 TFLOP/s.
//
// Measured on the H200 (bench/results/2026-11-30-h200-3/bench-conv2d.json;
// all tests pass, memcheck 0 errors, racecheck 0 hazards), N=128 28×28
// C=K=256 3x3 fp16:
//
//   T = 8  (groups=32)   09 0.165 ms  22.5 TFLOP/s   cuDNN 0.119 ms  31.2 TFLOP/s   09/cuDNN 0.72×
//   T = 32 (groups=8)    09 0.359 ms  41.2 TFLOP/s   cuDNN 0.087 ms   169 TFLOP/s   (06: 0.210 ms, 70.5)
//
// Both are far under the prediction (T = 8: 2.4–4× the predicted time;
// T = 32: 3.6–6×), and the goal for T = 8, at least cuDNN's speed, is NOT MET.
// The time is ~10× the issue estimate above, so the warps are waiting,
// not issuing. Likely causes, not yet measured: each mma's B fragment is a
// global (L1/L2) load issued just before it, inside a k-loop that is not
// software-pipelined, and a warp has one (m-tile, group) task in flight; a
// block stages its tile, passes one barrier and computes, with no overlap
// of the next tile's loads. At T = 32 (8 LDG + 4 LDS per 4 mma) lesson 04's
// pipelined tensor-core GEMM (06: ldmatrix, cp.async ring) is already 1.7×
// faster. Next steps: keep B in registers (T = 8: 5 k-steps × 2 registers
// per lane cover a group's whole filter) and let a warp sweep several
// m-tiles of one group with it; prefetch the next k-step's A; overlap
// staging with compute (cp.async, two tiles); check with Nsight Compute.
//
// fp32, and fp16 shapes the mma path cannot take (T not in {8, 16, 32, 64},
// K/groups not a multiple of 8 up to 32, unaligned tensors), run an FMA
// kernel on the CUDA cores: one thread per (group, output pixel) with the
// group's K/groups ≤ 32 accumulators in registers, weights read as warp-wide
// broadcasts (wider groups: one thread per output). Prediction for the T = 8
// fp32 shape: load-issue bound at about one weight load per FMA, ~10–20
// TFLOP/s (0.2–0.4 ms), against a 74 µs floor at the SGEMM rate. Measured:
// 1.354 ms, 2.7 TFLOP/s — 1.03× cuDNN (1.393 ms) and 1.10× 05_implicit_gemm
// (1.489 ms), but 4–7× under the prediction. A likely cause: the threads of
// a warp are consecutive pixels, so each x load touches 32 sectors 1 KiB
// apart (C floats), and y is written the same way.
// Supported: f32 and f16, groups > 1 and not depthwise (T = Kg = 1 is 08's);
// any R·S ≤ 64 taps (mma path; the plain path has no limit), stride, pad.
// Run just this: build/convlab run conv2d/cuda/10_grouped --shape N=128,H=28,C=256,K=256,R=3,pad=1,groups=32,dtype=f16
#include <climits>
#include <cstdint>
#include <cstring>

#include "core/ops/conv2d.hpp"
#include "gpu/common/check.cuh"
#include "gpu/common/conv_geometry.cuh"
#include "gpu/common/element.cuh"
#include "gpu/common/mma.cuh"

namespace convlab {
namespace {

using gpu::ConvGeometry;

// ---- tunables --------------------------------------------------------------------
constexpr int kThreads = 256;                  // 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kTileP = 4;                      // output rows per block tile
constexpr int kTileQ = 32;                     // most output columns per block tile
constexpr int kSlabChannels = 64;              // input channels per block (whole groups)
constexpr int kPixelBytes = kSlabChannels * 2 + 16;  // shared-memory stride of one staged pixel
constexpr int kMaxNTiles = 4;                  // K/groups ≤ 32: accumulators kMaxNTiles × 4 floats
constexpr int kMaxTaps = 64;                   // R·S of the mma path (tap offset table size)
constexpr int kMaxShared = 160 * 1024;         // staged tile limit (dynamic, opted in)
constexpr int kStageBatch = 4;                 // 16-byte loads in flight per thread while staging
constexpr int kMaxFmaKg = 32;                  // FMA path: accumulators per thread (one group's outputs)
static_assert(kPixelBytes % 16 == 0, "staged pixels start 16-byte aligned (16-byte stores)");
static_assert((kPixelBytes / 4) % 32 == 4, "pixel stride ≡ 4 banks: 8 consecutive pixels, 8 bank groups");
static_assert((kTileP * kTileQ) % 16 == 0, "a full tile is whole m16 tiles");
static_assert(kSlabChannels % 8 == 0, "the slab is whole 16-byte chunks");

struct TileShape {
  int tile_q;        // output columns per tile: min(Q, kTileQ)
  int rows_in;       // staged input rows:    (kTileP − 1)·stride + R
  int cols_in;       // staged input columns: (tile_q − 1)·stride + S
  std::size_t shared_bytes() const { return std::size_t(rows_in) * cols_in * kPixelBytes; }
};

TileShape tile_shape(const ConvProblem& p) {
  const int tile_q = p.Q() < kTileQ ? p.Q() : kTileQ;
  return {tile_q, (kTileP - 1) * p.stride + p.R, (tile_q - 1) * p.stride + p.S};
}

bool mma_eligible(const ConvProblem& p) {
  const int T = p.T(), Kg = p.K_per_group();
  return p.dtype == DType::f16 && (T == 8 || T == 16 || T == 32 || T == 64) && Kg % 8 == 0 &&
         Kg <= 8 * kMaxNTiles && p.R * p.S <= kMaxTaps && tile_shape(p).shared_bytes() <= kMaxShared &&
         int64_t(p.N) * gpu::ceil_div(p.P(), kTileP) * gpu::ceil_div(p.Q(), kTileQ) <= gpu::kMaxGridX &&
         gpu::ceil_div(p.C, kSlabChannels) <= gpu::kMaxGridYZ;
}

// Kernel contract (mma path):
//   x [N, H, W, C], w [K, R, S, T], y [N, P, Q, K], fp16, x 16-byte aligned,
//   T ∈ {8, 16, 32, 64} (so C % 8 == 0), Kg = K/groups ∈ {8, 16, 24, 32}.
//   blockIdx.x = (n, tile row, tile column) of kTileP × tile_q output pixels;
//   blockIdx.y = slab of kSlabChannels input channels = kSlabChannels/T groups
//   (fewer in the last slab when C is not a multiple). Dynamic shared memory:
//   the staged input tile, rows_in × cols_in pixels, kPixelBytes apart.
//   Edge duties: staged pixels outside the image and channels past C are
//   zeros; m-tile rows past the tile or the image compute on pixel 0 and are
//   not stored; reduction indices past R·S·T read zeros.
template <int kT>
__global__ void __launch_bounds__(kThreads)
    grouped_mma(ConvGeometry g, TileShape ts, int tiles_p, int tiles_q, const __half* __restrict__ x,
                const __half* __restrict__ w, __half* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char tile[];  // [rows_in][cols_in] pixels, kPixelBytes each
  __shared__ int tap_offset[kMaxTaps];                   // tap (r, s) → (r·cols_in + s) pixels

  const int tile_index = blockIdx.x;
  const int tq = tile_index % tiles_q, tp = (tile_index / tiles_q) % tiles_p, n = tile_index / (tiles_q * tiles_p);
  const int p0 = tp * kTileP, q0 = tq * ts.tile_q;
  const int c_slab = blockIdx.y * kSlabChannels;
  const int slab_channels = min(kSlabChannels, g.C - c_slab);  // a multiple of kT
  const int slab_groups = slab_channels / kT;
  const int taps = g.R * g.S;

  // ---- stage x: 16-byte chunks, 8 per pixel, consecutive threads along a pixel's channels ----
  constexpr int kChunksPerPixel = kSlabChannels / 8;
  const int ih0 = p0 * g.stride - g.pad, iw0 = q0 * g.stride - g.pad;
  const int staged_chunks = ts.rows_in * ts.cols_in * kChunksPerPixel;
  // kStageBatch loads in flight per thread before their stores (one load, one
  // store, repeat would wait a full memory latency per chunk).
  for (int base = threadIdx.x; base < staged_chunks; base += kThreads * kStageBatch) {
    uint4 v[kStageBatch];
#pragma unroll
    for (int b = 0; b < kStageBatch; ++b) {
      const int i = base + b * kThreads;
      const int chunk = i % kChunksPerPixel, pixel = i / kChunksPerPixel;
      const int ih = ih0 + pixel / ts.cols_in, iw = iw0 + pixel % ts.cols_in;
      const int c = chunk * 8;
      v[b] = make_uint4(0, 0, 0, 0);
      if (i < staged_chunks && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W && c < slab_channels)
        v[b] = __ldg(reinterpret_cast<const uint4*>(x + ((int64_t(n) * g.H + ih) * g.W + iw) * g.C + c_slab + c));
    }
#pragma unroll
    for (int b = 0; b < kStageBatch; ++b) {
      const int i = base + b * kThreads;
      if (i < staged_chunks)
        *reinterpret_cast<uint4*>(tile + (i / kChunksPerPixel) * kPixelBytes + (i % kChunksPerPixel) * 16) = v[b];
    }
  }
  for (int t = threadIdx.x; t < taps; t += kThreads) tap_offset[t] = (t / g.S) * ts.cols_in + t % g.S;
  __syncthreads();  // the only barrier: from here on warps read shared memory only

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gi = lane / 4, ti = lane % 4;  // mma "group" and "thread in group"
  const int tile_rows = min(kTileP, g.P - p0), tile_cols = min(ts.tile_q, g.Q - q0);
  const int tile_pixels = kTileP * ts.tile_q;
  const int m_tiles = gpu::ceil_div(tile_pixels, 16);
  const int depth = taps * kT;                         // R·S·T reduction indices
  const int k_steps = gpu::ceil_div(depth, 16);
  const int Kg = g.K_per_group, n_tiles = Kg / 8;
  const int tasks = m_tiles * slab_groups;

  for (int task = warp; task < tasks; task += kWarps) {
    const int mt = task / slab_groups, gs = task % slab_groups;  // m-tile, group within the slab
    const int group = blockIdx.y * (kSlabChannels / kT) + gs;

    // The two pixels this lane's A rows hold: flat tile index → (row, column) of the tile.
    int pixel_base[2];   // staged pixel of tap (0, 0)
    bool row_valid[2];
    int64_t out_offset[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int flat = mt * 16 + gi + 8 * h;
      const int row = flat / ts.tile_q, col = flat % ts.tile_q;
      row_valid[h] = flat < tile_pixels && row < tile_rows && col < tile_cols;
      pixel_base[h] = row_valid[h] ? row * g.stride * ts.cols_in + col * g.stride : 0;
      out_offset[h] = ((int64_t(n) * g.P + p0 + row) * g.Q + q0 + col) * g.K + int64_t(group) * Kg;
    }
    const unsigned char* lane_tile = tile + (gs * kT + 2 * ti) * 2;  // this lane's channel pair within a pixel

    float acc[kMaxNTiles][4];
#pragma unroll
    for (int nt = 0; nt < kMaxNTiles; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[nt][e] = 0.f;

    for (int ks = 0; ks < k_steps; ++ks) {
      // A: registers 0/1 = k 0–7 (rows g, g+8), 2/3 = k 8–15. Each 8-wide k half
      // is 8 channels of one tap (T % 8 == 0): tap = j0 / T, first channel j0 % T.
      uint32_t a[4];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int j0 = ks * 16 + half * 8;  // warp-uniform
        if (j0 < depth) {
          const int tap = j0 / kT, t0 = j0 % kT;
          const int shift = tap_offset[tap];
#pragma unroll
          for (int h = 0; h < 2; ++h)
            a[2 * half + h] = *reinterpret_cast<const uint32_t*>(lane_tile + (pixel_base[h] + shift) * kPixelBytes +
                                                                 t0 * 2);
        } else {
          a[2 * half] = a[2 * half + 1] = 0u;  // past the reduction: zeros
        }
      }
      // B: for n-tile nt, column n = gi is output channel group·Kg + nt·8 + gi;
      // register r holds j = ks·16 + 8r + 2ti, +1 of that row of w.
#pragma unroll
      for (int nt = 0; nt < kMaxNTiles; ++nt) {
        if (nt >= n_tiles) break;
        const __half* w_row = w + (int64_t(group) * Kg + nt * 8 + gi) * depth;
        uint32_t b[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int j = ks * 16 + 8 * r + 2 * ti;
          b[r] = j < depth ? __ldg(reinterpret_cast<const unsigned int*>(w_row + j)) : 0u;
        }
        gpu::mma_m16n8k16<__half>(acc[nt], a, b);
      }
    }

    // C: c0, c1 = row gi, channels 2ti, 2ti+1; c2, c3 = row gi + 8.
#pragma unroll
    for (int nt = 0; nt < kMaxNTiles; ++nt) {
      if (nt >= n_tiles) break;
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (row_valid[h])
          *reinterpret_cast<__half2*>(y + out_offset[h] + nt * 8 + 2 * ti) =
              __floats2half2_rn(acc[nt][2 * h], acc[nt][2 * h + 1]);
    }
  }
}

// FMA path (fp32, and fp16 shapes the mma path cannot take), K/groups ≤
// kMaxFmaKg: one thread per (group, output pixel) computes all Kg outputs of
// its group. Threads are numbered pixel-fastest within a group, so the 32
// threads of a warp share the group and every weight load is one broadcast
// address; each x value loaded feeds Kg FMAs.
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

template <int kT> void launch_mma(const ConvProblem& p, const Args<ConvProblem>& args) {
  const auto kernel = grouped_mma<kT>;
  static const bool opted_in = [&] {
    gpu::check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxShared),
                    "cudaFuncSetAttribute(grouped_mma, MaxDynamicSharedMemorySize)");
    return true;
  }();
  (void)opted_in;
  const TileShape ts = tile_shape(p);
  const int tiles_p = gpu::ceil_div(p.P(), kTileP), tiles_q = gpu::ceil_div(p.Q(), ts.tile_q);
  const dim3 grid(unsigned(int64_t(p.N) * tiles_p * tiles_q), unsigned(gpu::ceil_div(p.C, kSlabChannels)));
  kernel<<<grid, kThreads, ts.shared_bytes()>>>(gpu::geometry_of(p), ts, tiles_p, tiles_q,
                                                static_cast<const __half*>(args.x),
                                                static_cast<const __half*>(args.w), static_cast<__half*>(args.y));
  gpu::check_launch("grouped_mma");
}

void run(const ConvProblem& p, const Args<ConvProblem>& args) {
  // The mma path also needs w's rows and y's pairs 4-byte aligned: R·S·T and
  // K are even there, so the base pointers decide.
  if (mma_eligible(p) && gpu::aligned_16(args.x) && gpu::aligned_16(args.w) && gpu::aligned_16(args.y)) {
    switch (p.T()) {
      case 8: launch_mma<8>(p, args); return;
      case 16: launch_mma<16>(p, args); return;
      case 32: launch_mma<32>(p, args); return;
      case 64: launch_mma<64>(p, args); return;
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
    .name = "10_grouped",
    .device = Device::cuda,
    .lesson = 6,
    .supports = supports,
    .run = run,
    .idea = "grouped, T = 8..64: one group = one mma.sync m16n8k16 column of 8 outputs, A fragments as 32-bit "
            "loads of a staged NHWC tile (no im2col, no ldmatrix); f32: FMA, a group's outputs per thread",
}};

}  // namespace
}  // namespace convlab
