// gpu/conv2d/02b_im2col_gemm.cu — lesson 02, GPU rung 02b: im2col + the suite's own SGEMM.
//
// Idea over lesson 01's direct kernels (01c_thread_per_output, 01d_smem_tile):
// do not write a convolution kernel at all. Lay the input windows out as a
// patch matrix (gpu/lib/im2col.cuh: one coalesced copy kernel) and the
// convolution of group g becomes one matrix product,
//
//   y_g [N·P·Q, K/G] = patches_g [N·P·Q, R·S·T] · w_gᵀ [R·S·T, K/G]
//
// run by lesson 03's best fp32 GEMM, rung 03m_double_buffering
// (gpu/lib/sgemm_double_buffered.cuh), unchanged. Every trick of that
// kernel — 128×128 block tiles, warp tiles, float4 loads, two shared stages —
// now works for convolutions too.
//
// That kernel computes C = A·B with B [K, N] row-major and dense C; the
// convolution hands it w_g = [K/G, R·S·T] (KRSC rows), i.e. B transposed, and
// for groups > 1 wants C as a column slice of y. Rather than touching the
// validated kernel, two small copy kernels adapt the operands:
//
//   w  [K, R·S·T] (per group [K/G, R·S·T])  --transpose_weights-->  wt [G][R·S·T][K/G]
//   groups > 1:  C = y_tmp [N·P·Q, K/G]     --scatter_group-->      y[:, g·K/G … (g+1)·K/G − 1]
//
// (02c_im2col_cublas needs neither: cuBLAS takes transposes and leading
// dimensions as arguments.)
//
//   plain form:                                   kernels here, per group g:
//     for i, j: A[i][j] = x[window(i), tap(j)]      im2col_kernel            (memory-bound copy)
//     for j, k: B[j][k] = w[g·K/G + k][j]           transpose_weights        (once, all groups)
//     for i, k: C[i][k] = Σ_j A[i][j]·B[j][k]       gemm_double_buffering    (compute-bound)
//     for i, k: y[i][g·K/G + k] = C[i][k]           scatter_group            (groups > 1 only)
//
// 1x1, stride 1, pad 0, groups 1: x viewed as [N·H·W, C] is the patch matrix
// (no im2col). With groups > 1 a group's columns are a strided view, which
// this GEMM (dense A) cannot take, so they are copied.
//
// Cost: the GEMM's 2·N·P·Q·K·R·S·T FLOPs, plus writing and re-reading the
// patch matrix: for N=32, 56×56, C=K=128, 3×3 that is 462 MB each way, about
// 0.22 ms at the H200's ~4.2 TB/s copy rate — next to a GEMM of 29.6 GFLOP at
// ~40 TFLOP/s (≈ 0.74 ms) a ~30% tax that implicit GEMM (lesson 04) removes.
// Workspace (each piece 256-byte aligned): one group's patch matrix
// N·P·Q·R·S·T floats, all of wᵀ (K·R·S·T floats), and for groups > 1 one
// group's output N·P·Q·K/G floats. fp32 only (the GEMM is fp32).
// Run just this: build/convlab run conv2d/gpu/02b_im2col_gemm
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/im2col.cuh"
#include "gpu/lib/sgemm_double_buffered.cuh"

