// cpu/lib/ffn_cpu.hpp — the element-wise pieces both CPU FFN rungs share:
// φ in fp32, and the pass "rows of a matrix += bias, then φ". Header-only,
// registers nothing; the GEMMs come from lesson 03 (cpu/lib/gemm_kernels.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "ops/ffn.hpp"

namespace convlab::cpu_ffn {

// φ in fp32, the same functions as ref::relu / silu / gelu (exact-erf GELU).
// std::exp(-x) overflows to +inf for x < -88, and x / inf is -0: SiLU's limit.
inline float relu(float x) { return x > 0.0f ? x : 0.0f; }
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }

// m[i, j] = φ(m[i, j] + bias[j]) for i < rows, j < cols; rows ld floats apart.
// The activation switch sits outside the loops, so each loop body is one
// function the compiler can inline (and, for ReLU, vectorise).
inline void bias_activate(int64_t rows, int cols, float* m, std::ptrdiff_t ld, const float* bias,
                          FfnActivation act) {
  const auto pass = [&](auto phi) {
    for (int64_t i = 0; i < rows; ++i) {
      float* row = m + i * ld;
#pragma omp simd
      for (int j = 0; j < cols; ++j) row[j] = phi(row[j] + bias[j]);
    }
  };
  switch (act) {
    case FfnActivation::relu: pass(relu); break;
    case FfnActivation::silu: pass(silu); break;
    case FfnActivation::gelu: pass(gelu); break;
    default: throw std::invalid_argument("ffn: activation not implemented (FfnProblem::valid admits relu, silu, gelu)");
  }
}

// m[i, j] += bias[j]: the output bias, no activation.
inline void add_bias(int64_t rows, int cols, float* m, std::ptrdiff_t ld, const float* bias) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = m + i * ld;
#pragma omp simd
    for (int j = 0; j < cols; ++j) row[j] += bias[j];
  }
}

}  // namespace convlab::cpu_ffn
