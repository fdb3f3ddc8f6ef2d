// gpu/gemm/03n_tensor_core_mma.cu — lesson 03, GPU rung 03n: tensor cores, one warp instruction per 16x8x16 product.
//
// Idea over 03m_double_buffering: the fp32 rungs before it spend one FFMA per
// multiply-add. A tensor core takes 16-bit inputs and does a whole
// 16x8x16 block (2048 multiply-adds) in one warp-wide instruction,
//
//   mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32   D[16x8] += A[16x16] · B[16x8]
//
// accumulating in fp32. The instruction does not read memory: its operands are
// "fragments", each lane holding a few elements of A, B and D in registers in
// a fixed pattern (gpu/lib/mma.cuh draws it). Getting the tiles out of shared
// memory into that pattern is the job of `ldmatrix`, which reads 8x8 blocks
// of 16-bit elements and hands every lane its part; `ldmatrix.trans` transposes
// on the way, which is how B, stored k-major ([K,N] row-major), becomes the
// "col" operand the mma wants without any transpose in memory.
//
// Everything else is deliberately as plain as the fp32 shared-memory rung: one
// block tile, loaded element by element with bounds checks (so every M, N, K
// works), one shared-memory stage, a barrier, the mma loop, a barrier. Shared
// rows are padded by 16 bytes so the 8 rows an ldmatrix reads fall in 8
// different bank groups.
//
// What it costs: fp16/bf16 inputs (10 or 7 mantissa bits; the tolerance model
// knows) and a kernel that spends much of its time waiting for global loads
// it issued itself: nothing overlaps the next tile's loads with this tile's
// math. Rung 03o fixes that (cp.async pipeline, swizzled shared memory,
// 16-byte loads, bigger warp tiles).
//
// Supported: f16 and bf16, any M, N, K (M up to 65535 block rows).
// Run just this: build/convlab run gemm/gpu/03n_tensor_core_mma --shape M=4096,dtype=f16
// (the tour shape is fp32, which tensor-core rungs do not take).
#include <cstdint>

#include "ops/gemm.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"

