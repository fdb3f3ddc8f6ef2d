// gpu/softmax/09c_online_warp.cu — lesson 09, GPU softmax: one warp per row, online max/sum.
//
// Idea: the CPU rung 09b_online on a GPU. Each of a warp's 32 lanes keeps its
// own running (max, sum) over the columns it reads (lane, lane + 32, ...), and
// the 32 partial pairs are merged with the same rescaling identity in a
// 5-round shuffle butterfly — no shared memory, no block barrier. A second
// pass writes y = exp(x − m) / l. 8 warps (8 rows) per block.
// Cost: x read twice (the second read mostly from L2), y written once, all
// coalesced; memory-bound, judged by % of HBM bandwidth. Exp is the accurate
// expf, not __expf: its extra instructions hide under the memory traffic, and
// __expf's error grows with |x| (it scales x by log2 e first).
// Supported: f32, f16, bf16 (computed in fp32), any rows and cols.
// Run just this: build/convlab run softmax/gpu/09c_online_warp
#include "ops/softmax.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/warp_softmax.cuh"

namespace convlab {
namespace {

constexpr int kWarpsPerBlock = 8;

template <class Element>
__global__ void __launch_bounds__(32 * kWarpsPerBlock)
    online_warp_softmax_kernel(int rows, int cols, const Element* __restrict__ x, Element* __restrict__ y) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // a whole warp leaves together: the shuffles stay full-warp
  const int64_t offset = int64_t(row) * cols;
  gpu::warp_softmax_row(x + offset, y + offset, cols, cols);
}

bool supports(const SoftmaxProblem& p) { return gpu::ceil_div<int64_t>(p.rows, kWarpsPerBlock) <= gpu::kMaxGridX; }

void run(const SoftmaxProblem& p, const Args<SoftmaxProblem>& a) {
  gpu::visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    const int blocks = gpu::ceil_div(p.rows, kWarpsPerBlock);
    online_warp_softmax_kernel<Element><<<blocks, 32 * kWarpsPerBlock>>>(
        p.rows, p.cols, static_cast<const Element*>(a.x), static_cast<Element*>(a.y));
    gpu::check_launch("online_warp_softmax_kernel");
  });
}

const Register<SoftmaxProblem> reg{{
    .name = "09c_online_warp",
    .device = Device::gpu,
    .lesson = 9,
    .supports = supports,
    .run = run,
    .idea = "one warp per row; per-lane online (max, sum) merged by a shuffle butterfly; two reads",
}};

}  // namespace
}  // namespace convlab
