// cpu/conv2d/05b_winograd_f4x4_3x3.cpp — lesson 05, CPU rung 05b: Winograd F(4×4, 3×3).
//
// Idea over 05a_winograd_f2x2_3x3: a bigger tile. A 4×4 block of outputs from
// a 6×6 input tile costs 36 multiplies per (c, k) pair instead of
// 4·4·9 = 144: 4× fewer than direct (F(2×2) saves 2.25×). The same four steps
// (cpu/lib/winograd_cpu.hpp), now with 36 GEMMs.
//
// Cost: the transforms are no longer only ±1: Bᵀ has 4s and 5s, Aᵀ has 2, 4
// and 8, G has 1/4, 1/6, 1/12, 1/24. Per channel an input tile costs 336
// flops (as compiled here: no common subexpressions shared) and an output
// tile 200, i.e. 21 + 12.5 per output pixel against F(2×2)'s 8 + 6; at
// C = K = 64 the transforms are ≈ 12% of the GEMMs' FLOPs (F(2×2): 2.7%).
// V is 36/16 = 2.25× x and M 2.25× y (F(2×2): 4×), so less traffic per output. Accuracy is the price: the evaluation points ±2 make
// Bᵀ and Aᵀ entries up to 8 and G's entries fractions that do not fit a
// binary float exactly, so rounding errors are amplified more — the measured
// fp32 error is several times F(2×2)'s (table in lessons/05-winograd).
// Supports: fp32, 3×3, stride 1, one group, any N, H, W, C, K, pad.
// Run just this: build/convlab run conv2d/cpu/05b_winograd_f4x4_3x3
#include "cpu/lib/winograd_cpu.hpp"

namespace convlab {
namespace {

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  winograd_cpu::run<4>(p, a, "conv2d/cpu/05b_winograd_f4x4_3x3");
}

const Register<ConvProblem> reg{{
    .name = "05b_winograd_f4x4_3x3",
    .device = Device::cpu,
    .lesson = 5,
    .supports = winograd_cpu::supports<4>,
    .run = run,
    .workspace_bytes = winograd_cpu::workspace_bytes<4>,
    .threads = Threads::all,
    .idea = "Winograd F(4x4,3x3): 36 multiplies per 4x4 outputs instead of 144; 36 GEMMs, larger rounding error",
}};

}  // namespace
}  // namespace convlab
