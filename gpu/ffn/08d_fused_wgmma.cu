// gpu/ffn/08d_fused_wgmma.cu — lesson 08, GPU rung 08d: the fused FFN (Eq. 32)
// on Hopper's machinery: TMA, an mbarrier ring, a producer warpgroup, wgmma
// with the hidden activation handed from one product to the next in registers.
//
// Idea over 03_fused_tensor_core (mma.sync, cp.async, one block per row tile):
// the same loop over hidden chunks, each product now one wgmma per k16 step
// and warpgroup, the operands streamed by the copy engine, the grid persistent:
//
//   X_t  = X[128 rows, :]                          TMA, 2 buffers: the next tile's X loads during this one
//   Z    = 0                                       registers, fp32, 64 rows x C per consumer warpgroup
//   for r in chunks of TH hidden channels:         U^r, V_r: TMA into a ring of slots
//     S   = X_t · U^r            wgmma m64n{TH}k16, A = X (K-major) and B = U^r (MN-major) from shared memory
//     H   = φ(S + a_r)           in the accumulator registers, rounded to f16/bf16, packed as A fragments
//     Z  += H · V_r              wgmma m64n{C}k16, A = H from REGISTERS, B = V_r (MN-major) from shared memory
//   Z[rows] = Z + b                                one rounding, one store
//
// The hand-over needs no data movement: the accumulators of expand columns
// 16kk .. 16kk+15 are, thread by thread, the A fragment of the project
// product's k-step kk (gpu::wgmma_d_index_for_a, host-tested in
// tests/lesson09_wgmma_test.cpp; the attention rung's P·V does the same).
// Per warpgroup the products of neighbouring chunks overlap: the expand
// product of chunk r is issued before the project product of chunk r−1, so
// the bias and φ of chunk r run while Z += H_{r−1}·V_{r−1} is on the tensor cores.
// That loop, and the producer's U/V ring, are gpu/lib/hopper/wgmma_hidden_loop.cuh
// (shared with lesson 10's 10c_fused_wgmma); this file supplies the SS expand and φ.
//
// Roles (gpu/lib/hopper/): warpgroup 0 is the producer (setmaxnreg 40; one
// thread: X tile, then per chunk one U box per 64 hidden columns and one V box
// per 64 output columns, all on one full barrier); warpgroups 1 and 2 are the
// consumers (setmaxnreg 232), rows 0-63 and 64-127 of the tile. The grid is
// one CTA per SM; CTA b takes row tiles b, b + G, ... (gpu::hopper::TileScheduler
// with one tile column).
//
// The plain loop (cpu/ffn/08b_loop_fused): for each row p: z = b; for each
// hidden chunk: h = φ(x_p·U^r + a_r); z += h·V_r.
//
// Cost and floor: 2·P·(C·hidden + hidden·C) FLOP at the wgmma rate (4096
// FLOP/clk/SM); DRAM traffic X read once, Z written once, U and V from L2
// (every CTA reads all of them once per tile). At C = 64, α = 4, a tile of
// 128 rows is 8.4 MFLOP (2048 clk at the full rate) for 16 KB of X and 16 KB
// of Z: the fused form is compute-bound only just (256 FLOP/byte against a
// ridge of ~175), so the X prefetch and the overlap of the Z stores with the
// next tile's products matter. Predictions and measurements: lessons/08-ffn-fusion/NOTES.md.
//
// Tunables: gpu/lib/hopper/ffn_wgmma_layout.hpp (Layout64 / 128 / 256).
// Supported: f16 and bf16; C = C_out ∈ {64, 128, 256}; hidden a multiple of 8
// (the rows of U are TMA strides; a partial last chunk is zero-filled by TMA,
// its bias read as 0, and φ(0) = 0 for ReLU, SiLU and GELU, times zero rows of
// V); any P ≥ 1 (rows past P are zero-filled and never stored); relu, silu,
// gelu; 16-byte aligned buffers. Needs compute capability 9.0 and 90 in CONVLAB_CUDA_ARCHS.
// Run just this: build/convlab run ffn/gpu/08d_fused_wgmma --shape P=401408,C=64,dtype=f16
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "ops/ffn.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/wgmma_probe.hpp"
#include "gpu/lib/hopper/ffn_wgmma_epilogue.cuh"
#include "gpu/lib/hopper/ffn_wgmma_layout.hpp"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tile_scheduler.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"
#include "gpu/lib/hopper/wgmma_hidden_loop.cuh"

