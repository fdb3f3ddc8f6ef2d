// gpu/conv2d/04b_implicit_gemm_tensor_core.cu — lesson 04, GPU rung 04b: implicit GEMM on the tensor cores.
//
// Idea over 04a_implicit_gemm: the same virtual im2col view, now feeding
// lesson 03's tensor-core GEMM (gpu/gemm/03o_tensor_core_pipelined: mma.sync
// m16n8k16, fp16/bf16 in, fp32 accumulate; ldmatrix; cp.async ring; XOR
// swizzle; double-buffered fragments). Per group g, with M = N·P·Q,
// Kg = K/groups, RST = R·S·T:
//
//   A[m, j] = x[n, p·stride + r − pad, q·stride + s − pad, g·T + t]   j = (r·S + s)·T + t, 0 in the padding
//   B[j, k] = w[g·Kg + k, j]     KRSC w is [K, RST] row-major = B column-major
//   Y[m, k] = y[m, g·Kg + k]     NHWC y is [N·P·Q, K] row-major
//
// Three things change against rung 03o:
//
//   1. A's 16-byte chunks come from x through the view. A chunk is 8
//      consecutive j of one row m. When T % 8 == 0 those 8 values are 8
//      consecutive channels of ONE tap (r, s) of ONE input pixel — 16
//      contiguous, 16-byte aligned bytes of x — so a single cp.async moves
//      them, and a chunk in the padding is a cp.async with source size 0,
//      which writes 16 zero bytes without reading anything: padding costs no
//      memory traffic and no branch around the copy.
//   2. B is w itself, [n][j] row-major: the "col" operand mma wants. It is
//      kept [n][j] in shared memory, the same shape as A's [m][j] tile, and
//      read with ldmatrix WITHOUT .trans (rung 03o needed .trans for a [k][n] B).
//   3. Tiles of 128×128×32 and 4 warps of 64×64: Kg = 128 in the target layer,
//      so one block column covers all output channels and x is read once.
//      128 threads and 64 KiB of shared memory per block, two blocks per SM.
//
// Cost of the view, amortised: each thread copies the same chunk column of 4
// rows m of every A tile. The rows' (n, p, q) decode (two divisions each) is
// done once per kernel; the chunk column's (r, s, t) is a cursor moved 32
// reduction indices per tile by additions; per tile a thread computes one tap
// offset (r·W + s)·C + t shared by its 4 rows, then per row a bounds test and
// an add. ~10 integer instructions per 16-byte copy, against the 4·8·2 = 64
// mma a warp issues per tile and k16 step pair: small, and in the copy
// threads' shadow of the tensor cores.
//
// Shapes the fast path cannot take (T % 8 != 0: a chunk would straddle two
// taps or be misaligned) run a predicated slow path: every element is decoded
// on its own and stored into the same swizzled chunk through registers.
//
// Supported: f16 and bf16, any shape, stride, pad and groups; fast path when
// T % 8 == 0 with 16-byte aligned x and w. Limits: N·P·Q ≤ 2³¹ − 1 − 128,
// N·H·W·C + (R + 2·pad + 34)·(W + 1)·C < 2³¹, K·RST < 2³¹, groups ≤ 65535.
// The kernel itself lives in gpu/lib/implicit_gemm_tensor_core.cuh (tile
// diagram, contract, tunables), shared with lesson 07's fused conv + pool;
// this file instantiates it with the plain output policy, StoreY.
// Run just this: build/convlab run conv2d/gpu/04b_implicit_gemm_tensor_core --shape N=128,H=56,C=128,K=128,R=3,pad=1,dtype=f16
#include <climits>
#include <cstdint>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/mma.cuh"
#include "gpu/lib/implicit_gemm_tensor_core.cuh"  // the kernel, and the variant's supports/run

namespace convlab {
namespace {

const Register<ConvProblem> reg{{
    .name = "04b_implicit_gemm_tensor_core",
    .device = Device::gpu,
    .lesson = 4,
    .supports = gpu::tensor_core_conv::supports,
    .run = gpu::tensor_core_conv::run,
    .idea = "gemm rung 03o's mma.sync/ldmatrix/cp.async pipeline (128x128x32, 4 stages) on the im2col view: "
            "padding = zero-fill cp.async; f16/bf16",
}};

}  // namespace
}  // namespace convlab
