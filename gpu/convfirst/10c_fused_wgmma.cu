// gpu/convfirst/10c_fused_wgmma.cu — lesson 10, GPU rung c: the whole ConvFirst
// block in one kernel on Hopper's machinery (TMA, an mbarrier ring, a producer
// warpgroup, wgmma), T and H never leaving the registers.
//
// Idea over 10b_fused (mma.sync, cp.async, one CTA per tile): the block's two
// 1x1 layers run as lesson 08's wgmma FFN (08d_fused_wgmma), and the grouped
// conv feeds it without a shared-memory round trip:
//
//   x rows of tile + halo   TMA, two buffers: the next tile's rows land during this one
//   T   = gconv3x3(x) + conv_b       mma.sync m16n8k16 per warp (16 pixels x 8 channels per group)
//                                    the accumulators, rounded, ARE the A fragments of the expand
//   Z   = x[tile] + b                wgmma accumulator registers (the residual starts Z)
//   for r in chunks of TH hidden channels:        U^r, V_r: TMA into a ring of slots
//     S  = T · U^r        wgmma m64n{TH}k16, A = T from registers, B = U^r from shared memory
//     H  = φ(S + a_r)     registers, rounded, packed as A fragments
//     Z += H · V_r        wgmma m64n{C}k16, A = H from registers, B = V_r from shared memory
//   y[tile] = Z                      one rounding, one store
//
// Why T can stay in registers: warp w of a consumer warpgroup supplies rows
// 16w .. 16w+15 of wgmma's A in mma.sync's m16k16 A layout, and the conv's
// m16n8 accumulators of two neighbouring groups (channels 16k .. 16k+15) of
// those 16 pixels are, thread by thread, that A fragment for k-step k — the
// same hand-over lesson 08 uses for H. So each warp computes the conv of
// exactly the 16 pixels it later multiplies.
//
// The conv on staged pixels is 10b's: one m16n8k16 covers 16 pixels x the 8
// outputs of a group x two taps; ldmatrix.x4 reads 16-byte chunks (8 channels
// of one pixel) straight from the staged rows, and a tap outside the image
// reads the zero pixel. The rows now arrive by TMA in the 128-byte swizzled
// layout (gpu/lib/hopper/convfirst_wgmma_layout.hpp), so a row address is
// line i plus the chunk position (group ^ i % 8): eight consecutive pixels of
// one ldmatrix phase hit eight different bank groups. The conv weights (9 KB
// at C = 64) are loaded into shared memory once per CTA.
//
// The biases a, b and conv_b are staged once per CTA as fp32 in shared memory
// (after the x buffers): a chunk's bias pairs are then shared loads with
// nothing to convert, where global loads put their latency on the chain
// between a chunk's expand and its φ (lesson 08's 08e measured it).
//
// The plain loops (ref::convfirst_block): t = gconv(x) + conv_b; for each
// pixel: z = x + b; for each hidden chunk: h = φ(t·U^r + a_r); z += h·V_r.
//
// Cost and floor (N=128 56x56 C=64 α=4 f16): 15.0 GMAC = 30.0 GFLOP (conv
// 12 %), 103 MB of compulsory DRAM traffic: compute-bound, 0.040 ms at the
// probe's f16 rate. Per 128-pixel tile 8.4 MFLOP of wgmma and 1.3 MFLOP of
// mma.sync (the conv with its zero tenth tap); U and V (64 KB) come from L2 once per tile. The counting, the
// prediction and the measurements are in lessons/10-convfirst/NOTES.md.
//
// Tunables: Layout64 / Layout128 in gpu/lib/hopper/convfirst_wgmma_layout.hpp
// (hidden chunk, U/V slots, whether chunk r's expand overlaps chunk r−1's
// project: both chosen so that the loop fits 168 registers without spilling);
// the tile is 128 pixels (two consumer warpgroups).
// Supported: f16 and bf16; stride 1; group width 8; C = C_out ∈ {64, 128};
// hidden a multiple of 8 (a partial last chunk is zero-filled by TMA, its
// bias staged as 0, φ(0) = 0 for ReLU and SiLU); ReLU and SiLU; any N, H, W
// whose two halo buffers and the biases fit shared memory (with hidden ≤ 4C:
// every W ≤ 115 at C = 64, W ≤ 38 at C = 128); 16-byte aligned x, u, v, a,
// b, y and 4-byte aligned conv_w and conv_b. Needs compute capability 9.0 and
// 90 in CONVLAB_CUDA_ARCHS.
// Run just this: build/convlab run convfirst/gpu/10c_fused_wgmma --shape N=128,H=56,C=64,dtype=f16
#include <cuda.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include "ops/convfirst.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"
#include "gpu/lib/hopper/convfirst_wgmma_layout.hpp"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tile_scheduler.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"
#include "gpu/lib/hopper/wgmma_epilogue.cuh"
#include "gpu/lib/hopper/wgmma_hidden_loop.cuh"

