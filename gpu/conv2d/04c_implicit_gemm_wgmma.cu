// gpu/conv2d/04c_implicit_gemm_wgmma.cu — lesson 04, GPU rung 04c: the implicit
// GEMM on Hopper's wgmma, its A operand gathered by TMA's im2col mode.
//
// Idea over 04b_implicit_gemm_tensor_core: 04b's 128 threads each computed
// addresses for their 16-byte cp.async chunks of the virtual im2col matrix,
// tested every chunk against the padding, and then fed mma.sync from
// registers filled by ldmatrix. Here ONE thread asks the copy engine for a
// whole 128-pixel x 64-channel box of that matrix per tap
// (cp.async.bulk.tensor.4d.im2col, gpu/lib/hopper/tma_im2col.cuh): the
// engine walks the output pixels itself, adds the tap (r, s) as an offset,
// fills padding and the tile's tail with zeros, and writes the box in the
// 128-byte swizzle that wgmma reads straight from shared memory. The filter
// box (128 output channels x 64 channels of the same tap) comes the same way
// from a 3-D tiled map of the KRSC filter. What is left for the SM is the
// MMA: lesson 03's warp-specialised persistent GEMM (03r) with a different
// producer. The plain loop it implements, per output pixel m = (n, p, q):
//
//   for (k) { acc = 0;
//     for (r, s, c) acc += x[n][p·stride − pad + r][q·stride − pad + s][c] · w[k][r][s][c];  // 0 outside x
//     y[n][p][q][k] = round(acc); }
//
// The CTA (one per SM, looping over 128 x 128 tiles of Y in grouped order):
//
//   warpgroup 0   producer (40 registers): one thread, per item (tap, channel block):
//                 wait empty[s]; expect 32 KB; im2col box -> A slot; filter box -> B slot
//   warpgroups 1-2 consumers (232): wait full[s]; 4 x wgmma m64n128k16 (A: 64 pixels of the
//                 im2col box, B: the filter box, both K-major); release the slot one item later;
//                 after the last item, round and store 64 x 128 of Y (bounds-checked)
//
// Cost and floor: 2·N·P·Q·K·R·S·C flops; x read once from DRAM (the R·S
// re-reads of a pixel hit L2: a wave of 132 tiles spans ~17 K consecutive
// pixels, their halo rows included), y written once. At C = K = 128 the layer
// is compute-bound (~570 flop per compulsory byte), so the floor is the tensor
// pipe: per k16 step and warpgroup 6 KB of operands for 64 cycles of MMA,
// within shared memory's 128 B/cycle. Tiles of 128 x 128 give half the
// per-instruction work of 03r's 128 x 256 (K = 128 here: wider tiles would
// be half empty), and each tile's epilogue keeps the tensor cores idle (no
// ping-pong consumers).
//
// Tunables (one block, static_asserts saying why): gpu/lib/hopper/conv_wgmma_layout.hpp.
// Supported: f16 and bf16 (fp32 accumulate), groups = 1, C % 8 == 0 (a pixel
// is a TMA stride), stride ≤ 8 (TMA's traversal stride), pad ≤ 128 and
// pad − R + 1 ≥ −128 (the bounding-box corners are 8-bit), any N, H, W, K,
// R, S otherwise; N·P·Q, K·R·S·C < 2^31; 16-byte aligned x and w. No
// dilation (the op has none). Needs compute capability 9.0 and sm_90a code.
// Run just this: build/convlab run conv2d/gpu/04c_implicit_gemm_wgmma --shape N=128,H=56,C=128,K=128,R=3,pad=1,dtype=f16
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"
#include "gpu/lib/hopper/conv_wgmma_layout.hpp"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tile_scheduler.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/tma_im2col.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"

