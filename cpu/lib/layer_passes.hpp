// cpu/lib/layer_passes.hpp — the two cheap passes of the layer-by-layer
// form (lesson 07), shared by the CPU rungs that need them.
//
// Each is a separate sweep over the full-resolution conv output y_full
// [N, P, Q, K] (NHWC): that is the point of rung 07a — every pass streams the
// whole tensor through memory again.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace convlab::cpu_conv_pool {

// y_full[m, k] = max(y_full[m, k]·scale[k] + bias[k], 0), in place: reads and writes y_full once.
inline void scale_bias_relu_pass(int64_t pixels, int K, const float* scale, const float* bias, float* y_full) {
#pragma omp parallel for schedule(static)
  for (int64_t m = 0; m < pixels; ++m) {
    float* row = y_full + m * K;
    for (int k = 0; k < K; ++k) row[k] = std::max(row[k] * scale[k] + bias[k], 0.f);
  }
}

// y_pool[n, i, j, k] = max over a, b ∈ {0,1} of y_full[n, 2i+a, 2j+b, k]  (floor: odd P / Q drop the last).
inline void maxpool2x2_pass(int N, int P, int Q, int K, const float* y_full, float* y_pool) {
  const int P2 = P / 2, Q2 = Q / 2;
#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < P2; ++i) {
      const float* top = y_full + ((int64_t(n) * P + 2 * i) * Q) * K;  // conv row 2i
      const float* bottom = top + int64_t(Q) * K;                       // conv row 2i + 1
      float* out = y_pool + ((int64_t(n) * P2 + i) * Q2) * K;
      for (int j = 0; j < Q2; ++j)
        for (int k = 0; k < K; ++k) {
          const int64_t left = int64_t(2 * j) * K + k, right = left + K;
          out[int64_t(j) * K + k] = std::max(std::max(top[left], top[right]), std::max(bottom[left], bottom[right]));
        }
    }
}

}  // namespace convlab::cpu_conv_pool