namespace convlab {
namespace {

using namespace convfirst_wgmma;

using gpu::bias_activate;
using gpu::ld_shared_u32;
using gpu::load_bias;
using gpu::st_shared_u32;
using gpu::unpack_pair;

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. x [N·H·W, C] (NHWC), conv_w [C][3][3][8], conv_b [C], u [C, hidden],
// a [hidden], v [hidden, C], b [C], y [N·H·W, C]; Element = __half or
// __nv_bfloat16; fp32 accumulation; T rounded to Element once (the expand's A
// operand), H once, y once. Grid: one CTA per SM (at most the number of tiles),
// 384 threads, shared_bytes<L>(s, hidden) of dynamic shared memory (layout in
// convfirst_wgmma_layout.hpp). Edge duties: pixels ≥ M read the zero pixel and
// are never stored; staged rows outside [0, N·H) arrive as zeros (TMA); taps
// outside the image read the zero pixel; hidden columns ≥ hidden are zero.
template <class Element, class L, bool kRelu>
__global__ void __launch_bounds__(kThreads, 1)
    convfirst_fused_wgmma_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap u_map,
                                 const __grid_constant__ CUtensorMap v_map, const XStaging stage_geometry, int M, int H,
                                 int W, int hidden, const Element* __restrict__ conv_w,
                                 const Element* __restrict__ conv_b, const Element* __restrict__ a,
                                 const Element* __restrict__ b, Element* __restrict__ y) {
  constexpr int C = L::kC;
  extern __shared__ unsigned char shared[];
  const uint32_t base = (gpu::shared_address(shared) + 1023u) & ~1023u;
  const gpu::hopper::Pipeline<kXBuffers> x_pipe{base};
  const gpu::hopper::Pipeline<L::kStages> uv_pipe{base + gpu::hopper::kPipelineBarrierBytes<kXBuffers>};
  const XStaging& sg = stage_geometry;
  const uint32_t weights = base + L::kWeightsBase;
  const auto x_slot = [&](int buffer) { return base + L::kXBase + uint32_t(buffer) * sg.buffer_bytes; };
  const gpu::hopper::TileScheduler tiles{gpu::ceil_div(M, kBlockRows), 1, 1};
  const int chunks = gpu::ceil_div(hidden, L::kChunk);
  const int warpgroup = gpu::hopper::warpgroup_of(threadIdx.x);
  // a [chunks·Chunk] (zero past hidden), b [C], conv_b [C] in fp32, after the x buffers
  float* const a_s = reinterpret_cast<float*>(shared + (base - gpu::shared_address(shared)) + bias_offset<L>(sg));
  float* const b_s = a_s + chunks * L::kChunk;
  float* const conv_b_s = b_s + C;

  // ---- once per CTA: barriers, the conv weights, the biases, the zero lines of both x buffers ----
  if (threadIdx.x == 0) {
    x_pipe.init(kConsumerWarps);
    uv_pipe.init(kConsumerWarps);
    gpu::hopper::tma_prefetch_descriptor(&x_map);
    gpu::hopper::tma_prefetch_descriptor(&u_map);
    gpu::hopper::tma_prefetch_descriptor(&v_map);
  }
  {
    const unsigned* w_words = reinterpret_cast<const unsigned*>(conv_w);
    for (int i = threadIdx.x; i < L::kWeightWords; i += kThreads) st_shared_u32(weights + 4 * i, __ldg(w_words + i));
    gpu::stage_biases(a_s, a, hidden, chunks, L::kChunk, L::kChunk, 0, b, conv_b, 0, C, threadIdx.x, kThreads);
    constexpr int kZeroWords = kZeroLines * 128 / 4;
    for (int i = threadIdx.x; i < kXBuffers * sg.panels * kZeroWords; i += kThreads) {
      const int panel = i / kZeroWords % sg.panels, buffer = i / kZeroWords / sg.panels;
      st_shared_u32(x_slot(buffer) + panel * sg.panel_bytes + sg.zero_index * 128 + 4 * (i % kZeroWords), 0u);
    }
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- producer: one thread issues every copy ----
    gpu::hopper::warpgroup_registers_decrease<kProducerRegs>();
    if (threadIdx.x == 0) {
      gpu::hopper::PipelineState<kXBuffers> xs;
      gpu::hopper::PipelineState<L::kStages> st;
      for (int t = tiles.first(blockIdx.x); tiles.valid(t); t = tiles.next(t, gridDim.x)) {
        x_pipe.producer_acquire(xs, sg.tx_bytes);
        const int first_pixel = (t * kBlockRows / W - 1) * W;  // staged row 0 (−W for the batch's first row)
        for (int p = 0; p < sg.panels; ++p)
          for (int k = 0; k < sg.boxes; ++k)
            gpu::hopper::tma_load_2d(x_slot(xs.stage) + p * sg.panel_bytes + k * sg.box_rows * 128, &x_map,
                                     x_pipe.full(xs.stage), p * kPanelCols, first_pixel + k * sg.box_rows);
        xs.advance();
        gpu::hopper::load_uv_chunks<L>(uv_pipe, st, &u_map, &v_map, base, chunks);
      }
    }
  } else {
    // ---- consumers: warpgroup 1 owns pixels 0-63 of a tile, warpgroup 2 pixels 64-127 ----
    gpu::hopper::warpgroup_registers_increase<kConsumerRegs>();
    const int consumer = warpgroup - 1;
    const int thread = gpu::hopper::thread_in_warpgroup(threadIdx.x);
    const int warp = thread / 32, lane = thread % 32, g = lane / 4, tq = lane % 4;
    const gpu::MatrixCoord first = gpu::wgmma_d_coord(thread, 0);  // row 16·warp + g, column 2·tq
    const gpu::MatrixCoord a_row = gpu::ldmatrix_x4_row_address(lane);  // pixel lane % 16, k-half lane / 16
    gpu::hopper::PipelineState<kXBuffers> xs;
    gpu::hopper::PipelineState<L::kStages> st;
    uint32_t tfrag[L::kCSteps][4];  // T packed: A fragments of the expand product
    float s[L::kSRegs];             // S, then φ(S + a) in fp32
    float zacc[L::kZRegs];          // Z
    uint32_t h[L::kHSteps][4];      // H packed: A fragments of the project product
    float2 bias[L::kSRegs / 4];     // a_r, fp32 pairs
    const float2* const b_pairs = reinterpret_cast<const float2*>(b_s);
    const float2* const conv_b_pairs = reinterpret_cast<const float2*>(conv_b_s);

    // S = T·U^r into s; one commit group.
    const auto issue_expand = [&](int stage) {
#pragma unroll
      for (int ks = 0; ks < L::kCSteps; ++ks)
        gpu::wgmma_m64nNk16_rs_mn_major_b<Element, L::kChunk>(s, tfrag[ks], L::u_descriptor(L::u_slot(base, stage), ks),
                                                             ks > 0);
      gpu::wgmma_commit_group();
    };

    // Staged index of the pixel this lane hands ldmatrix at k-step j of tile t's conv:
    // pixel lane % 16 of the warp, tap 2j + lane / 16 (tap 9 does not exist: the zero pixel),
    // from one division pair a tile (tap_place).
    const auto conv_taps = [&](int t, int (&tap)[kConvSteps]) {
      const int first_row = t * kBlockRows / W - 1;
      const int pixel = t * kBlockRows + consumer * kWgmmaM + 16 * warp + a_row.row;
      convfirst_wgmma::lane_taps(convfirst_wgmma::tap_place(pixel, M, H, W, first_row, sg.zero_index), a_row.col >= 8, W,
                                 sg.zero_index, tap);
    };
    // One mma of group grp at k-step j: B[k][n] = w[8·grp + n][tap 2j + k / 8][k % 8], lane
    // (g, tq) holding n = g, channels 2tq, 2tq+1 of taps 2j (b0) and 2j+1 (b1) from the
    // staged weights; A straight from the staged pixels by ldmatrix.
    const auto conv_mma = [&](float (&acc)[4], uint32_t xb, int tap, int j, int grp) {
      const int word = ((grp * kGroupWidth + g) * 72 + 2 * j * 8 + 2 * tq) / 2;
      const uint32_t bfrag[2] = {ld_shared_u32(weights + 4 * word), j < 4 ? ld_shared_u32(weights + 4 * (word + 4)) : 0u};
      uint32_t afrag[4];
      gpu::ldmatrix_x4(afrag, xb + uint32_t(tap) * 128u + (grp / 8) * sg.panel_bytes + (((grp % 8) ^ (tap & 7)) << 4));
      gpu::mma_m16n8k16<Element>(acc, afrag, bfrag);
    };
    const auto conv_bias = [&](float (&acc)[4], int grp) {  // the conv bias starts the sums
      const float2 cb = conv_b_pairs[(grp * kGroupWidth) / 2 + tq];
      acc[0] = cb.x, acc[1] = cb.y, acc[2] = cb.x, acc[3] = cb.y;
    };
    // Groups 2k and 2k+1 (channels 16k .. 16k+15) make the A fragment of k-step k:
    // (row g, k 2tq..), (row g+8, k 2tq..), (row g, k 8+2tq..), (row g+8, k 8+2tq..).
    const auto pack_t = [&](uint32_t (&frag)[4], const float (&lo)[4], const float (&hi)[4]) {
      frag[0] = gpu::pack_pair<Element>(lo[0], lo[1]);
      frag[1] = gpu::pack_pair<Element>(lo[2], lo[3]);
      frag[2] = gpu::pack_pair<Element>(hi[0], hi[1]);
      frag[3] = gpu::pack_pair<Element>(hi[2], hi[3]);
    };
    // The whole conv of this warp's 16 pixels into tfrag. TUTORIAL: every group's accumulator
    // is live at once and the five k-steps run outermost, so each mma is independent of its
    // neighbours (10b's order): kGroups chains in flight instead of one.
    const auto conv_all = [&](uint32_t xb, const int (&tap)[kConvSteps]) {
      float acc[L::kGroups][4];
#pragma unroll
      for (int grp = 0; grp < L::kGroups; ++grp) conv_bias(acc[grp], grp);
#pragma unroll
      for (int j = 0; j < kConvSteps; ++j)
#pragma unroll
        for (int grp = 0; grp < L::kGroups; ++grp) conv_mma(acc[grp], xb, tap[j], j, grp);
#pragma unroll
      for (int k = 0; k < L::kCSteps; ++k) pack_t(tfrag[k], acc[2 * k], acc[2 * k + 1]);
    };
    // TUTORIAL: the two consumer warpgroups are set half a step apart. Warpgroup 1 starts
    // its first tile's conv only once warpgroup 0 has finished its own, so that one
    // warpgroup's conv (mma.sync, shared-memory bound) can run while the other's wgmma
    // products are in flight. Nothing else ties them together closely: the x buffer is
    // refilled once both have read it, a U/V slot once both have used it. (Whether it pays
    // is a measurement: lessons/10-convfirst/NOTES.md.)
    bool first_tile = true;
    gpu::hopper::NoTurns no_turns;  // the two consumers are not made to alternate here
    for (int t = tiles.first(blockIdx.x); tiles.valid(t); t = tiles.next(t, gridDim.x)) {
      const int pixel0 = t * kBlockRows + consumer * kWgmmaM + 16 * warp;  // this warp's 16 pixels
      // ---- 1. the grouped conv of this warp's 16 pixels, into the expand's A fragments ----
      {
        int tap[kConvSteps];
        conv_taps(t, tap);
        if (first_tile && consumer == 1) gpu::hopper::named_barrier_sync(kStaggerBarrier, 2 * gpu::hopper::kWarpgroupThreads);
        x_pipe.consumer_wait(xs);
        conv_all(x_slot(xs.stage), tap);
        if (first_tile && consumer == 0) gpu::hopper::named_barrier_arrive(kStaggerBarrier, 2 * gpu::hopper::kWarpgroupThreads);
        first_tile = false;
      }

      // ---- 2. Z starts as the residual plus b: zacc[4j + c] is row 16·warp + g + 8(c >> 1),
      //         column 8j + 2tq + (c & 1) ----
      {
        const uint32_t xb = x_slot(xs.stage);
        const int first_row = t * kBlockRows / W - 1;
#pragma unroll
        for (int hh = 0; hh < 2; ++hh) {
          const int centre = convfirst_wgmma::centre_index(pixel0 + g + 8 * hh, M, W, first_row, sg.zero_index);
#pragma unroll
          for (int j = 0; j < C / 8; ++j) {
            const int col = 8 * j + 2 * tq;
            const float2 xv = unpack_pair<Element>(ld_shared_u32(xb + x_offset(sg, centre, col)));
            const float2 bv = b_pairs[col / 2];
            zacc[4 * j + 2 * hh] = xv.x + bv.x;
            zacc[4 * j + 2 * hh + 1] = xv.y + bv.y;
          }
        }
      }
      x_pipe.consumer_release(xs);  // the halo rows are read: the producer may refill the buffer
      xs.advance();

      // ---- 3. Eq. 32 over hidden chunks. With S, H, Z and T all live (C = 64) the expand
      //         of chunk r is issued before the project of chunk r−1 (08d's schedule), so φ of
      //         chunk r overlaps Z += H_{r−1}·V_{r−1}. At C = 128 that does not fit the
      //         registers: each chunk runs expand, φ, project in turn, and the other consumer
      //         warpgroup's products fill the tensor cores during this one's φ. Both
      //         schedules are gpu/lib/hopper/wgmma_hidden_loop.cuh (08d's loop, A = T here). ----
      gpu::hopper::wgmma_hidden_loop<L, Element, L::kOverlap>(
          uv_pipe, st, base, chunks, s, zacc, h, no_turns, issue_expand,
          [&](int r) { load_bias(bias, a_s, r * L::kChunk + first.col); },
          [&] { bias_activate<Element, kRelu>(s, bias); });
      gpu::fence_operands(tfrag);  // the expand products reading T have retired

      // ---- 4. one store of y (b and the residual are already in Z) ----
      const int row0 = t * kBlockRows + consumer * kWgmmaM + first.row;
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int row = row0 + 8 * hh;
        if (row >= M) continue;
        Element* out = y + int64_t(row) * C + first.col;
#pragma unroll
        for (int j = 0; j < C / 8; ++j)
          *reinterpret_cast<uint32_t*>(out + 8 * j) = gpu::pack_pair<Element>(zacc[4 * j + 2 * hh], zacc[4 * j + 2 * hh + 1]);
      }
    }
  }
}

