// gpu/ffn/08e_fused_wgmma_pingpong.cu — lesson 08, GPU rung 08e: 08d's fused FFN with the
// two consumer warpgroups on tiles of their own, taking turns at the tensor cores, and U and
// V resident in shared memory.
//
// Idea over 08d_fused_wgmma: in 08d both consumer warpgroups work on one 128-row tile, wait on
// the same X and U/V barriers and so run in lock-step: while one does the bias and φ of a
// chunk, or the epilogue of a tile, so does the other, and nothing feeds the tensor cores.
// Here each warpgroup owns 64-row tiles (its own X ring), and the two ISSUE their batches of
// wgmma in turn (the ping-pong of CUTLASS's and FlashAttention-3's Hopper kernels):
//
//   warpgroup 0:  [E0] φ0 [E1 P0] φ1 [P1] store      [E0] ...
//   warpgroup 1:       [E0] φ0 [E1 P0] φ1 [P1] store      [E0] ...
//                 E_r: S = X·U^r, P_r: Z += H_r·V_r, [..]: one batch of wgmma (one turn)
//
// A warpgroup waits for its turn (named barrier, bar.sync) before each batch and hands the
// turn over once the batch is issued (bar.arrive), so batch i of warpgroup 1 is queued right
// behind batch i of warpgroup 0 and ahead of batch i + 1: the tensor cores run one
// warpgroup's products while the other does its φ or its stores. At C = 64 U and V take
// 32 KB per 128-wide chunk, so every chunk stays in shared memory (loaded once per CTA):
// the warpgroups share no ring, and a tile waits only for its X.
//
//   X_t  = X[64 rows, :]           TMA, per consumer warpgroup a ring of 2 slots
//   Z    = 0                       registers, fp32, 64 rows x C
//   for r in chunks of TH:         U^r, V_r resident
//     S  = X_t · U^r               wgmma m64n{TH}k16 (SS)
//     H  = φ(S + a_r)              registers, rounded, packed as A fragments
//     Z += H · V_r                 wgmma m64n{C}k16, A = H from registers
//   Z[rows] = Z + b                one rounding, one store
//
// The loop over chunks is 08d's (gpu/lib/hopper/wgmma_hidden_loop.cuh, overlapped schedule:
// chunk r's expand issued with chunk r−1's project), here with ResidentSlots and the turns.
//
// Roles: warpgroup 0 is the producer (setmaxnreg 40): its warp 0 loads U and V once, then
// consumer 0's X tiles; its warp 1 consumer 1's. Warpgroups 1, 2 are the consumers
// (setmaxnreg 232). The grid is one CTA per SM; CTA b's k-th tile is b + k·G (64 rows each),
// taken by consumer k % 2. Both consumers take the same number of turns per round; one
// without a tile in the last round (an odd count of tiles) takes its turns empty-handed.
//
// The plain loop (cpu/ffn/08b_loop_fused): for each row p: z = b; for each hidden chunk:
// h = φ(x_p·U^r + a_r); z += h·V_r.
//
// Cost and floor (C = 64, α = 4, P = 401408, f16): 26.3 GFLOP at the wgmma rate, X read and
// Z written once (103 MB); U and V read from L2 once per CTA instead of once per tile. Per
// 64-row tile 4.2 MFLOP = 1024 clocks of the SM's tensor cores at the full rate; the
// warpgroup's own non-tensor work per tile (φ of 64 x 256 values, the stores) is about half
// of that, which the other warpgroup's products can cover. Predictions and measurements:
// lessons/08-ffn-fusion/NOTES.md.
//
// The biases a and b are staged once per CTA as fp32 in shared memory: a chunk's bias pairs
// are then shared loads with nothing to convert, where global loads put their
// latency on the chain between a chunk's expand and its φ.
//
// Tunables: gpu/lib/hopper/ffn_wgmma_layout.hpp (PingPong64: chunk 128, 2 X slots per
// consumer). Supported: f16 and bf16; C = C_out = 64; hidden a multiple of 8 with
// ⌈hidden / 128⌉ ≤ 5 (every chunk resident: hidden ≤ 640; a partial last chunk is zero-filled
// by TMA, its bias staged as 0, φ(0) = 0, times zero rows of V); any P ≥ 1; relu, silu, gelu;
// 16-byte aligned buffers. Needs compute capability 9.0 and 90 in CONVLAB_CUDA_ARCHS.
// Run just this: build/convlab run ffn/gpu/08e_fused_wgmma_pingpong --shape P=401408,C=64,dtype=f16
#include <cuda.h>

