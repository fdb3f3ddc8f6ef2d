// cpu/lib/mbconv_cpu.hpp — pieces both CPU MBConv rungs share (fp32, NHWC):
// the SE gate from per-image channel sums, the gate multiply, and a depthwise
// KxK conv over a band of rows held anywhere in memory. Header-only,
// registers nothing.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/registry.hpp"
#include "cpu/lib/ffn_cpu.hpp"
#include "ops/mbconv.hpp"

namespace convlab::cpu_mbconv {

// φ(v) in fp32 for MBConv's two activations.
inline float activate(MBConvActivation act, float v) {
  return act == MBConvActivation::relu ? cpu_ffn::relu(v) : cpu_ffn::silu(v);
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
      for (int j = 0; j < Hd; ++j) out[j] = activate(p.activation, out[j]);
    }
}

// [hidden, K, K, 1] -> [K·K, hidden].
inline void transpose_depthwise(const MBConvProblem& p, const float* w, float* wt) {
  const int Hd = p.hidden(), taps = p.kernel * p.kernel;
  for (int j = 0; j < Hd; ++j)
    for (int t = 0; t < taps; ++t) wt[std::ptrdiff_t(t) * Hd + j] = w[std::ptrdiff_t(j) * taps + t];
}

// A rung composed of other rungs (11a) calls them through the registry.
template <class P> const Variant<P>& required_variant(const char* op, const char* name) {
  const Variant<P>* v = find_variant<P>(Device::cpu, name);
  if (!v) throw std::runtime_error(std::string("mbconv: the rung ") + op + "/cpu/" + name + " is not registered");
  return *v;
}

}  // namespace convlab::cpu_mbconv
