// cpu/conv2d/05a_winograd_f2x2_3x3.cpp — lesson 05, CPU rung 05a: Winograd F(2×2, 3×3).
//
// Idea over 02b_im2col_gemm / 04a_implicit_gemm: those rungs compute every
// output pixel with its own 9·C multiply-adds. Neighbouring outputs share
// most of their inputs, and Winograd's minimal filtering algorithm exploits
// that: a 2×2 block of outputs from a 4×4 input tile costs 16 multiplies per
// (c, k) pair instead of 2·2·9 = 36, i.e. 2.25× fewer, in exchange for cheap
// additions before (input transform Bᵀ d B) and after (output transform
// Aᵀ M A) and a filter transform G g Gᵀ done once. The multiplies summed
// over channels become 16 independent GEMMs [tiles × C] · [C × K], handed to
// lesson 03's packed AVX2 GEMM; see cpu/lib/winograd_cpu.hpp for the four
// steps, the tiles and the slab order, and cpu/lib/winograd_transforms.hpp
// for the matrices (derived in lessons/05-winograd/README.md, proved exact in
// tests/lesson05_winograd_test.cpp).
//
// Cost: GEMM FLOPs 16/36 of direct; transforms ≈ (32 adds per input tile per
// channel + 24 per output tile per output channel), i.e. a few percent of the
// GEMMs at C = K = 64; the tensor V is 4× x (16 values per 4 output pixels)
// and M is 4× y, which is why they are made and consumed one L2-sized slab
// at a time. Accuracy: the transforms only add and halve, so fp32 error stays
// near direct convolution's (table in the lesson).
// Supports: fp32, 3×3, stride 1, one group, any N, H, W, C, K, pad.
// Run just this: build/convlab run conv2d/cpu/05a_winograd_f2x2_3x3
#include "cpu/lib/winograd_cpu.hpp"

namespace convlab {
namespace {

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  winograd_cpu::run<2>(p, a, "conv2d/cpu/05a_winograd_f2x2_3x3");
}

const Register<ConvProblem> reg{{
    .name = "05a_winograd_f2x2_3x3",
    .device = Device::cpu,
    .lesson = 5,
    .supports = winograd_cpu::supports<2>,
    .run = run,
    .workspace_bytes = winograd_cpu::workspace_bytes<2>,
    .threads = Threads::all,
    .idea = "Winograd F(2x2,3x3): 16 multiplies per 2x2 outputs instead of 36; 16 GEMMs over channels (lesson 03's)",
}};

}  // namespace
}  // namespace convlab
