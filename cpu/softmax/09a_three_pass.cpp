// cpu/softmax/09a_three_pass.cpp — lesson 09, softmax rung 09a: the safe softmax, three passes.
//
// Idea: exp overflows float above x ≈ 88.7, so a row of logits ~1e4 cannot be
// exponentiated as it is. Softmax does not change when a constant is
// subtracted from every entry of a row, so subtract the row's maximum m first:
// every exponent is then ≤ 0, the largest term is exactly 1, and nothing
// overflows. That needs m before the first exp, hence three passes over x:
//
//   pass 1:  m = max_j x_j
//   pass 2:  l = Σ_j exp(x_j − m)
//   pass 3:  y_j = exp(x_j − m) / l
//
// Cost: x is read three times (exp evaluated twice per element); for rows
// longer than the cache that is three trips to DRAM. Rows are independent,
// so OpenMP shares them out.
// Run just this: build/convlab run softmax/cpu/09a_three_pass
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
    float m = -INFINITY;
    for (int j = 0; j < p.cols; ++j) m = std::fmax(m, xr[j]);
    float l = 0.f;
    for (int j = 0; j < p.cols; ++j) l += std::exp(xr[j] - m);
    const float inv_l = 1.f / l;
    for (int j = 0; j < p.cols; ++j) yr[j] = std::exp(xr[j] - m) * inv_l;
  }
}

const Register<SoftmaxProblem> reg{{
    .name = "09a_three_pass",
    .device = Device::cpu,
    .lesson = 9,
    .supports = f32_only<SoftmaxProblem>,
    .run = run,
    .threads = Threads::all,
    .idea = "max, then sum of exp(x - max), then normalise: three reads of every row",
}};

}  // namespace
}  // namespace convlab