namespace convlab {
namespace {

using namespace ffn_wgmma;
constexpr int kThreads = (1 + kConsumers) * gpu::hopper::kWarpgroupThreads;  // 384

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. x [P, C], u [C, hidden], a [hidden], v [hidden, C], b [C], z [P, C],
// row-major, Element = __half or __nv_bfloat16; fp32 accumulation, φ in fp32, H
// rounded to Element before the project product, Z rounded once. Grid: one CTA
// per SM (at most the number of row tiles), 384 threads, L::kSharedBytes:
//
//   [ X slot 0 .. XBuffers−1: 128 x C | U slot s: C x TH | V slot s: TH x C ] x Stages | barriers ]
//   every tile a gpu::Sw128Tile (64-column panels, 128-byte swizzle), 1024-aligned
template <class Element, class L>
__global__ void __launch_bounds__(kThreads, 1)
    ffn_fused_wgmma_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap u_map,
                           const __grid_constant__ CUtensorMap v_map, int P, int hidden,
                           const Element* __restrict__ a, const Element* __restrict__ b, Element* __restrict__ z,
                           FfnActivation act) {
  extern __shared__ unsigned char shared[];
  const uint32_t base = (gpu::shared_address(shared) + 1023u) & ~1023u;
  const gpu::hopper::Pipeline<L::kXBuffers> x_pipe{base + L::kBarrierBase};
  const gpu::hopper::Pipeline<L::kStages> uv_pipe{base + L::kBarrierBase +
                                                  gpu::hopper::kPipelineBarrierBytes<L::kXBuffers>};
  const gpu::hopper::TileScheduler tiles{gpu::ceil_div(P, kBlockRows), 1, 1};
  const int chunks = gpu::ceil_div(hidden, L::kChunk);
  const int warpgroup = gpu::hopper::warpgroup_of(threadIdx.x);

  if (threadIdx.x == 0) {
    x_pipe.init(kConsumerWarps);
    uv_pipe.init(kConsumerWarps);
    gpu::hopper::tma_prefetch_descriptor(&x_map);
    gpu::hopper::tma_prefetch_descriptor(&u_map);
    gpu::hopper::tma_prefetch_descriptor(&v_map);
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- producer ----
    gpu::hopper::warpgroup_registers_decrease<kProducerRegs>();
    if (threadIdx.x == 0) {
      gpu::hopper::PipelineState<L::kXBuffers> xs;
      gpu::hopper::PipelineState<L::kStages> st;
      for (int t = tiles.first(blockIdx.x); tiles.valid(t); t = tiles.next(t, gridDim.x)) {
        x_pipe.producer_acquire(xs, L::kXBytes);
        const uint32_t x_slot = L::x_slot(base, xs.stage);
#pragma unroll
        for (int p = 0; p < L::XTile::kPanels; ++p)
          gpu::hopper::tma_load_2d(L::x_box(x_slot, p), &x_map, x_pipe.full(xs.stage), p * kPanelCols, t * kBlockRows);
        xs.advance();
        gpu::hopper::load_uv_chunks<L>(uv_pipe, st, &u_map, &v_map, base, chunks);
      }
    }
  } else {
    // ---- consumers ----
    gpu::hopper::warpgroup_registers_increase<kConsumerRegs>();
    const int consumer = warpgroup - 1;
    const int thread = gpu::hopper::thread_in_warpgroup(threadIdx.x);
    const gpu::MatrixCoord first = gpu::wgmma_d_coord(thread, 0);  // row g + 16w, column 2t
    gpu::hopper::PipelineState<L::kXBuffers> xs;
    gpu::hopper::PipelineState<L::kStages> st;
    float s[L::kSRegs];                  // S, then φ(S + a) in fp32
    float zacc[L::kZRegs];               // Z
    uint32_t h[L::kHSteps][4];           // H packed: A fragments of the project product
    float2 bias[L::kSRegs / 4];
    gpu::hopper::NoTurns no_turns;  // both consumers work on one tile; 08e_fused_wgmma_pingpong alternates them

    // S = X·U^r into s; one commit group.
    const auto issue_expand = [&](uint32_t x_slot, int stage) {
#pragma unroll
      for (int ks = 0; ks < L::kCSteps; ++ks)
        gpu::wgmma_m64nNk16_ss_mn_major_b<Element, L::kChunk>(s, L::x_descriptor(x_slot, consumer, ks),
                                                             L::u_descriptor(L::u_slot(base, stage), ks), ks > 0);
      gpu::wgmma_commit_group();
    };
    for (int t = tiles.first(blockIdx.x); tiles.valid(t); t = tiles.next(t, gridDim.x)) {
      x_pipe.consumer_wait(xs);
      const uint32_t x_slot = L::x_slot(base, xs.stage);
#pragma unroll
      for (int i = 0; i < L::kZRegs; ++i) zacc[i] = 0.f;

      // Eq. 32 over the hidden chunks, chunk r's expand overlapping chunk r−1's project
      // (gpu/lib/hopper/wgmma_hidden_loop.cuh); then X is free.
      gpu::hopper::wgmma_hidden_loop<L, Element, true>(
          uv_pipe, st, base, chunks, s, zacc, h, no_turns, [&](int stage) { issue_expand(x_slot, stage); },
          [&](int r) { gpu::ffn::load_bias<Element>(bias, a, hidden, r * L::kChunk + first.col); },
          [&] { gpu::ffn::bias_activate(s, bias, act); });
      x_pipe.consumer_release(xs);
      xs.advance();

      // Epilogue: Z + b, one rounding; rows past P are not stored.
      gpu::ffn::store_z_plus_b<Element, L::kC>(
          z, [&](int j) { return gpu::unpack_pair<Element>(*reinterpret_cast<const uint32_t*>(b + first.col + 8 * j)); },
          zacc, t * kBlockRows + consumer * kWgmmaM + first.row, first.col, P);
    }
  }
}

// ---- launcher ------------------------------------------------------------------------

bool supports(const FfnProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && p.C == p.C_out &&
         (p.C == 64 || p.C == 128 || p.C == 256) && p.hidden % 8 == 0 && p.valid();
}

template <class Element, class L> void launch(const FfnProblem& p, const Args<FfnProblem>& args) {
  constexpr int kE = 2;
  const CUtensorMap x_map = gpu::hopper::cached_tma_tile_2d(
      {.base = reinterpret_cast<uint64_t>(args.x), .rows = uint64_t(p.P), .cols = uint64_t(p.C),
       .row_stride_bytes = uint64_t(p.C) * kE, .elem_bytes = kE, .box_rows = kBlockRows, .box_cols = kPanelCols});
  const gpu::hopper::UvMaps uv = gpu::hopper::cached_uv_maps<L>(args.u, args.v, p.C, p.hidden, p.C_out);
  const auto kernel = ffn_fused_wgmma_kernel<Element, L>;
  gpu::allow_dynamic_shared(kernel, L::kSharedBytes, "ffn_fused_wgmma_kernel");
  const int tiles = gpu::ceil_div(p.P, kBlockRows);
  const int grid = std::min(tiles, gpu::resident_blocks(kernel, kThreads, L::kSharedBytes));
  kernel<<<grid, kThreads, L::kSharedBytes>>>(x_map, uv.u, uv.v, p.P, p.hidden, static_cast<const Element*>(args.a),
                                               static_cast<const Element*>(args.b), static_cast<Element*>(args.z),
                                               p.activation);
  gpu::check_launch("ffn_fused_wgmma_kernel");
}

void run(const FfnProblem& p, const Args<FfnProblem>& args) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("08d_fused_wgmma cannot run here: " + why);
  if (!supports(p)) throw Unsupported("08d_fused_wgmma: f16/bf16, C = C_out in {64, 128, 256}, hidden % 8 == 0");
  if (!gpu::aligned_16(args.x) || !gpu::aligned_16(args.u) || !gpu::aligned_16(args.v) || !gpu::aligned_16(args.z) ||
      !gpu::aligned_16(args.a) || !gpu::aligned_16(args.b))
    throw Unsupported("08d_fused_wgmma needs 16-byte aligned buffers");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    if (p.C == 64)
      launch<Element, Layout64>(p, args);
    else if (p.C == 128)
      launch<Element, Layout128>(p, args);
    else
      launch<Element, Layout256>(p, args);
  });
}

const Register<FfnProblem> reg{{
    .name = "08d_fused_wgmma",
    .device = Device::gpu,
    .lesson = 8,
    .supports = supports,
    .run = run,
    .idea = "Eq. 32 on wgmma + TMA: persistent, producer warpgroup; per 128-row tile and hidden chunk S = X·U (SS), "
            "bias+φ in registers, Z += H·V with H as the register A operand; U/V chunks through an mbarrier ring",
}};

}  // namespace
}  // namespace convlab
