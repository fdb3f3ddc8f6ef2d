// gpu/conv2d/06a_depthwise.cu — lesson 06, GPU rung 06a: depthwise convolution at memory speed.
//
// Idea over 04b_implicit_gemm_tensor_core: a depthwise conv (groups = C = K,
// T = 1) has nothing for tensor cores to do. Per output element it does R·S
// multiply-adds and the compulsory traffic is one read of x and one write of
// y, so its intensity is R·S/2 flops per byte at fp16 (Eq. 27: 4.5 for 3x3).
// Its FMAs run on the CUDA cores in fp32 (tensor cores have nothing to do
// here), whose ridge on an H200 is ~12 flop/byte (50 TFLOP/s over 4.2 TB/s):
// memory bound by a factor of ~2.7 — the FMA floor (~14 µs) is well under
// the byte floor (~37 µs) — so the goal is to move x and y at the copy
// bandwidth, without letting the arithmetic get in the way. Everything below
// is about bytes:
//
//   1. Wide, coalesced accesses along C. In NHWC the channels of a pixel are
//      contiguous and channel c of y depends on channel c of x only, so a
//      thread owns a chunk of kVec channels — 16 bytes: 8 halves or 4 floats —
//      loaded with one 128-bit load, and neighbouring lanes own neighbouring
//      chunks: a warp reads whole 128-byte lines.
//   2. Register reuse along W. A thread computes kStrip = 4 output pixels of
//      one output row. For each of the R input rows it walks the
//      (kStrip − 1)·stride + S input columns once, converting each chunk to
//      fp32 once and adding it into every output of the strip that uses it
//      (3x3, stride 1: 6 loads feed 12 tap-products instead of 12 loads).
//      The R-fold reuse across output rows is left to L1/L2: the rows a block
//      needs are read by its neighbours at the same time.
//   3. Weights in shared memory, transposed. w is [C, R, S]; the block's
//      channel slab of it goes to shared memory as [tap][channel] floats
//      once per block, so a tap's kVec weights are one or two 16-byte reads
//      (weight_slot below orders them so those reads are conflict-free).
//   4. fp32 accumulation (9 products: fp16 accumulation would pass, but
//      costs nothing to avoid), one rounding to fp16 per output.
//
//   plain loops:                                   one thread, 3x3 path:
//     for n, p, q, c:                                (n, p, q0) = item; c0 = chunk·kVec
//       acc = Σ_{r,s in image} x[n, ih, iw, c]         for r < 3 (row in the image):
//                            · w[c, r, s]                 wr[s][:] = wsm[r·3 + s][c0 ..]       3 × kVec floats
//       y[n, p, q, c] = acc                              for j < (kStrip−1)·stride + 3:          input columns
//                                                           v = x[n, ih, q0·stride − pad + j, c0 .. c0+kVec)  (0 outside)
//                                                           for i < kStrip with s = j − i·stride in [0, 3):
//                                                             acc[i][:] += wr[s][:] · v
//                                                       y[n, p, q0 + i, c0 ..] = acc[i]      (q0 + i < Q)
//
// Grid: blockIdx.y = channel slab (blockDim.x chunks of kVec channels),
// blockIdx.x and threadIdx.y = (n, p, strip) items (the 3x3 path numbers
// them so that one warp's items are the same strip of consecutive rows). The grid is one wave of
// resident blocks and each block loops over items (grid-stride), so a block
// stages its weights once. Filters other than 3x3 or strides other than 1
// and 2 run a generic kernel with run-time loops and one output per thread
// (same chunks, same shared weights). C not a multiple of kVec, or
// misaligned tensors, run the same kernels with kVec = 1.
//
//   shape (N=128 28×28 3x3)   06a_depthwise                cuDNN
//   C=384 fp32                0.116 ms  2.67 TB/s (63%)   2.06 ms   0.15 TB/s
//   C=384 fp16                0.144 ms  1.07 TB/s (25%)   0.084 ms  1.83 TB/s (2.23 in a later run)
//   C=256 fp16                0.104 ms  0.99 TB/s         0.067 ms  1.54 TB/s
//
// Supported: f32 and f16; groups == C == K (no channel multiplier); any R, S
// with R·S ≤ 1024, any stride and pad; C ≤ 65535.
// Run just this: build/convlab run conv2d/gpu/06a_depthwise --shape N=128,H=28,C=384,K=384,R=3,pad=1,groups=384,dtype=f16
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/element.cuh"