namespace convlab {
namespace {

// ---- tunables ---------------------------------------------------------------------
constexpr int kBlockM = 64;   // C rows per block
constexpr int kBlockN = 64;   // C columns per block
constexpr int kBlockK = 32;   // k per shared-memory tile
constexpr int kWarpsM = 2;    // warps stacked along M
constexpr int kWarpsN = 2;    // warps side by side along N
constexpr int kPad = 8;       // elements (16 bytes) added to every shared row

// The instruction's shape (fixed by the hardware, not tunable).
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;

constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWarpM = kBlockM / kWarpsM;     // 32: C rows per warp
constexpr int kWarpN = kBlockN / kWarpsN;     // 32: C columns per warp
constexpr int kMmaTilesM = kWarpM / kMmaM;    // 2 m16 tiles per warp
constexpr int kMmaTilesN = kWarpN / kMmaN;    // 4 n8 tiles per warp

static_assert(kBlockM % (kWarpsM * kMmaM) == 0 && kBlockN % (kWarpsN * kMmaN) == 0,
              "the warps must tile the block tile in whole mma tiles");
static_assert(kBlockK % kMmaK == 0, "a shared tile holds whole k16 steps");
static_assert(kWarpN % 16 == 0, "one ldmatrix.x4.trans loads B for two n8 tiles (16 columns)");
static_assert(kPad % 8 == 0, "ldmatrix rows must start on 16-byte boundaries (8 elements)");
static_assert(((kBlockK + kPad) * 2 / 16) % 2 == 1 && ((kBlockN + kPad) * 2 / 16) % 2 == 1,
              "an odd number of 16-byte chunks per padded row puts 8 consecutive rows in 8 bank groups");
static_assert(kThreads <= 1024, "a CUDA block has at most 1024 threads");

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. C[M,N] = A[M,K] · B[K,N], all row-major, Element = __half or
// __nv_bfloat16 for A, B and C; fp32 accumulation; C rounded once at the store.
// grid (ceil(N/64), ceil(M/64)), 128 threads. Block (bx, by) owns
// C[64·by .. +64, 64·bx .. +64]; warp w owns a 32x32 quarter of it:
//
//            64 columns of C
//        +---------+---------+
//        | warp 0  | warp 1  |   each warp: 2 x 4 mma tiles of 16x8
//   64   | 32x32   | 32x32   |   = 8 fp32 accumulator fragments (32 floats a lane)
//  rows  +---------+---------+
//        | warp 2  | warp 3  |
//        +---------+---------+
//
// Edges: A and B elements outside the matrices are loaded as zeros (so a
// partial k tile adds nothing); C is stored only inside [M, N].
template <class Element>
__global__ void __launch_bounds__(kThreads)
    tensor_core_mma_kernel(int M, int N, int K, const Element* __restrict__ A, const Element* __restrict__ B,
                           Element* __restrict__ C) {
  __shared__ alignas(16) Element a_tile[kBlockM][kBlockK + kPad];  // A[m][k] of this block, k tile
  __shared__ alignas(16) Element b_tile[kBlockK][kBlockN + kPad];  // B[k][n] of this block, k tile

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int block_m0 = blockIdx.y * kBlockM;
  const int block_n0 = blockIdx.x * kBlockN;
  const int warp_m0 = (warp / kWarpsN) * kWarpM;  // within the block tile
  const int warp_n0 = (warp % kWarpsN) * kWarpN;

  float acc[kMmaTilesM][kMmaTilesN][4] = {};  // D fragments (mma_c_coord)
  const Element zero = gpu::from_float<Element>(0.f);

  for (int k0 = 0; k0 < K; k0 += kBlockK) {
    // -- load: every thread copies elements, consecutive threads consecutive
    //    columns (coalesced); anything outside A or B becomes 0.
    for (int i = threadIdx.x; i < kBlockM * kBlockK; i += kThreads) {
      const int r = i / kBlockK, c = i % kBlockK;
      const int m = block_m0 + r, k = k0 + c;
      a_tile[r][c] = (m < M && k < K) ? A[int64_t(m) * K + k] : zero;
    }
    for (int i = threadIdx.x; i < kBlockK * kBlockN; i += kThreads) {
      const int r = i / kBlockN, c = i % kBlockN;
      const int k = k0 + r, n = block_n0 + c;
      b_tile[r][c] = (k < K && n < N) ? B[int64_t(k) * N + n] : zero;
    }
    __syncthreads();  // the tile is complete before anyone reads it

    // -- compute. The plain loop this replaces, for the warp's 32x32 of C:
    //
    //      for (m = 0; m < 32; ++m) for (n = 0; n < 32; ++n) for (k = 0; k < kBlockK; ++k)
    //        acc[m][n] += float(a_tile[warp_m0 + m][k]) * float(b_tile[k][warp_n0 + n]);
    //
    //    Here k goes in steps of 16 and each (m16, n8) block of that loop nest
    //    is one mma instruction.
#pragma unroll
    for (int kk = 0; kk < kBlockK; kk += kMmaK) {
      // TUTORIAL: ldmatrix.x4 reads a 16x16 block as four 8x8 matrices. Lane l
      // names one 16-byte row: row l % 16, columns 8·(l / 16) .. +8. In
      // return it receives, per matrix, the 2 elements the mma fragment wants
      // it to hold (gpu/lib/mma.cuh, ldmatrix_x4_row_address; the host test
      // tests/mma_layout_test.cpp checks the two layouts agree).
      const gpu::MatrixCoord row_start = gpu::ldmatrix_x4_row_address(lane);

      uint32_t a_frag[kMmaTilesM][4];  // A fragments, one per m16 tile
#pragma unroll
      for (int mi = 0; mi < kMmaTilesM; ++mi)
        gpu::ldmatrix_x4(a_frag[mi],
                         gpu::shared_address(&a_tile[warp_m0 + mi * kMmaM + row_start.row][kk + row_start.col]));

      // B is stored [k][n]; the mma wants each lane to hold two consecutive k
      // of one column n. ldmatrix.trans delivers exactly that: one x4.trans
      // covers 16 k x 16 n, i.e. the B fragments of two n8 tiles.
      uint32_t b_frag[kMmaTilesN][2];  // B fragments, one per n8 tile
#pragma unroll
      for (int nj = 0; nj < kMmaTilesN / 2; ++nj) {
        uint32_t r[4];
        gpu::ldmatrix_x4_trans(r, gpu::shared_address(&b_tile[kk + row_start.row][warp_n0 + nj * 16 + row_start.col]));
        b_frag[2 * nj][0] = r[0];      // k 0-7,  n 0-7
        b_frag[2 * nj][1] = r[1];      // k 8-15, n 0-7
        b_frag[2 * nj + 1][0] = r[2];  // k 0-7,  n 8-15
        b_frag[2 * nj + 1][1] = r[3];  // k 8-15, n 8-15
      }

#pragma unroll
      for (int mi = 0; mi < kMmaTilesM; ++mi)
#pragma unroll
        for (int ni = 0; ni < kMmaTilesN; ++ni) gpu::mma_m16n8k16<Element>(acc[mi][ni], a_frag[mi], b_frag[ni]);
    }
    __syncthreads();  // everyone is done reading before the next tile overwrites it
  }

  // -- store: lane holds rows g and g+8, columns 2t and 2t+1 of each 16x8
  //    tile (mma_c_coord); round to Element once, here, inside [M, N] only.
#pragma unroll
  for (int mi = 0; mi < kMmaTilesM; ++mi)
#pragma unroll
    for (int ni = 0; ni < kMmaTilesN; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const gpu::MatrixCoord c = gpu::mma_c_coord(lane, i);
        const int m = block_m0 + warp_m0 + mi * kMmaM + c.row;
        const int n = block_n0 + warp_n0 + ni * kMmaN + c.col;
        if (m < M && n < N) C[int64_t(m) * N + n] = gpu::from_float<Element>(acc[mi][ni][i]);
      }
}

bool supports(const GemmProblem& p) {
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && gpu::ceil_div(p.M, kBlockM) <= gpu::kMaxGridYZ;
}

void run(const GemmProblem& p, const Args<GemmProblem>& args) {
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    const dim3 grid(gpu::ceil_div(p.N, kBlockN), gpu::ceil_div(p.M, kBlockM));
    tensor_core_mma_kernel<Element><<<grid, kThreads>>>(p.M, p.N, p.K, static_cast<const Element*>(args.a),
                                                        static_cast<const Element*>(args.b),
                                                        static_cast<Element*>(args.c));
    gpu::check_launch("tensor_core_mma_kernel");
  });
}

const Register<GemmProblem> reg{{
    .name = "03n_tensor_core_mma",
    .device = Device::gpu,
    .lesson = 3,
    .supports = supports,
    .run = run,
    .idea = "mma.sync m16n8k16 (f16/bf16 in, fp32 accumulate), ldmatrix(.trans) from padded shared memory",
}};

}  // namespace
}  // namespace convlab