namespace convlab {
namespace {

using gpu::ConvGeometry;

// ---- tunables ----------------------------------------------------------------
constexpr int kCopyThreads = 256;           // transpose_weights and scatter_group: threads per block
constexpr int64_t kCopyMaxBlocks = 65536;   // grid-stride loops cover the rest
constexpr std::size_t kAlignBytes = 256;    // every workspace piece starts here (float4 loads need 16)
static_assert(kCopyThreads % 32 == 0, "whole warps: a warp's 32 stores form one contiguous run");
static_assert(kAlignBytes % 16 == 0, "the GEMM's float4 path needs 16-byte aligned operands");

std::size_t align_up(std::size_t bytes) { return (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes; }

bool patch_matrix_is_x(const ConvProblem& p) {  // x as [N·H·W, C] is group 0's dense patch matrix
  return p.groups == 1 && p.R == 1 && p.S == 1 && p.stride == 1 && p.pad == 0;
}
int64_t patch_rows(const ConvProblem& p) { return int64_t(p.N) * p.P() * p.Q(); }
int64_t patch_cols(const ConvProblem& p) { return int64_t(p.R) * p.S * p.T(); }

// Workspace layout: [patches | wt | y_tmp], byte sizes of the three pieces.
struct Layout {
  std::size_t patches, wt, y_tmp;
  std::size_t total() const { return patches + wt + y_tmp; }
};
Layout layout(const ConvProblem& p) {
  const std::size_t f = sizeof(float);
  return {patch_matrix_is_x(p) ? 0 : align_up(std::size_t(patch_rows(p) * patch_cols(p)) * f),
          align_up(std::size_t(p.K) * std::size_t(patch_cols(p)) * f),
          p.groups > 1 ? align_up(std::size_t(patch_rows(p)) * p.K_per_group() * f) : 0};
}
std::size_t workspace_bytes(const ConvProblem& p) { return layout(p).total(); }

bool supports(const ConvProblem& p) {
  return p.dtype == DType::f32 && patch_rows(p) < (int64_t(1) << 31) && patch_cols(p) < (int64_t(1) << 31) &&
         gpu::ceil_div<int64_t>(patch_rows(p), gpu::double_buffered::kBlockM) <= gpu::kMaxGridYZ;
}

// wt[g][j][k] = w[g·K/G + k][j]: each group's [K/G, R·S·T] block of KRSC
// transposed to [R·S·T, K/G], the B the GEMM wants. Thread e writes wt[e]
// (coalesced stores; the loads stride by R·S·T, but w is small and read once).
__global__ void __launch_bounds__(kCopyThreads)
    transpose_weights(ConvGeometry g, const float* __restrict__ w, float* __restrict__ wt) {
  const int64_t depth = int64_t(g.R) * g.S * g.T;
  const int64_t total = int64_t(g.K) * depth;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int k = int(e % g.K_per_group);          // e = (group·depth + j)·K/G + k
    const int64_t gj = e / g.K_per_group;
    const int64_t j = gj % depth, group = gj / depth;
    wt[e] = w[(group * g.K_per_group + k) * depth + j];
  }
}

// y[i][group·K/G + k] = y_tmp[i][k] for every output pixel i: one group's
// dense GEMM result into its channel slice of NHWC y. Thread e reads y_tmp[e].
__global__ void __launch_bounds__(kCopyThreads)
    scatter_group(ConvGeometry g, int group, const float* __restrict__ y_tmp, float* __restrict__ y) {
  const int64_t total = int64_t(g.N) * g.P * g.Q * g.K_per_group;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / g.K_per_group;
    const int k = int(e - i * g.K_per_group);
    y[i * g.K + int64_t(group) * g.K_per_group + k] = y_tmp[e];
  }
}

unsigned copy_blocks(int64_t elements) {
  return unsigned(std::min<int64_t>(gpu::ceil_div<int64_t>(elements, kCopyThreads), kCopyMaxBlocks));
}

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const auto* x = static_cast<const float*>(a.x);  // [N, H, W, C]        NHWC
  const auto* w = static_cast<const float*>(a.w);  // [K, R, S, C/groups] KRSC
  auto* y = static_cast<float*>(a.y);              // [N, P, Q, K]        NHWC = [N·P·Q, K]
  auto* ws = static_cast<unsigned char*>(a.workspace);
  if (!ws) throw std::runtime_error("conv2d/gpu/02b_im2col_gemm: missing workspace");
  const Layout l = layout(p);
  auto* patches = reinterpret_cast<float*>(ws);                      // [N·P·Q, R·S·T] one group
  auto* wt = reinterpret_cast<float*>(ws + l.patches);               // [G][R·S·T][K/G]
  auto* y_tmp = reinterpret_cast<float*>(ws + l.patches + l.wt);     // [N·P·Q, K/G] (groups > 1)

  const ConvGeometry g = gpu::geometry_of(p);
  const int M = int(patch_rows(p)), depth = int(patch_cols(p)), Kg = p.K_per_group();

  transpose_weights<<<copy_blocks(int64_t(p.K) * depth), kCopyThreads>>>(g, w, wt);
  gpu::check_launch("transpose_weights");

  for (int group = 0; group < p.groups; ++group) {
    const float* A = x;                                              // 1x1 view: x is [N·H·W, C]
    if (!patch_matrix_is_x(p)) {
      gpu::im2col(g, group, x, patches);
      A = patches;
    }
    const float* B = wt + int64_t(group) * depth * Kg;               // [R·S·T, K/G]
    float* C = p.groups == 1 ? y : y_tmp;                            // [N·P·Q, K/G], dense
    gpu::double_buffered::launch(M, Kg, depth, A, B, C);
    if (p.groups > 1) {
      scatter_group<<<copy_blocks(int64_t(M) * Kg), kCopyThreads>>>(g, group, y_tmp, y);
      gpu::check_launch("scatter_group");
    }
  }
}

const Register<ConvProblem> reg{{
    .name = "02b_im2col_gemm",
    .device = Device::gpu,
    .lesson = 2,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "im2col kernel + lesson 03's double-buffered SGEMM (wᵀ by a small transpose kernel)",
}};

}  // namespace
}  // namespace convlab