namespace convlab {
namespace {

using gpu::ConvGeometry;

// ---- tunables --------------------------------------------------------------------
constexpr int kThreads = 256;              // per block: blockDim.x (channel chunks) × blockDim.y (items)
constexpr int kStrip = 4;                  // output pixels along W per thread on the 3x3 path
constexpr int kMaxLanes = 32;              // channel chunks per block (blockDim.x)
constexpr int kMaxTaps = 1024;             // R·S limit: the shared weight slab must fit 48 KiB
constexpr int kSharedLimit = 48 * 1024;    // static-size default, no opt-in needed
static_assert(kThreads % kMaxLanes == 0, "blockDim.y = kThreads / lanes must be whole");
static_assert(kMaxTaps * 8 * int(sizeof(float)) <= kSharedLimit,
              "with one lane of 8 channels the largest filter's weights still fit");

// ---- chunks of kVec channels: one 16-byte access, or one element ---------------------
// `inside` false: the chunk lies in the padding and reads as zeros. p must
// still be a valid address (the caller clamps it into the image): the load
// is issued either way and its value replaced, so no branch separates this
// load from its neighbours.
template <class Element, int kVec>
__device__ __forceinline__ void load_chunk(const Element* p, float (&v)[kVec], bool inside = true) {
  if constexpr (kVec == 1) {
    const float f = gpu::to_float(p[0]);
    v[0] = inside ? f : 0.f;
  } else {
    static_assert(kVec * sizeof(Element) == 16, "a chunk is one 128-bit access");
    const uint4 raw = __ldg(reinterpret_cast<const uint4*>(p));
    uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) words[i] = inside ? words[i] : 0u;  // +0.0 in f32 and f16 alike
    if constexpr (std::is_same_v<Element, float>) {
#pragma unroll
      for (int i = 0; i < 4; ++i) v[i] = __uint_as_float(words[i]);
    } else {
      static_assert(std::is_same_v<Element, __half>, "f32 or f16");
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        __half2 h;
        static_assert(sizeof(h) == sizeof(words[i]));
        memcpy(&h, &words[i], sizeof(h));
        const float2 f = __half22float2(h);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
      }
    }
  }
}

template <class Element, int kVec> __device__ __forceinline__ void store_chunk(Element* p, const float (&v)[kVec]) {
  if constexpr (kVec == 1) {
    p[0] = gpu::from_float<Element>(v[0]);
  } else {
    uint32_t words[4];
    if constexpr (std::is_same_v<Element, float>) {
#pragma unroll
      for (int i = 0; i < 4; ++i) words[i] = __float_as_uint(v[i]);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const __half2 h = __floats2half2_rn(v[2 * i], v[2 * i + 1]);  // round to nearest even, as from_float
        memcpy(&words[i], &h, sizeof(h));
      }
    }
    *reinterpret_cast<uint4*>(p) = make_uint4(words[0], words[1], words[2], words[3]);
  }
}

// ---- the block's weights in shared memory, as floats ----------------------------------
//
// wsm[tap][slot]: one row per tap, one slot per channel of the block's slab.
// A thread's kVec channels are read as float4s (kVec / 4 of them, kVec ≥ 4),
// and quad i of lane tx sits at slot (i·lanes + tx)·4: the lanes' first
// quads are contiguous, then their second quads, so eight lanes reading
// their quad i touch 128 consecutive bytes (no bank conflict). For kVec ≤ 4
// this is the plain order slot = channel.
__device__ __forceinline__ int weight_slot(int channel_in_slab, int vec, int lanes) {
  if (vec < 4) return channel_in_slab;
  const int lane = channel_in_slab / vec, e = channel_in_slab % vec;
  return ((e / 4) * lanes + lane) * 4 + e % 4;
}

// This thread's kVec weights of one tap; `tap_row` = wsm + tap·slab + tx·4 (kVec ≥ 4) or + tx.
template <int kVec> __device__ __forceinline__ void load_weights(const float* tap_row, int lanes, float (&v)[kVec]) {
  if constexpr (kVec % 4 == 0) {
#pragma unroll
    for (int i = 0; i < kVec / 4; ++i) {
      const float4 f = reinterpret_cast<const float4*>(tap_row + i * lanes * 4)[0];
      v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < kVec; ++i) v[i] = tap_row[i];
  }
}

