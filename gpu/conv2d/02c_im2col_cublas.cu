// gpu/conv2d/02c_im2col_cublas.cu — lesson 02, GPU rung 02c: im2col + cuBLAS.
//
// Idea over 02b_im2col_gemm: the same im2col kernel (gpu/lib/im2col.cuh),
// and the matrix product handed to NVIDIA's cuBLAS instead of the suite's own
// SGEMM. This is the classic Caffe recipe (im2col + one cublasSgemm per
// group), and it separates two questions: how much does materialising the
// patch matrix cost (the same here as in 03), and how much is left on the
// table by our GEMM compared with the vendor's (the difference between 03
// and 04)?
//
// cuBLAS takes transposes and leading dimensions as arguments, so neither of
// 03's adapter kernels is needed. cuBLAS is column-major; a row-major matrix
// is the column-major view of its transpose (gpu/gemm/cublas.cu explains the
// trick). We want, per group g,
//
//   row-major     y_g [M, K/G] (ld K)  =  A [M, R·S·T] (ld lda)  ·  w_gᵀ      w_g = [K/G, R·S·T] (ld R·S·T)
//   column-major  y_gᵀ [K/G, M]        =  w_g [K/G, R·S·T]       ·  Aᵀ [R·S·T, M]
//
// In column-major terms the bytes of w_g are a [R·S·T, K/G] matrix (= w_gᵀ),
// so the first operand is that matrix with CUBLAS_OP_T; the bytes of A are
// already Aᵀ [R·S·T, M] (CUBLAS_OP_N, ld lda); the bytes of y_g are y_gᵀ
// [K/G, M] with ld K — a column slice of NHWC y, written in place:
//
//   cublasGemmEx(OP_T, OP_N, m = K/G, n = M, k = R·S·T,
//                w + g·(K/G)·R·S·T, ld R·S·T,   A, ld lda,   y + g·K/G, ld K)
//
// gpu::gemm_row_major (gpu/lib/cublas_handle.cuh) makes that call from
// the row-major statement, y_g = A·w_gᵀ with w_g marked transposed.
//
// 1x1, stride 1, pad 0 (any groups): no im2col. Group g's patch matrix is x
// itself from column g·T on, rows C apart — cuBLAS's leading dimension takes
// the stride, so the view works even with groups (03's GEMM cannot).
//
// fp32 runs on a handle with TF32 off (gpu/lib/cublas_handle.cuh): plain
// IEEE FMAs, as the fp32 tolerance demands. fp16 copies fp16 patches and runs
// on tensor cores with fp32 accumulation (CUBLAS_COMPUTE_32F) and fp16
// output, reduced-precision reductions forbidden by the handle.
// Cost: cuBLAS's GEMM plus the patch matrix written and read once (see 03).
// Workspace: one group's patch matrix, N·P·Q·R·S·T elements (0 for the 1x1 view).
// Run just this: build/convlab run conv2d/gpu/02c_im2col_cublas
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/cublas_handle.cuh"
#include "gpu/lib/element.cuh"
#include "gpu/lib/im2col.cuh"

namespace convlab {
namespace {

bool patch_matrix_is_a_view(const ConvProblem& p) { return p.R == 1 && p.S == 1 && p.stride == 1 && p.pad == 0; }
int64_t patch_rows(const ConvProblem& p) { return int64_t(p.N) * p.P() * p.Q(); }
int64_t patch_cols(const ConvProblem& p) { return int64_t(p.R) * p.S * p.T(); }

std::size_t workspace_bytes(const ConvProblem& p) {
  if (patch_matrix_is_a_view(p)) return 0;
  return std::size_t(patch_rows(p) * patch_cols(p)) * dtype_size(p.dtype);
}

bool supports(const ConvProblem& p) {
  // cuBLAS's m, n, k and leading dimensions are int.
  return (p.dtype == DType::f32 || p.dtype == DType::f16) && patch_rows(p) < (int64_t(1) << 31) &&
         patch_cols(p) < (int64_t(1) << 31);
}

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  if (!patch_matrix_is_a_view(p) && !a.workspace)
    throw std::runtime_error("conv2d/gpu/02c_im2col_cublas: missing workspace");
  const gpu::ConvGeometry g = gpu::geometry_of(p);
  const int M = int(patch_rows(p)), depth = int(patch_cols(p)), Kg = p.K_per_group();
  const cudaDataType_t type = gpu::cuda_data_type(p.dtype);

  gpu::visit_dtype<float, __half>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    const auto* x = static_cast<const Element*>(a.x);  // [N, H, W, C]        NHWC
    const auto* w = static_cast<const Element*>(a.w);  // [K, R, S, C/groups] KRSC
    auto* y = static_cast<Element*>(a.y);              // [N, P, Q, K]        NHWC = [N·P·Q, K]
    auto* patches = static_cast<Element*>(a.workspace);  // [N·P·Q, R·S·T] one group

    for (int group = 0; group < p.groups; ++group) {
      const Element* A = x + int64_t(group) * p.T();   // 1x1 view: x's columns g·T …, rows C apart
      int lda = p.C;
      if (!patch_matrix_is_a_view(p)) {
        gpu::im2col(g, group, x, patches);
        A = patches;
        lda = depth;
      }
      const Element* w_g = w + int64_t(group) * Kg * depth;  // [K/G, R·S·T] row-major
      Element* y_g = y + int64_t(group) * Kg;                // [M, K/G] slice of y, ld K
      // y_g = A · w_gᵀ, row-major: cublasGemmEx(OP_T, OP_N, m = K/G, n = M, k = R·S·T, w_g, A, y_g) as above.
      gpu::gemm_row_major(M, Kg, depth, /*alpha=*/1.f,
                          /*A [M, R·S·T]*/ {.data = A, .type = type, .ld = lda},
                          /*w_g [K/G, R·S·T], used as w_gᵀ*/
                          {.data = w_g, .type = type, .ld = depth, .transposed = true},
                          /*y_g [M, K/G]*/ {.data = y_g, .type = type, .ld = p.K}, "y_g = A·w_g^T");
    }
  });
}

const Register<ConvProblem> reg{{
    .name = "02c_im2col_cublas",
    .device = Device::gpu,
    .lesson = 2,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "im2col kernel + one cublasGemmEx per group, transposes by cuBLAS flags (fp32 without TF32; fp16)",
}};

}  // namespace
}  // namespace convlab
