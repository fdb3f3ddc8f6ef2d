// gpu/conv2d/implicit_gemm_tensor_core.cuh — lesson 04's tensor-core implicit-GEMM conv, for other variants.
//
// gpu/conv2d/06_implicit_gemm_tensor_core.cu defines these two (its own
// supports() and run(), unchanged) so a later rung can call the suite's
// fp16/bf16 tensor-core GEMM instead of copying it: lesson 06's
// 10_pointwise.cu hands it 1x1 convolutions, for which the im2col view is
// the identity and the kernel is a plain GEMM Y[N·H·W, K] = X[N·H·W, C] · Wᵀ.
#pragma once

#include "core/ops/conv2d.hpp"

namespace convlab::gpu::tensor_core_conv {

// f16 or bf16, and the size limits of 06's header.
bool supports(const ConvProblem& p);
// Asynchronous on the default stream, as every variant's run().
void run(const ConvProblem& p, const Args<ConvProblem>& args);

}  // namespace convlab::gpu::tensor_core_conv