#include <algorithm>
#include <cstdint>
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
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"
#include "gpu/lib/hopper/wgmma_hidden_loop.cuh"

namespace convlab {
namespace {

using namespace ffn_wgmma;
using L = PingPong64;
constexpr int kThreads = (1 + kConsumers) * gpu::hopper::kWarpgroupThreads;  // 384
constexpr int kTurnBarrier = 1;  // named barriers 1 and 2: consumer 0's and consumer 1's turn (0 is __syncthreads)
constexpr int kBiasBarrier = 3;  // both consumers: the fp32 biases are staged

// The turns of consumer `me` (0 or 1) at issuing wgmma, `points` batches in all (the same
// count for both). Batch i of consumer 0 goes before batch i of consumer 1, which goes before
// batch i + 1 of consumer 0: before() waits for the other's hand-over (consumer 0's first
// batch waits for nobody), after() hands over (consumer 1's last hand-over has no taker and
// is left out, so every arrival on a barrier meets a wait).
struct Turns {
  int me, points, issued = 0;
  __device__ void before() const {
    if (me == 1 || issued > 0)
      gpu::hopper::named_barrier_sync(kTurnBarrier + me, 2 * gpu::hopper::kWarpgroupThreads);
  }
  __device__ void after() {
    if (me == 0 || issued + 1 < points)
      gpu::hopper::named_barrier_arrive(kTurnBarrier + 1 - me, 2 * gpu::hopper::kWarpgroupThreads);
    ++issued;
  }
};

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. x [P, 64], u [64, hidden], a [hidden], v [hidden, 64], b [64], z [P, 64],
// row-major, Element = __half or __nv_bfloat16; fp32 accumulation, φ in fp32, H rounded to
// Element before the project product, Z rounded once. Grid: one CTA per SM (at most half the
// 64-row tiles, rounded up), 384 threads, L::shared_bytes(chunks) of dynamic shared memory.
template <class Element>
__global__ void __launch_bounds__(kThreads, 1)
    ffn_pingpong_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap u_map,
                        const __grid_constant__ CUtensorMap v_map, int P, int hidden, const Element* __restrict__ a,
                        const Element* __restrict__ b, Element* __restrict__ z, FfnActivation act) {
  extern __shared__ unsigned char shared[];
  const uint32_t base = (gpu::shared_address(shared) + 1023u) & ~1023u;
  const uint32_t weights_full = base + L::kWeightsBarrier;
  const int chunks = gpu::ceil_div(hidden, L::kChunk);
  const int tiles = gpu::ceil_div(P, kWgmmaM);
  const int my_tiles = gpu::ceil_div(tiles - int(blockIdx.x), int(gridDim.x));  // ≥ 1: grid ≤ tiles
  const int rounds = gpu::ceil_div(my_tiles, kConsumers);
  const int warpgroup = gpu::hopper::warpgroup_of(threadIdx.x);

  if (threadIdx.x == 0) {
    gpu::hopper::mbarrier_init(weights_full, 1);
    for (int c = 0; c < kConsumers; ++c)
      gpu::hopper::Pipeline<L::kXBuffers>{L::x_ring(base, c)}.init(4);  // one arrival per warp of consumer c
    gpu::hopper::tma_prefetch_descriptor(&x_map);
    gpu::hopper::tma_prefetch_descriptor(&u_map);
    gpu::hopper::tma_prefetch_descriptor(&v_map);
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- producer: warp c feeds consumer c; warp 0 first loads every chunk of U and V ----
    gpu::hopper::warpgroup_registers_decrease<kProducerRegs>();
    const int c = threadIdx.x / 32;
    if (c < kConsumers && threadIdx.x % 32 == 0) {
      if (c == 0) {
        gpu::hopper::mbarrier_arrive_expect_tx(weights_full, uint32_t(chunks) * L::kStageBytes);
        for (int r = 0; r < chunks; ++r)
          gpu::hopper::load_uv_chunk<L>(L::u_slot(base, r), L::v_slot(base, r), weights_full, &u_map, &v_map,
                                        r * L::kChunk);
      }
      const gpu::hopper::Pipeline<L::kXBuffers> x_pipe{L::x_ring(base, c)};
      gpu::hopper::PipelineState<L::kXBuffers> xs;
      for (int k = c; k < my_tiles; k += kConsumers, xs.advance()) {
        x_pipe.producer_acquire(xs, L::kXBytes);
        const uint32_t slot = L::x_slot(base, c, xs.stage);
        const int row0 = (int(blockIdx.x) + k * int(gridDim.x)) * kWgmmaM;
#pragma unroll
        for (int p = 0; p < L::XTile::kPanels; ++p)
          gpu::hopper::tma_load_2d(L::x_box(slot, p), &x_map, x_pipe.full(xs.stage), p * kPanelCols, row0);
      }
    }
  } else {
    // ---- consumers ----
    gpu::hopper::warpgroup_registers_increase<kConsumerRegs>();
    const int consumer = warpgroup - 1;
    const int thread = gpu::hopper::thread_in_warpgroup(threadIdx.x);
    const gpu::MatrixCoord first = gpu::wgmma_d_coord(thread, 0);  // row g + 16w, column 2q
    const gpu::hopper::Pipeline<L::kXBuffers> my_x{L::x_ring(base, consumer)};
    const gpu::hopper::ResidentSlots<L::kStages> resident;
    gpu::hopper::PipelineState<L::kXBuffers> xs;
    Turns turns{consumer, rounds * gpu::hopper::issue_points<true>(chunks)};
    float s[L::kSRegs];         // S, then φ(S + a) in fp32
    float zacc[L::kZRegs];      // Z
    uint32_t h[L::kHSteps][4];  // H packed: A fragments of the project product
    float2 bias[L::kSRegs / 4];

    // a and b once as fp32 (a zero past `hidden`): each chunk's bias pairs are then one 8-byte
    // shared load each, with nothing to convert.
    float* const a_s = reinterpret_cast<float*>(shared + (base - gpu::shared_address(shared)) + L::a_offset(chunks));
    float* const b_s = a_s + chunks * L::kChunk;
    for (int i = threadIdx.x - gpu::hopper::kWarpgroupThreads; i < chunks * L::kChunk + L::kC;
         i += kConsumers * gpu::hopper::kWarpgroupThreads)
      a_s[i] = i < chunks * L::kChunk ? (i < hidden ? gpu::to_float(a[i]) : 0.f) : gpu::to_float(b[i - chunks * L::kChunk]);
    gpu::hopper::named_barrier_sync(kBiasBarrier, kConsumers * gpu::hopper::kWarpgroupThreads);
    const float2* const a_pairs = reinterpret_cast<const float2*>(a_s);
    const float2* const b_pairs = reinterpret_cast<const float2*>(b_s);

    gpu::hopper::mbarrier_wait(weights_full, 0);
    for (int round = 0; round < rounds; ++round) {
      const int k = kConsumers * round + consumer;
      if (k >= my_tiles) {  // no tile this round: take the turns, issue nothing
        for (int i = 0; i < gpu::hopper::issue_points<true>(chunks); ++i) {
          turns.before();
          turns.after();
        }
        continue;
      }
      const int t = int(blockIdx.x) + k * int(gridDim.x);
      my_x.consumer_wait(xs);
      const uint32_t x_slot = L::x_slot(base, consumer, xs.stage);
#pragma unroll
      for (int i = 0; i < L::kZRegs; ++i) zacc[i] = 0.f;
      gpu::hopper::PipelineState<L::kStages> chunk;  // the slot of chunk r is r
      gpu::hopper::wgmma_hidden_loop<L, Element, true>(
          resident, chunk, base, chunks, s, zacc, h, turns,
          [&](int stage) {
#pragma unroll
            for (int ks = 0; ks < L::kCSteps; ++ks)
              gpu::wgmma_m64nNk16_ss_mn_major_b<Element, L::kChunk>(
                  s, L::x_descriptor(x_slot, ks), L::u_descriptor(L::u_slot(base, stage), ks), ks > 0);
            gpu::wgmma_commit_group();
          },
          [&](int r) {
#pragma unroll
            for (int j = 0; j < L::kSRegs / 4; ++j) bias[j] = a_pairs[(r * L::kChunk + first.col) / 2 + 4 * j];
          },
          [&] { gpu::ffn::bias_activate(s, bias, act); });
      my_x.consumer_release(xs);
      xs.advance();
      gpu::ffn::store_z_plus_b<Element, L::kC>(
          z, [&](int j) { return b_pairs[first.col / 2 + 4 * j]; }, zacc, t * kWgmmaM + first.row, first.col, P);
    }
  }
}

// ---- launcher ------------------------------------------------------------------------

bool supports(const FfnProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && p.C == L::kC && p.C_out == L::kC &&
         p.hidden % 8 == 0 && L::shared_bytes(gpu::ceil_div(p.hidden, L::kChunk)) > 0 && p.valid();
}

template <class Element> void launch(const FfnProblem& p, const Args<FfnProblem>& args) {
  constexpr int kE = 2;
  const CUtensorMap x_map = gpu::hopper::cached_tma_tile_2d(
      {.base = reinterpret_cast<uint64_t>(args.x), .rows = uint64_t(p.P), .cols = uint64_t(p.C),
       .row_stride_bytes = uint64_t(p.C) * kE, .elem_bytes = kE, .box_rows = kWgmmaM, .box_cols = kPanelCols});
  const gpu::hopper::UvMaps uv = gpu::hopper::cached_uv_maps<L>(args.u, args.v, p.C, p.hidden, p.C_out);
  const auto kernel = ffn_pingpong_kernel<Element>;
  const int bytes = L::shared_bytes(gpu::ceil_div(p.hidden, L::kChunk));
  gpu::allow_dynamic_shared(kernel, bytes, "ffn_pingpong_kernel");
  const int tiles = gpu::ceil_div(p.P, kWgmmaM);
  const int grid = std::min(gpu::ceil_div(tiles, kConsumers), gpu::resident_blocks(kernel, kThreads, bytes));
  kernel<<<grid, kThreads, bytes>>>(x_map, uv.u, uv.v, p.P, p.hidden, static_cast<const Element*>(args.a),
                                    static_cast<const Element*>(args.b), static_cast<Element*>(args.z), p.activation);
  gpu::check_launch("ffn_pingpong_kernel");
}

void run(const FfnProblem& p, const Args<FfnProblem>& args) {
  if (const std::string why = gpu::wgmma_unavailable_reason(); !why.empty())
    throw Unsupported("08e_fused_wgmma_pingpong cannot run here: " + why);
  if (!supports(p))
    throw Unsupported("08e_fused_wgmma_pingpong: f16/bf16, C = C_out = 64, hidden % 8 == 0 and hidden <= 640");
  if (!gpu::aligned_16(args.x) || !gpu::aligned_16(args.u) || !gpu::aligned_16(args.v) || !gpu::aligned_16(args.z) ||
      !gpu::aligned_16(args.a) || !gpu::aligned_16(args.b))
    throw Unsupported("08e_fused_wgmma_pingpong needs 16-byte aligned buffers");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) { launch<typename decltype(tag)::type>(p, args); });
}

const Register<FfnProblem> reg{{
    .name = "08e_fused_wgmma_pingpong",
    .device = Device::gpu,
    .lesson = 8,
    .supports = supports,
    .run = run,
    .idea = "08d with U and V resident and a 64-row tile per consumer warpgroup; the two warpgroups take turns "
            "issuing their wgmma (named barriers), so one's φ and stores run under the other's products",
}};

}  // namespace
}  // namespace convlab