// The block's channel slab of w, transposed to wsm[tap][weight_slot(channel)]
// as floats (0 past C). Every thread of the block takes part; the caller
// syncs after. Tap-major, so that consecutive threads write consecutive
// slots; w[c][tap] is read with a stride of R·S elements (a few KiB, cached).
template <class Element>
__device__ void stage_weights(const ConvGeometry& g, const Element* __restrict__ w, float* wsm, int vec, int lanes,
                              int c_base) {
  const int taps = g.R * g.S, slab_channels = lanes * vec;
  const int tid = threadIdx.y * blockDim.x + threadIdx.x, nthreads = blockDim.x * blockDim.y;
  for (int i = tid; i < taps * slab_channels; i += nthreads) {
    const int tap = i / slab_channels, cl = i % slab_channels;
    const int c = c_base + cl;
    wsm[tap * slab_channels + weight_slot(cl, vec, lanes)] = c < g.C ? gpu::to_float(w[int64_t(c) * taps + tap]) : 0.f;
  }
}

// item → (inner index, middle index, outer index) for item = (outer·middle +
// middle index)·inner + inner index. 64-bit division is a long software
// sequence on the GPU; items below 2³¹ (every realistic layer) take the 32-bit
// one instead.
__device__ __forceinline__ void split_item(int64_t item, int inner, int middle, int& i, int& m, int& o) {
  if (item <= INT32_MAX) {
    const unsigned it = unsigned(item), rest = it / unsigned(inner);
    i = int(it - rest * unsigned(inner));
    m = int(rest % unsigned(middle));
    o = int(rest / unsigned(middle));
  } else {
    const int64_t rest = item / inner;
    i = int(item - rest * inner);
    m = int(rest % middle);
    o = int(rest / middle);
  }
}

// One strip: kStrip outputs along W of output row p, this thread's kVec
// channels. `image` = x + n·H·W·C + c0, (ih0, iw0) = the strip's first input
// pixel (tap (0, 0) of output q0, possibly in the padding), `weights` = this
// thread's column of wsm (tap t at weights + t·slab_channels).
template <class Element, int kVec, int kStride, bool kInterior>
__device__ __forceinline__ void strip_3x3(const ConvGeometry& g, const Element* __restrict__ image, int ih0, int iw0,
                                          const float* weights, int slab_channels, int lanes,
                                          float (&acc)[kStrip][kVec]) {
  constexpr int kCols = (kStrip - 1) * kStride + 3;  // input columns a strip reads per row
#pragma unroll
  for (int i = 0; i < kStrip; ++i)
#pragma unroll
    for (int v = 0; v < kVec; ++v) acc[i][v] = 0.f;

#pragma unroll
  for (int r = 0; r < 3; ++r) {
    int ih = ih0 + r;
    const bool row_inside = kInterior || unsigned(ih) < unsigned(g.H);
    if (!kInterior) ih = min(max(ih, 0), g.H - 1);
    float wr[3][kVec];
#pragma unroll
    for (int s = 0; s < 3; ++s) load_weights<kVec>(weights + (r * 3 + s) * slab_channels, lanes, wr[s]);
    const Element* row = image + int64_t(ih) * g.W * g.C;
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      int iw = iw0 + j;
      const bool inside = kInterior || (row_inside && unsigned(iw) < unsigned(g.W));
      if (!kInterior) iw = min(max(iw, 0), g.W - 1);
      float v[kVec];
      load_chunk<Element, kVec>(row + int64_t(iw) * g.C, v, inside);
#pragma unroll
      for (int i = 0; i < kStrip; ++i) {
        const int s = j - i * kStride;  // compile-time after unrolling
        if (s >= 0 && s < 3) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[i][e] = fmaf(wr[s][e], v[e], acc[i][e]);
        }
      }
    }
  }
}