namespace convlab {
namespace {

using namespace conv_wgmma;
namespace hw = gpu::hopper;

struct Geometry {
  int M, K, P, Q, S, stride, pad, c_blocks, k_items;
};

template <class Element>
__global__ void __launch_bounds__(kThreads, 1)
    conv_wgmma_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
                      const Geometry g, Element* __restrict__ y) {
  extern __shared__ unsigned char shared[];
  const uint32_t tiles_base = (gpu::shared_address(shared) + hw::kTmaSwizzleAtomBytes - 1) &
                              ~uint32_t(hw::kTmaSwizzleAtomBytes - 1);
  const hw::Pipeline<kStages> pipe{tiles_base + kStages * kStageBytes};
  const hw::TileScheduler tiles{gpu::ceil_div(g.M, kBlockM), gpu::ceil_div(g.K, kBlockN), kGroupM};
  const int warpgroup = hw::warpgroup_of(threadIdx.x);

  if (threadIdx.x == 0) {
    pipe.init(kConsumerWarps);
    hw::tma_prefetch_descriptor(&x_map);
    hw::tma_prefetch_descriptor(&w_map);
  }
  __syncthreads();

  if (warpgroup == 0) {
    hw::warpgroup_registers_decrease<kProducerRegs>();
    if (threadIdx.x == 0) {
      // TUTORIAL: the whole im2col view is these two copies. 04b's 128 threads
      // decoded (r, s, c) cursors and bounds-tested every 16-byte chunk; here the
      // tile's first output pixel becomes a filter origin (w0, h0, n0) once, and
      // each item passes the tap (s, r) as offsets: the engine walks the 128
      // pixels (wrapping rows and images as the output does) and zero-fills
      // whatever falls in the padding or past the last image.
      hw::PipelineState<kStages> st;
      for (int t = tiles.first(blockIdx.x); tiles.valid(t); t = tiles.next(t, gridDim.x)) {
        const gpu::TileCoord tile = tiles.coord(t);
        const Origin o = origin_of(tile.m * kBlockM, g.P, g.Q, g.stride, g.pad);
        const int k0 = tile.n * kBlockN;
        for (int kt = 0; kt < g.k_items; ++kt, st.advance()) {
          const KIter it = k_iter(kt, g.c_blocks, g.S);
          pipe.producer_acquire(st, kStageBytes);
          const uint32_t slot = tiles_base + uint32_t(st.stage) * kStageBytes;
          const uint32_t full = pipe.full(st.stage);
          hw::tma_load_im2col_4d(slot, &x_map, full, it.c0, o.w, o.h, o.n, uint16_t(it.s), uint16_t(it.r));
          hw::tma_load_3d(b_box_address(slot), &w_map, full, it.c0, it.rs, k0);
        }
      }
    }
  } else {
    hw::warpgroup_registers_increase<kConsumerRegs>();
    const int consumer = warpgroup - 1;
    const int thread = hw::thread_in_warpgroup(threadIdx.x);
    hw::PipelineState<kStages> st;
    float acc[kAccRegs];
    for (int t = tiles.first(blockIdx.x); tiles.valid(t); t = tiles.next(t, gridDim.x)) {
      const gpu::TileCoord tile = tiles.coord(t);
#pragma unroll
      for (int i = 0; i < kAccRegs; ++i) acc[i] = 0.f;
      // As 03r's consume(): the release of item kt is one item late, so the
      // next group of wgmma is always queued behind the one executing.
      hw::PipelineState<kStages> release = st;
      for (int kt = 0; kt < g.k_items; ++kt) {
        pipe.consumer_wait(st);
        const uint32_t slot = tiles_base + uint32_t(st.stage) * kStageBytes;
        gpu::wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks)
          gpu::wgmma_m64n128k16_ss<Element>(acc, a_descriptor(slot, consumer, ks), b_descriptor(slot, ks),
                                            /*accumulate=*/true);
        gpu::wgmma_commit_group();
        gpu::wgmma_wait_group<1>();
        if (kt > 0) {
          pipe.consumer_release(release);
          release.advance();
        }
        st.advance();
      }
      gpu::wgmma_wait_group<0>();
      gpu::fence_operands(acc);
      pipe.consumer_release(release);

      // Epilogue: acc[4j + c] is pixel 16w + g + 8(c >> 1), channel 8j + 2t + (c & 1)
      // of the warpgroup's 64 x 128 block; Y is [pixel][K], rounded once.
      const gpu::MatrixCoord first = gpu::wgmma_d_coord(thread, 0);
      const int row0 = tile.m * kBlockM + consumer * kWgmmaM + first.row;
      const int col0 = tile.n * kBlockN + first.col;
      const bool pairs = g.K % 2 == 0;  // then (col, col + 1) is one aligned 4-byte store, in or out together
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + 8 * h;
        if (row >= g.M) continue;
        Element* out = y + int64_t(row) * g.K;
#pragma unroll
        for (int j = 0; j < kBlockN / 8; ++j) {
          const int col = col0 + 8 * j;
          const float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
          if (pairs) {
            if (col < g.K) *reinterpret_cast<uint32_t*>(out + col) = gpu::pack_pair<Element>(v0, v1);
          } else {
            if (col < g.K) out[col] = gpu::from_float<Element>(v0);
            if (col + 1 < g.K) out[col + 1] = gpu::from_float<Element>(v1);
          }
        }
      }
    }
  }
}

bool supports(const ConvProblem& p) { return unsupported_reason(p).empty(); }

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const char* rung = "04c_implicit_gemm_wgmma";
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported(std::string(rung) + " cannot run here: " + why);
  if (const std::string why = unsupported_reason(p); !why.empty()) throw Unsupported(std::string(rung) + ": " + why);
  if (!gpu::aligned_16(a.x) || !gpu::aligned_16(a.w))
    throw Unsupported(std::string(rung) + " needs 16-byte aligned x and w (TMA base addresses)");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    const CUtensorMap x_map = hw::cached_tma_im2col_nhwc(x_map_of(p, reinterpret_cast<uint64_t>(a.x)));
    const CUtensorMap w_map = hw::cached_tma_krsc_filter(w_map_of(p, reinterpret_cast<uint64_t>(a.w)));
    const int c_blocks = gpu::ceil_div(p.C, kBlockK);
    const Geometry g{int(int64_t(p.N) * p.P() * p.Q()), p.K, p.P(), p.Q(), p.S, p.stride, p.pad, c_blocks,
                     p.R * p.S * c_blocks};
    const auto kernel = conv_wgmma_kernel<Element>;
    gpu::allow_dynamic_shared(kernel, kSharedBytes, rung);
    const int tiles = gpu::ceil_div(g.M, kBlockM) * gpu::ceil_div(g.K, kBlockN);
    const int grid = std::min(tiles, gpu::resident_blocks(kernel, kThreads, kSharedBytes));
    kernel<<<grid, kThreads, kSharedBytes>>>(x_map, w_map, g, static_cast<Element*>(a.y));
    gpu::check_launch(rung);
  });
}

const Register<ConvProblem> reg{{
    .name = "04c_implicit_gemm_wgmma",
    .device = Device::gpu,
    .lesson = 4,
    .supports = supports,
    .run = run,
    .idea = "03r's warp-specialised persistent wgmma GEMM on the im2col view, A boxes gathered by TMA im2col "
            "(padding = zero fill), filter boxes by a 3-D tiled map; f16/bf16, C % 8 == 0",
}};

}  // namespace
}  // namespace convlab
