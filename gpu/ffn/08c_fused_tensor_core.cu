// gpu/ffn/08c_fused_tensor_core.cu — lesson 08, GPU rung 08c: the whole FFN in one kernel,
// the hidden tensor never leaves the chip.
//
// Idea over cublas: Eq. 32 on the tensor cores. Each block
// owns a tile of rows of X and loops over the hidden channels in chunks of TH:
//
//   X_t = X[rows of the block, :]                            shared memory, loaded once
//   Z_acc = 0                                                registers, fp32
//   for r in chunks of TH hidden channels:                   U^r, V_r: cp.async, two stages
//     H_r   = φ(X_t · U^r + a_r)        mma m16n8k16         registers, fp32 → f16/bf16
//     Z_acc += H_r · V_r                mma m16n8k16, A = H_r straight from registers
//   Z[rows] = Z_acc + b                                      one rounding, one store
//
// The step that makes it work (FlashAttention-2 does the same with its P
// matrix): the fp32 accumulator of an m16n8 mma — lane (g, t) holds rows g
// and g+8, columns 2t and 2t+1 — is, for two neighbouring n8 tiles, exactly
// the A fragment of the next m16k16 mma (gpu/lib/mma.cuh: mma_c_coord vs
// mma_a_coord; checked on the host in tests/lesson08_ffn_test.cpp):
//
//     A reg 0 = pack(D[tile 2kk][0], D[2kk][1])       row g,   k 2t, 2t+1
//     A reg 1 = pack(D[tile 2kk][2], D[2kk][3])       row g+8, k 2t, 2t+1
//     A reg 2 = pack(D[tile 2kk+1][0], D[2kk+1][1])   row g,   k 8+2t, 9+2t
//     A reg 3 = pack(D[tile 2kk+1][2], D[2kk+1][3])   row g+8, k 8+2t, 9+2t
//
// so H_r is rounded to the element type in registers and fed on, with no
// shared-memory round trip and no shuffle. Each warp owns whole rows (all TH
// hidden columns of its rows, all C_out output columns), which is what makes
// the hand-over warp-local. tests/lesson08_ffn_test.cpp emulates one warp of
// this kernel on the host (its index expressions, PTX semantics of each
// instruction) and requires exact results on integer data.
//
// ---- the floor, counted before writing the kernel (H200: cuBLAS HGEMM ≈ 736
// TFLOP/s, HBM ≈ 4.2 TB/s). P = 401408, α = 4, f16, C_out = C:
//
//   C     FLOPs     fused bytes  floor (max of the two)   layer-by-layer bytes   its memory time
//   64    26.3 G    103 MB       0.036 ms (compute)       1028 MB                0.245 ms
//   128   105 G     206 MB       0.143 ms (compute)       2055 MB                0.49 ms
//   256   421 G     411 MB       0.572 ms (compute)       4110 MB                0.98 ms
//
// What it costs: the channel counts are compile-time (the Z accumulator must
// live in registers), so each C is an instantiation; C_out must equal C; and
// at C = 256 a warp's Z accumulator alone is 128 registers.
//
// Supported: f16 and bf16; C = C_out ∈ {16, 32, 64, 128, 256}; hidden a
// multiple of 8 (16-byte cp.async chunks; a partial last chunk is zero-filled,
// and φ(0 + 0) = 0 times zero rows of V adds nothing); any P ≥ 1 (the last
// row tile is zero-filled and its extra rows never stored); 16-byte-aligned
// buffers. Everything else runs on cublas.
// Run just this: build/convlab run ffn/gpu/08c_fused_tensor_core --shape P=401408,C=64,dtype=f16
// (the tour shape is fp32, which this rung does not take).
#include <cstdint>

#include "ops/ffn.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/ffn_hidden_loop.cuh"
#include "gpu/lib/mma.cuh"