// Kernel contract (both kernels):
//   x [N, H, W, C], w [C, R, S, 1], y [N, P, Q, C]; K == C == groups.
//   blockDim = (lanes, kThreads / lanes); blockIdx.y = channel slab of
//   lanes·kVec channels; thread (tx, ty) owns chunk blockIdx.y·lanes + tx
//   (channels c0 = chunk·kVec .. c0 + kVec − 1; kVec > 1 requires C % kVec ==
//   0 and 16-byte aligned x, y) and items blockIdx.x·blockDim.y + ty, then
//   every gridDim.x·blockDim.y-th after: the grid is one wave of resident
//   blocks (gpu::resident_blocks), each looping over many items, so the
//   weight staging and its barrier are paid once per block, not per strip.
//   Dynamic shared memory: R·S·lanes·kVec floats. Edge duties: chunks past C
//   return after the one barrier; taps in the padding load from an address
//   clamped into the image and use zero instead (depthwise_3x3) or read
//   nothing (depthwise_generic); outputs past Q are not stored; in
//   depthwise_3x3, items of the last row group past P (row_shift > 0, P not a
//   multiple of 2^row_shift) do nothing.
template <class Element, int kVec, int kStride>
__global__ void __launch_bounds__(kThreads, 2)
    depthwise_3x3(ConvGeometry g, int chunks, int strips, int row_shift, int64_t items,
                  const Element* __restrict__ x, const Element* __restrict__ w, Element* __restrict__ y) {
  extern __shared__ __align__(16) float wsm[];  // [9][slab channels]
  const int lanes = blockDim.x, slab_channels = lanes * kVec;
  stage_weights(g, w, wsm, kVec, lanes, blockIdx.y * slab_channels);
  __syncthreads();
  const int chunk = blockIdx.y * lanes + threadIdx.x;
  if (chunk >= chunks) return;  // no barrier below
  const int c0 = chunk * kVec;
  const float* my_weights = wsm + threadIdx.x * (kVec >= 4 ? 4 : kVec);
  constexpr int kCols = (kStrip - 1) * kStride + 3;

  for (int64_t item = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; item < items;
       item += int64_t(gridDim.x) * blockDim.y) {
    // item = ((n·row_groups + group)·strips + strip)·rows + row, p = group·rows + row,
    // rows = 2^row_shift: the items of one warp share a strip position.
    const int row = int(item & ((1 << row_shift) - 1));
    int strip, group, n;
    split_item(item >> row_shift, strips, gpu::ceil_div(g.P, 1 << row_shift), strip, group, n);
    const int p = (group << row_shift) + row;
    if (p >= g.P) continue;  // the last row group of an odd P
    const int q0 = strip * kStrip;
    const int ih0 = p * kStride - g.pad, iw0 = q0 * kStride - g.pad;
    const Element* image = x + int64_t(n) * g.H * g.W * g.C + c0;

    float acc[kStrip][kVec];
    const bool interior = ih0 >= 0 && ih0 + 3 <= g.H && iw0 >= 0 && iw0 + kCols <= g.W;
    if (interior)
      strip_3x3<Element, kVec, kStride, true>(g, image, ih0, iw0, my_weights, slab_channels, lanes, acc);
    else
      strip_3x3<Element, kVec, kStride, false>(g, image, ih0, iw0, my_weights, slab_channels, lanes, acc);

    Element* out = y + ((int64_t(n) * g.P + p) * g.Q + q0) * g.C + c0;
#pragma unroll
    for (int i = 0; i < kStrip; ++i)
      if (q0 + i < g.Q) store_chunk<Element, kVec>(out + int64_t(i) * g.C, acc[i]);
  }
}

