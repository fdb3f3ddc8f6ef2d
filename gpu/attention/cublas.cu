// gpu/attention/cublas.cu — lesson 09, GPU baseline: attention unfused, as three library-grade steps.
//
// What it is: the formula, each step done as well as a library does it.
//
//   1. S = scale · Q·Kᵀ        cuBLAS strided-batched GEMM, one per (b, h); fp32 S
//   2. P = softmax_rows(S)      one warp per row (gpu/lib/warp_softmax.cuh),
//                               causal keys j > i written as 0; P in the problem's dtype
//   3. O = P·V                  cuBLAS strided-batched GEMM, fp32 accumulation
//
// Workspace: S as fp32 and P in the problem's dtype, each [B, H, Nq, Nk] —
// 6 bytes per score at fp16: 6.4 GB at B·H = 64, N = 4096. S is fp32 because
// it is the GEMM's fp32 accumulator written out; P must match V's type for
// the second GEMM (cuBLAS takes one input type). This is the path every
// framework took before fused attention, and the yardstick of rung 09c.
//
// The row-major / column-major trick of gpu/gemm/cublas.cu, per head, done by
// gpu::gemm_row_major_strided_batched (gpu/lib/cublas_handle.cuh):
//   S[Nq,Nk] = Q·Kᵀ row-major (Q ld d; K stored [Nk,d], ld d, transposed)
//            = Sᵀ col-major = K·Qᵀ: cuBLAS gets K's bytes with OP_T, Q's with OP_N, m = Nk, n = Nq, k = d
//   O[Nq,d]  = P·V row-major (P ld Nk; V ld d)
//            = Oᵀ col-major = Vᵀ·Pᵀ: cuBLAS gets V's bytes, then P's, both OP_N, m = d, n = Nq, k = Nk
// Supported: f32 (plain fp32 GEMMs, no TF32), f16, bf16; any sizes.
// Run just this: build/convlab run attention/gpu/cublas --shape B=4,H=16,N=4096,d=128,dtype=f16
#include <cstdint>

#include "ops/attention.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/cublas_handle.cuh"
#include "gpu/lib/warp_softmax.cuh"

namespace convlab {
namespace {

constexpr int kWarpsPerBlock = 8;  // softmax: 8 rows per block

std::size_t scores(const AttentionProblem& p) { return std::size_t(p.B) * p.H * p.Nq * p.Nk; }
std::size_t s_bytes(const AttentionProblem& p) { return (sizeof(float) * scores(p) + 255) / 256 * 256; }  // P starts 256-aligned
std::size_t workspace_bytes(const AttentionProblem& p) { return s_bytes(p) + dtype_size(p.dtype) * scores(p); }

// P[row] = softmax of S[row] over its visible prefix; row = (b·H + h)·Nq + i.
template <class Element>
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    masked_softmax_kernel(int64_t rows, int Nq, int Nk, bool causal, const float* __restrict__ s,
                          Element* __restrict__ p) {
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps leave together
  const int i = int(row % Nq);
  const int visible = causal ? min(i + 1, Nk) : Nk;  // top-left causal: keys 0 .. i
  gpu::warp_softmax_row(s + row * Nk, p + row * Nk, Nk, visible);
}

bool supports(const AttentionProblem& p) {
  const int64_t rows = int64_t(p.B) * p.H * p.Nq;
  return gpu::ceil_div<int64_t>(rows, kWarpsPerBlock) <= gpu::kMaxGridX && int64_t(p.B) * p.H <= INT32_MAX;
}

void run(const AttentionProblem& p, const Args<AttentionProblem>& a) {
  const cudaDataType_t type = gpu::cuda_data_type(p.dtype);
  const int batch = p.B * p.H;
  float* s = static_cast<float*>(a.workspace);  // [B, H, Nq, Nk] fp32
  void* prob = static_cast<unsigned char*>(a.workspace) + s_bytes(p);  // [B, H, Nq, Nk] problem dtype

  // 1. S [Nq,Nk] = scale · Q [Nq,d] · Kᵀ, per head; K is stored [Nk,d], so it goes in transposed.
  gpu::gemm_row_major_strided_batched(
      batch, /*M=*/p.Nq, /*N=*/p.Nk, /*K=*/p.d, /*alpha=*/float(p.scale()),
      /*Q [Nq,d]*/ {.data = a.q, .type = type, .ld = p.d, .batch_stride = int64_t(p.Nq) * p.d},
      /*K [Nk,d], used as Kᵀ*/ {.data = a.k, .type = type, .ld = p.d, .transposed = true,
                                 .batch_stride = int64_t(p.Nk) * p.d},
      /*S [Nq,Nk] fp32*/ {.data = s, .type = CUDA_R_32F, .ld = p.Nk, .batch_stride = int64_t(p.Nq) * p.Nk},
      "S = QK^T");

  // 2. P = masked row softmax of S.
  const int64_t rows = int64_t(batch) * p.Nq;
  const int64_t blocks = gpu::ceil_div<int64_t>(rows, kWarpsPerBlock);
  gpu::visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    masked_softmax_kernel<Element><<<unsigned(blocks), 32 * kWarpsPerBlock>>>(rows, p.Nq, p.Nk, p.causal, s,
                                                                            static_cast<Element*>(prob));
    gpu::check_launch("masked_softmax_kernel");
  });

  // 3. O [Nq,d] = P [Nq,Nk] · V [Nk,d], per head.
  gpu::gemm_row_major_strided_batched(
      batch, /*M=*/p.Nq, /*N=*/p.d, /*K=*/p.Nk, /*alpha=*/1.f,
      /*P [Nq,Nk]*/ {.data = prob, .type = type, .ld = p.Nk, .batch_stride = int64_t(p.Nq) * p.Nk},
      /*V [Nk,d]*/ {.data = a.v, .type = type, .ld = p.d, .batch_stride = int64_t(p.Nk) * p.d},
      /*O [Nq,d]*/ {.data = a.o, .type = type, .ld = p.d, .batch_stride = int64_t(p.Nq) * p.d}, "O = PV");
}

const Register<AttentionProblem> reg{{
    .name = "cublas",
    .device = Device::gpu,
    .lesson = 9,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "unfused: cuBLAS S = QK^T (fp32 S), warp-per-row softmax to P, cuBLAS O = PV; S and P in DRAM",
    .baseline = true,
}};

}  // namespace
}  // namespace convlab