namespace convlab {
namespace {

// Fixed by the hardware (and gpu::FfnLoopConfig).
constexpr int kMmaM = 16, kMmaN = 8;
constexpr int kChunkElems = 8;  // one 16-byte cp.async piece = 8 f16/bf16

// ---- tunables, one configuration per channel count ----------------------------------
//
// The tile sizes (warps, rows per warp, hidden chunk TH, blocks per SM) are
// gpu::FfnLoopConfig's (gpu/lib/ffn_hidden_loop.cuh), the loop this rung runs;
// this rung adds its X tile in front of the two stages.
template <int C, int Warps, int WarpRows, int Chunk, int MinBlocks>
struct FusedConfig : gpu::FfnLoopConfig<C, Warps, WarpRows, Chunk, MinBlocks> {
  using Loop = gpu::FfnLoopConfig<C, Warps, WarpRows, Chunk, MinBlocks>;
  static constexpr int kXTileBytes = Loop::kATileBytes;                      // [kBlockRows][kRowElems]
  static constexpr int kSharedBytes = kXTileBytes + 2 * Loop::kStageBytes;  // X, then two stages
  static_assert(kSharedBytes <= 227 * 1024, "an sm_90 block may use at most 227 KB of shared memory");
};

// Registers per lane (fp32 unless noted): Z  kMTiles·kZTiles·4, H_r  kMTiles·kHTiles·4.
//   C ≤ 64:  4 warps × 32 rows, TH 64: Z ≤ 64, H 64; 48 KB shared at C = 64, two blocks per SM
//   C = 128: 8 warps × 16 rows, TH 64: Z 64, H 32;  96 KB shared
//   C = 256: 8 warps × 16 rows, TH 32: Z 128, H 16; 128 KB shared
// 128-row blocks everywhere: every block re-reads all of U and V from L2,
// 2·2·C·hidden bytes per 128 rows, i.e. 128 FLOP per L2 byte.
using Config16 = FusedConfig<16, 4, 32, 64, 2>;
using Config32 = FusedConfig<32, 4, 32, 64, 2>;
using Config64 = FusedConfig<64, 4, 32, 64, 2>;
using Config128 = FusedConfig<128, 8, 16, 64, 1>;
using Config256 = FusedConfig<256, 8, 16, 32, 1>;

// ---- the kernel ------------------------------------------------------------------------
//
// Contract. Z[P, C] = φ(X[P, C]·U[C, hidden] + a)·V[hidden, C] + b, all
// row-major, Element = __half or __nv_bfloat16; fp32 accumulation; H_r
// rounded to Element once (before the second mma), Z once at the store.
// Grid: ceil(P / kBlockRows) blocks of kThreads; kSharedBytes dynamic shared.
// Block i owns rows [i·kBlockRows, (i+1)·kBlockRows); warp w rows
// [w·kWarpRows, (w+1)·kWarpRows) of those, all hidden and output columns:
//
//          X_t (smem)            U^r (smem)          H_r (regs)        V_r (smem)       Z_acc (regs)
//   warp 0 [WarpRows × C]   ·   [C × TH]   ->φ->   [WarpRows × TH]  ·  [TH × C]   +=  [WarpRows × C]
//   warp 1 ...                  (shared by all warps)                  (shared)
//
// Shared memory: [ X tile | stage 0: U^r, V_r | stage 1: U^r+1, V_r+1 ],
// every tile row-major in 16-byte chunks, XOR-swizzled (gpu::ChunkSwizzle).
// Edges: rows ≥ P and hidden channels ≥ hidden are zero-filled by cp.async
// (source size 0); rows ≥ P are computed and dropped at the store.
template <class Cfg, class Element>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    fused_ffn_kernel(int P, int hidden, FfnActivation act, const Element* __restrict__ X,
                     const Element* __restrict__ U, const Element* __restrict__ A, const Element* __restrict__ V,
                     const Element* __restrict__ B, Element* __restrict__ Z) {
  constexpr int C = Cfg::kC;
  using SwizzleX = gpu::ChunkSwizzle<Cfg::kARowChunks>;

  extern __shared__ __align__(128) unsigned char shared[];
  const uint32_t x_base = gpu::shared_address(shared);
  const uint32_t stages_base = x_base + Cfg::kXTileBytes;

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;  // mma fragment coordinates (gpu/lib/mma.cuh)
  const int64_t block_row0 = int64_t(blockIdx.x) * Cfg::kBlockRows;
  const int warp_row0 = warp * Cfg::kWarpRows;  // within the block's tile

  // ---- global -> shared -----------------------------------------------------------
  // Chunk idx of a tile is its row-major 16-byte piece; consecutive threads
  // take consecutive pieces (coalesced). All sizes are compile-time, so the
  // loops unroll; `in` turns a piece outside the matrix into zeros.
  {
    constexpr int kPiecesPerRow = C / kChunkElems;
#pragma unroll
    for (int idx = threadIdx.x; idx < Cfg::kBlockRows * kPiecesPerRow; idx += Cfg::kThreads) {
      const int r = idx / kPiecesPerRow, piece = idx % kPiecesPerRow;
      const int64_t row = block_row0 + r;
      const bool in = row < P;
      gpu::cp_async_16(x_base + SwizzleX::byte_offset(r, piece), in ? X + row * C + piece * kChunkElems : X, in);
    }
  }
  // Commit groups: [X + chunk 0] [chunk 1 or empty], as the loop expects.
  gpu::load_ffn_chunk<Cfg>(stages_base, 0, 0, hidden, U, V);
  gpu::cp_async_commit();
  if (gpu::ceil_div(hidden, Cfg::kChunk) > 1) gpu::load_ffn_chunk<Cfg>(stages_base, 1, 1, hidden, U, V);
  gpu::cp_async_commit();

  // ---- the loop over hidden chunks (gpu/lib/ffn_hidden_loop.cuh) ---------------------
  //
  // TUTORIAL: the plain loop is
  //     for r: { load U^r, V_r; sync; H = φ(X·U^r + a_r); Z += H·V_r; sync; }
  // The library's loop double-buffers U^r, V_r (chunk r+1 is copied while
  // chunk r is computed) and keeps H_r in registers: its accumulators are
  // rounded in place into the A operand of the second mma.
  float z_acc[Cfg::kMTiles][Cfg::kZTiles][4] = {};  // Z fragments (gpu::mma_c_coord), fp32
  // φ, element-wise in fp32 (the switch is uniform across the block: no divergence).
  const auto phi = [act](auto& h) {
    const auto apply = [&](auto f) {
#pragma unroll
      for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
        for (int ni = 0; ni < Cfg::kHTiles; ++ni)
#pragma unroll
          for (int e = 0; e < 4; ++e) h[mi][ni][e] = f(h[mi][ni][e]);
    };
    switch (act) {
      case FfnActivation::relu: apply([](float x) { return fmaxf(x, 0.0f); }); break;
      case FfnActivation::silu: apply([](float x) { return x / (1.0f + expf(-x)); }); break;
      case FfnActivation::gelu: apply([](float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }); break;
      default: break;  // identity
    }
  };
  gpu::ffn_hidden_loop<Cfg>(z_acc, x_base, stages_base, warp_row0, hidden, A, U, V, phi);

  // ---- epilogue: + b, round once, store rows < P ---------------------------------
  // Lane holds rows g and g+8, columns 2t and 2t+1 of each n8 tile: one 32-bit
  // store per pair (C even, so the pair is 4-byte aligned).
#pragma unroll
  for (int ni = 0; ni < Cfg::kZTiles; ++ni) {
    const int col = ni * kMmaN + 2 * t;
    const float b0 = gpu::to_float(B[col]), b1 = gpu::to_float(B[col + 1]);
#pragma unroll
    for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int64_t row = block_row0 + warp_row0 + mi * kMmaM + g + 8 * half;
        if (row >= P) continue;
        *reinterpret_cast<uint32_t*>(Z + row * C + col) =
            gpu::pack_pair<Element>(z_acc[mi][ni][2 * half] + b0, z_acc[mi][ni][2 * half + 1] + b1);
      }
  }
}

// ---- launcher ------------------------------------------------------------------------

// The supported set: f16/bf16; C = C_out ∈ {16, 32, 64, 128, 256} (one
// FusedConfig each); hidden % 8 == 0 (whole 16-byte pieces); any P ≥ 1.
bool supports(const FfnProblem& p) {
  const bool width = p.C == 16 || p.C == 32 || p.C == 64 || p.C == 128 || p.C == 256;
  return (p.dtype == DType::f16 || p.dtype == DType::bf16) && width && p.C_out == p.C && p.hidden % kChunkElems == 0 &&
         p.P >= 1;  // P is an int: ceil(P / 128) blocks always fit the grid's x (2^31 − 1)
}

template <class Cfg, class Element> void launch(const FfnProblem& p, const Args<FfnProblem>& args) {
  const auto kernel = fused_ffn_kernel<Cfg, Element>;
  gpu::allow_dynamic_shared(kernel, Cfg::kSharedBytes, "fused_ffn_kernel");  // > 48 KB must be asked for
  const int blocks = gpu::ceil_div(p.P, Cfg::kBlockRows);
  kernel<<<blocks, Cfg::kThreads, Cfg::kSharedBytes>>>(
      p.P, p.hidden, p.activation, static_cast<const Element*>(args.x), static_cast<const Element*>(args.u),
      static_cast<const Element*>(args.a), static_cast<const Element*>(args.v), static_cast<const Element*>(args.b),
      static_cast<Element*>(args.z));
  gpu::check_launch("fused_ffn_kernel");
}

void run(const FfnProblem& p, const Args<FfnProblem>& args) {
  // cp.async moves 16-byte pieces: the buffers must start on 16-byte
  // boundaries (the harness's are cudaMalloc'ed, 256-byte aligned), and the
  // epilogue's 32-bit stores need z 4-byte aligned.
  if (!gpu::aligned_16(args.x) || !gpu::aligned_16(args.u) || !gpu::aligned_16(args.v) || !gpu::aligned_16(args.z))
    throw Unsupported("ffn/gpu/08c_fused_tensor_core: x, u, v and z must be 16-byte aligned");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    switch (p.C) {
      case 16: launch<Config16, Element>(p, args); break;
      case 32: launch<Config32, Element>(p, args); break;
      case 64: launch<Config64, Element>(p, args); break;
      case 128: launch<Config128, Element>(p, args); break;
      case 256: launch<Config256, Element>(p, args); break;
      default: throw Unsupported("ffn/gpu/08c_fused_tensor_core: C must be 16, 32, 64, 128 or 256");
    }
  });
}

const Register<FfnProblem> reg{{
    .name = "08c_fused_tensor_core",
    .device = Device::gpu,
    .lesson = 8,
    .supports = supports,
    .run = run,
    .idea = "Eq. 32 in one kernel: per 128-row tile, loop over hidden chunks; mma accumulators of H reused "
            "in registers as the next mma's A operand; U, V chunks via cp.async, double-buffered",
}};

}  // namespace
}  // namespace convlab
