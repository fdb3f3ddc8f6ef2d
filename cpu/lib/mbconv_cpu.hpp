// cpu/lib/mbconv_cpu.hpp — pieces the CPU MBConv rungs share (fp32, NHWC):
// the SE gate from per-image channel sums, the gate multiply, and a depthwise
// KxK conv over a band of rows held anywhere in memory. Header-only,
// registers nothing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <bit>
#include <stdexcept>
#include <string>

#include "core/registry.hpp"
#include "cpu/lib/ffn_cpu.hpp"
#include "ops/mbconv.hpp"

namespace convlab::cpu_mbconv {

// e^x in fp32 without a library call or a branch, so that a loop over a row
// vectorises (std::exp does not, and SiLU over the expanded tensor is then
// most of the block's time). Range reduction x = n·ln2 + r with ln2 split in
// two parts (r exact to fp32), e^r by a degree-7 polynomial on |r| ≤ ln2/2,
// 2^n put straight into the exponent bits. Relative error below 3e-7 for
// |x| ≤ 87. The clamp is on n, in integers: a float compare-and-select would
// stop the vectoriser (it may trap), an integer one does not. Outside ±87 the
// result is 0-like or huge-to-inf, which is what SiLU's tails need
// (x / (1 + e^-x) → x or → -0).
inline float exp_fast(float x) {
  const float t = x * 1.44269504088896341f;       // x / ln 2
  int n = int(t + std::copysign(0.5f, t));        // round to nearest (the conversion truncates)
  n = n < -126 ? -126 : n;
  n = n > 127 ? 127 : n;
  const float r = (x - float(n) * 0.693359375f) - float(n) * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return p * std::bit_cast<float>(int32_t((n + 127) << 23));  // · 2^n, n in [-126, 127]
}

// φ(v) in fp32 for MBConv's two activations.
inline float activate(MBConvActivation act, float v) {
  return act == MBConvActivation::relu ? (v > 0.0f ? v : 0.0f) : v / (1.0f + exp_fast(-v));
}

// m[i, j] = φ(m[i, j] + bias[j]) over a rows × cols row-major block: the switch
// outside, a SIMD loop inside.
inline void bias_activate(int64_t rows, int cols, float* m, const float* bias, MBConvActivation act) {
  const auto pass = [&](auto phi) {
    for (int64_t i = 0; i < rows; ++i) {
      float* row = m + i * cols;
#pragma omp simd
      for (int j = 0; j < cols; ++j) row[j] = phi(row[j] + bias[j]);
    }
  };
  if (act == MBConvActivation::relu)
    pass([](float v) { return v > 0.0f ? v : 0.0f; });
  else
    pass([](float v) { return v / (1.0f + exp_fast(-v)); });
}

// SE gate of one image from its channel sums (double, over the P·Q pixels):
//   m = sums / (P·Q);  z = ψ(m·W1 + b1) [Cr];  gate = sigmoid(z·W2 + b2) [hidden].
// W1 [hidden, Cr], W2 [Cr, hidden] row-major. `z` holds Cr floats of scratch.
inline void se_gate(const MBConvProblem& p, const double* sums, const float* w1, const float* b1, const float* w2,
                    const float* b2, float* z, float* gate) {
  const int Hd = p.hidden(), Cr = p.se_channels();
  const double inv = 1.0 / (double(p.P()) * p.Q());
  for (int r = 0; r < Cr; ++r) {
    double acc = b1[r];
    for (int j = 0; j < Hd; ++j) acc += sums[j] * inv * w1[std::ptrdiff_t(j) * Cr + r];
    z[r] = activate(p.activation, float(acc));
  }
  for (int j = 0; j < Hd; ++j) {
    double acc = b2[j];
    for (int r = 0; r < Cr; ++r) acc += double(z[r]) * w2[std::ptrdiff_t(r) * Hd + j];
    gate[j] = float(1.0 / (1.0 + std::exp(-acc)));
  }
}

// Depthwise KxK (pad K/2, stride s) of output rows [p0, p1) of one image,
// plus the bias, then φ:
//   d[(p − p0)·Q + q, j] = φ(bd[j] + Σ_{r,t} w[j, r, t] · in[p·s + r − pad, q·s + t − pad, j])
// `in` holds input rows [h0, h0 + rows) of the image, [rows, W, hidden]
// (rows outside the image are never read: those taps are zero padding).
// `wt` is the weights transposed to [K·K, hidden] (one contiguous vector of
// channels per tap, as in conv2d/cpu/06a_depthwise), so the j loop is SIMD.
inline void depthwise_band(const MBConvProblem& p, const float* in, int h0, const float* wt, const float* bias, int p0,
                           int p1, float* d) {
  const int Hd = p.hidden(), K = p.kernel, pad = K / 2, Q = p.Q(), s = p.stride;
  for (int op = p0; op < p1; ++op)
    for (int q = 0; q < Q; ++q) {
      float* out = d + (std::ptrdiff_t(op - p0) * Q + q) * Hd;
#pragma omp simd
      for (int j = 0; j < Hd; ++j) out[j] = bias[j];
      for (int r = 0; r < K; ++r) {
        const int h = op * s + r - pad;
        if (h < 0 || h >= p.H) continue;
        for (int t = 0; t < K; ++t) {
          const int w = q * s + t - pad;
          if (w < 0 || w >= p.W) continue;
          const float* src = in + (std::ptrdiff_t(h - h0) * p.W + w) * Hd;
          const float* tap = wt + std::ptrdiff_t(r * K + t) * Hd;
#pragma omp simd
          for (int j = 0; j < Hd; ++j) out[j] += src[j] * tap[j];
        }
      }
      if (p.activation == MBConvActivation::relu) {
#pragma omp simd
        for (int j = 0; j < Hd; ++j) out[j] = out[j] > 0.0f ? out[j] : 0.0f;
      } else {
#pragma omp simd
        for (int j = 0; j < Hd; ++j) out[j] = out[j] / (1.0f + exp_fast(-out[j]));
      }
    }
}

// y[i, o] += bp[o] (+ x[i, o] with the residual, whose P, Q are H, W and C_out is C) over `pixels`
// consecutive output pixels: the project GEMM's epilogue in the portable paths.
inline void add_bias_residual(const MBConvProblem& p, std::ptrdiff_t pixels, float* y, const float* bp, const float* x) {
  for (std::ptrdiff_t i = 0; i < pixels; ++i)
    for (int o = 0; o < p.C_out; ++o) y[i * p.C_out + o] += bp[o] + (p.has_residual() ? x[i * p.C + o] : 0.0f);
}

// [hidden, K, K, 1] -> [K·K, hidden].
inline void transpose_depthwise(const MBConvProblem& p, const float* w, float* wt) {
  const int Hd = p.hidden(), taps = p.kernel * p.kernel;
  for (int j = 0; j < Hd; ++j)
    for (int t = 0; t < taps; ++t) wt[std::ptrdiff_t(t) * Hd + j] = w[std::ptrdiff_t(j) * taps + t];
}

// A rung composed of other rungs (11a) calls them through the registry (core/registry.hpp).
template <class P> const Variant<P>& required_variant(const char* op, const char* name) {
  return convlab::required_variant<P>(Device::cpu, "mbconv", op, name);
}

}  // namespace convlab::cpu_mbconv