// ---- launcher ------------------------------------------------------------------------

template <class L> bool fits(const ConvFirstProblem& p) {
  return shared_bytes<L>(x_staging(p.C, p.W, int64_t(p.N) * p.H), p.hidden) <= std::size_t(kMaxShared);
}

bool supports(const ConvFirstProblem& p) {
  if (!((p.dtype == DType::f16 || p.dtype == DType::bf16) && p.stride == 1 && p.group_width == kGroupWidth &&
        p.C_out == p.C && (p.C == 64 || p.C == 128) && p.hidden % 8 == 0 && p.valid() &&
        p.input_pixels() + kBlockRows < double(INT_MAX) && double(p.hidden) * 2 < double(INT_MAX)))
    return false;
  return p.C == 64 ? fits<Layout64>(p) : fits<Layout128>(p);
}

template <class Element, class L> void launch(const ConvFirstProblem& p, const Args<ConvFirstProblem>& args) {
  constexpr int kE = 2;
  const int M = int(p.input_pixels());
  const XStaging sg = x_staging(p.C, p.W, int64_t(p.N) * p.H);
  const CUtensorMap x_map = gpu::hopper::cached_tma_tile_2d(
      {.base = reinterpret_cast<uint64_t>(args.x), .rows = uint64_t(M), .cols = uint64_t(p.C),
       .row_stride_bytes = uint64_t(p.C) * kE, .elem_bytes = kE, .box_rows = sg.box_rows, .box_cols = kPanelCols});
  const gpu::hopper::UvMaps uv = gpu::hopper::cached_uv_maps<L>(args.u, args.v, p.C, p.hidden, p.C_out);
  const auto kernel = p.activation == ConvFirstActivation::relu ? convfirst_fused_wgmma_kernel<Element, L, true>
                                                                : convfirst_fused_wgmma_kernel<Element, L, false>;
  const std::size_t shared = shared_bytes<L>(sg, p.hidden);
  gpu::allow_dynamic_shared(kernel, shared, "convfirst_fused_wgmma_kernel");
  const int tiles = gpu::ceil_div(M, kBlockRows);
  const int grid = std::min(tiles, gpu::resident_blocks(kernel, kThreads, shared));
  kernel<<<grid, kThreads, shared>>>(x_map, uv.u, uv.v, sg, M, p.H, p.W, p.hidden,
                                     static_cast<const Element*>(args.conv_w), static_cast<const Element*>(args.conv_b),
                                     static_cast<const Element*>(args.a), static_cast<const Element*>(args.b),
                                     static_cast<Element*>(args.y));
  gpu::check_launch("convfirst_fused_wgmma_kernel");
}

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& args) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("convfirst/gpu/10c_fused_wgmma cannot run here: " + why);
  if (!supports(p))
    throw Unsupported("convfirst/gpu/10c_fused_wgmma: f16/bf16, stride 1, C = C_out in {64, 128}, hidden % 8 == 0, "
                      "halo rows that fit shared memory");
  if (!gpu::aligned_16(args.x) || !gpu::aligned_16(args.u) || !gpu::aligned_16(args.v) || !gpu::aligned_16(args.y) ||
      !gpu::aligned_16(args.a) || !gpu::aligned_16(args.b) || reinterpret_cast<uintptr_t>(args.conv_w) % 4 != 0 ||
      reinterpret_cast<uintptr_t>(args.conv_b) % 4 != 0)
    throw Unsupported("convfirst/gpu/10c_fused_wgmma: x, u, v, a, b and y must be 16-byte aligned, conv_w and conv_b 4-byte");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (p.C == 64)
      launch<Element, Layout64>(p, args);
    else
      launch<Element, Layout128>(p, args);
  });
}

const Register<ConvFirstProblem> reg{{
    .name = "10c_fused_wgmma",
    .device = Device::gpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .idea = "Fig. 7b on Hopper: persistent, producer warpgroup; halo rows by TMA, gconv on mma.sync whose accumulators "
            "are the expand's register A operand; S = T·U, φ, Z += H·V on wgmma with U/V through an mbarrier ring",
}};

}  // namespace
}  // namespace convlab