template <class Element, int kVec>
__global__ void __launch_bounds__(kThreads)
    depthwise_generic(ConvGeometry g, int chunks, int64_t items, const Element* __restrict__ x,
                      const Element* __restrict__ w, Element* __restrict__ y) {
  extern __shared__ __align__(16) float wsm[];  // [R·S][slab channels]
  const int lanes = blockDim.x, slab_channels = lanes * kVec;
  stage_weights(g, w, wsm, kVec, lanes, blockIdx.y * slab_channels);
  __syncthreads();
  const int chunk = blockIdx.y * lanes + threadIdx.x;
  if (chunk >= chunks) return;
  const int c0 = chunk * kVec;
  const float* my_weights = wsm + threadIdx.x * (kVec >= 4 ? 4 : kVec);

  for (int64_t item = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; item < items;
       item += int64_t(gridDim.x) * blockDim.y) {
    int q, p, n;
    split_item(item, g.Q, g.P, q, p, n);  // item = (n·P + p)·Q + q
    const Element* image = x + int64_t(n) * g.H * g.W * g.C + c0;
    float acc[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc[e] = 0.f;
    for (int r = 0; r < g.R; ++r) {
      const int ih = p * g.stride - g.pad + r;
      if (ih < 0 || ih >= g.H) continue;
      for (int s = 0; s < g.S; ++s) {
        const int iw = q * g.stride - g.pad + s;
        if (iw < 0 || iw >= g.W) continue;
        float v[kVec], wv[kVec];
        load_chunk<Element, kVec>(image + (int64_t(ih) * g.W + iw) * g.C, v);
        load_weights<kVec>(my_weights + (r * g.S + s) * slab_channels, lanes, wv);
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[e] = fmaf(wv[e], v[e], acc[e]);
      }
    }
    store_chunk<Element, kVec>(y + ((int64_t(n) * g.P + p) * g.Q + q) * g.C + c0, acc);
  }
}

bool supports(const ConvProblem& p) {
  return (p.dtype == DType::f32 || p.dtype == DType::f16) && p.groups == p.C && p.K == p.C && p.T() == 1 &&
         p.R * p.S <= kMaxTaps && p.C <= gpu::kMaxGridYZ;  // one slab per ≥ 1 channel: slabs ≤ 65535
}

// Chunks per block: the largest power of two ≤ 32 that divides the chunk count
// (no idle lanes in the last slab) and is at least 8, else 32 — halved while
// the slab's weights would not fit the shared-memory limit.
int lanes_for(int chunks, int taps, int vec) {
  int lanes = kMaxLanes;
  for (int l = kMaxLanes; l >= 8; l /= 2)
    if (chunks % l == 0) {
      lanes = l;
      break;
    }
  while (lanes > 1 && lanes / 2 >= chunks) lanes /= 2;  // narrow C: fewer idle lanes
  while (lanes > 1 && int64_t(taps) * lanes * vec * int(sizeof(float)) > kSharedLimit) lanes /= 2;
  return lanes;
}

template <class Element, int kVec> void launch(const ConvProblem& p, const Args<ConvProblem>& args) {
  const ConvGeometry g = gpu::geometry_of(p);
  const int chunks = p.C / kVec, taps = p.R * p.S;
  const int lanes = lanes_for(chunks, taps, kVec);
  const dim3 block(unsigned(lanes), unsigned(kThreads / lanes));
  const int slabs = gpu::ceil_div(chunks, lanes);
  if (slabs > gpu::kMaxGridYZ) throw Unsupported("conv2d/gpu/06a_depthwise: too many channel slabs");
  const std::size_t shared = std::size_t(taps) * lanes * kVec * sizeof(float);
  const auto* x = static_cast<const Element*>(args.x);
  const auto* w = static_cast<const Element*>(args.w);
  auto* y = static_cast<Element*>(args.y);

  // One wave of resident blocks per channel slab (or fewer, for small layers):
  // the blocks loop over the items, so each stages its weights once.
  const auto grid_for = [&](auto kernel, int64_t items) {
    const int64_t needed = gpu::ceil_div<int64_t>(items, block.y);
    const int64_t wave = std::max<int64_t>(1, gpu::resident_blocks(kernel, int(block.x * block.y), shared) / slabs);
    return dim3(unsigned(std::min({needed, wave, gpu::kMaxGridX})), unsigned(slabs));
  };
  // A warp of 32 threads holds 32 / lanes items (block.y rows of threads).
  // Numbered so that they are the same strip of consecutive output rows, the
  // warp's items are interior or edge strips together, except in the row
  // groups holding output row 0 or P − 1 (no divergence between the two paths
  // of strip_3x3 elsewhere), and at stride 1 they share two of their three
  // input rows in L1. Below 8 lanes a warp spans several strips as well.
  const int row_shift = lanes >= 32 ? 0 : lanes == 16 ? 1 : 2;  // up to 4 rows per group
  const auto launch_3x3 = [&](auto kernel) {
    const int strips = gpu::ceil_div(p.Q(), kStrip);
    const int64_t items = int64_t(p.N) * gpu::ceil_div(p.P(), 1 << row_shift) * strips << row_shift;
    kernel<<<grid_for(kernel, items), block, shared>>>(g, chunks, strips, row_shift, items, x, w, y);
    gpu::check_launch("depthwise_3x3");
  };
  if (p.R == 3 && p.S == 3 && p.stride == 1) {
    launch_3x3(depthwise_3x3<Element, kVec, 1>);
  } else if (p.R == 3 && p.S == 3 && p.stride == 2) {
    launch_3x3(depthwise_3x3<Element, kVec, 2>);
  } else {
    const auto kernel = depthwise_generic<Element, kVec>;
    const int64_t items = int64_t(p.N) * p.P() * p.Q();
    kernel<<<grid_for(kernel, items), block, shared>>>(g, chunks, items, x, w, y);
    gpu::check_launch("depthwise_generic");
  }
}

void run(const ConvProblem& p, const Args<ConvProblem>& args) {
  const bool aligned = gpu::aligned_16(args.x) && gpu::aligned_16(args.y);
  gpu::visit_dtype<float, __half>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    constexpr int kVec = int(16 / sizeof(Element));  // 4 floats or 8 halves: one 16-byte chunk
    if (aligned && p.C % kVec == 0)
      launch<Element, kVec>(p, args);
    else
      launch<Element, 1>(p, args);
  });
}

const Register<ConvProblem> reg{{
    .name = "06a_depthwise",
    .device = Device::gpu,
    .lesson = 6,
    .supports = supports,
    .run = run,
    .idea = "depthwise: 16-byte chunks along C, 4 outputs along W per thread from one pass over the input "
            "columns, no branch between a strip's loads (padding clamped and zeroed), weights [tap][c] in smem; "
            "memory bound by design",
}};

}  // namespace
}  // namespace convlab
