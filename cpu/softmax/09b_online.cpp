// cpu/softmax/09b_online.cpp — lesson 09, softmax rung 09b: online max and sum, two passes.
//
// Idea over 09a_three_pass: the maximum and the sum can be found in ONE pass if
// the sum is kept relative to the maximum seen so far and corrected whenever
// the maximum grows (Milakov & Gimelshein, 2018). After j elements keep
//
//   m_j = max(x_1 … x_j),   l_j = Σ_{i ≤ j} exp(x_i − m_j).
//
// A new element x_{j+1} with m_{j+1} = max(m_j, x_{j+1}):
//
//   l_{j+1} = Σ_{i ≤ j+1} exp(x_i − m_{j+1})
//           = exp(m_j − m_{j+1}) · Σ_{i ≤ j} exp(x_i − m_j) + exp(x_{j+1} − m_{j+1})
//           = exp(m_j − m_{j+1}) · l_j + exp(x_{j+1} − m_{j+1}).
//
// Every exponent is still ≤ 0, so nothing overflows, and the factor
// exp(m_j − m_{j+1}) ≤ 1 only shrinks the old sum. Pass 2 writes y. This
// rescaling identity is exactly what the fused attention kernels apply to a
// whole output row instead of one number.
// Cost: two reads of x instead of three, and the same two exps per element as
// the three-pass form: the rescale costs one extra exp only when the maximum
// changes (about ln(cols) times in a random row).
// Run just this: build/convlab run softmax/cpu/09b_online
#include <cmath>

#include "ops/softmax.hpp"

namespace convlab {
namespace {

void run(const SoftmaxProblem& p, const Args<SoftmaxProblem>& a) {
  const float* x = static_cast<const float*>(a.x);  // [rows, cols] row-major
  float* y = static_cast<float*>(a.y);              // [rows, cols] row-major
#pragma omp parallel for schedule(static)
  for (int r = 0; r < p.rows; ++r) {
    const float* xr = x + int64_t(r) * p.cols;
    float* yr = y + int64_t(r) * p.cols;
    float m = xr[0], l = 1.f;  // after the first element: m_1 = x_1, l_1 = exp(0)
    for (int j = 1; j < p.cols; ++j) {
      if (xr[j] > m) {  // a new maximum: rescale the old sum, the new term is exp(0) = 1
        l = l * std::exp(m - xr[j]) + 1.f;
        m = xr[j];
      } else {          // the usual case: one exp, as in the three-pass sum
        l += std::exp(xr[j] - m);
      }
    }
    const float inv_l = 1.f / l;
    for (int j = 0; j < p.cols; ++j) yr[j] = std::exp(xr[j] - m) * inv_l;
  }
}

const Register<SoftmaxProblem> reg{{
    .name = "09b_online",
    .device = Device::cpu,
    .lesson = 9,
    .supports = f32_only<SoftmaxProblem>,
    .run = run,
    .threads = Threads::all,
    .idea = "running max and rescaled running sum in one pass, then normalise: two reads",
}};

}  // namespace
}  // namespace convlab
