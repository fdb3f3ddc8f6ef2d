// reference/elementwise.hpp — activation functions and the per-channel affine
// map y = x·scale[c] + bias[c], the element-wise pieces every fused kernel
// applies after its reductions.
//
// Each activation comes twice: a scalar function (what a fused kernel's
// epilogue computes per element) and an array form over `count` contiguous
// doubles. The array forms allow x == y (in place); other overlaps are not
// allowed.
#pragma once

#include <cstdint>

namespace convlab::ref {

// The activations a layer can be configured with (FFN's φ, the blocks' and
// squeeze-excitation's non-linearities). Sigmoid is not in the list: it is the
// gate of squeeze-excitation, never a layer's configurable φ.
enum class Activation {
  identity,   // φ(x) = x
  relu,       // φ(x) = max(x, 0)
  silu,       // φ(x) = x·sigmoid(x)  (also called swish)
  gelu,       // φ(x) = x·Φ(x) = ½·x·(1 + erf(x/√2)), the exact form
  gelu_tanh,  // φ(x) = ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), the approximation
};

// "identity", "relu", "silu", "gelu", "gelu_tanh".
const char* activation_name(Activation activation);

// ---- scalar forms ----------------------------------------------------------

double relu(double x);
// 1 / (1 + e^−x), evaluated so that e^|x| never overflows: for x < 0 it uses
// the equal form e^x / (1 + e^x). Finite and in [0, 1] for every finite x.
double sigmoid(double x);
double silu(double x);
double gelu(double x);
double gelu_tanh(double x);
double activate(Activation activation, double x);

// ---- array forms: y[i] = f(x[i]) for 0 <= i < count --------------------------
// Throw std::invalid_argument when count < 0 or (count > 0 and) a buffer is null.

void relu(int64_t count, const double* x, double* y);
void sigmoid(int64_t count, const double* x, double* y);
void silu(int64_t count, const double* x, double* y);
void gelu(int64_t count, const double* x, double* y);
void gelu_tanh(int64_t count, const double* x, double* y);
void activate(Activation activation, int64_t count, const double* x, double* y);

// ---- per-channel scale and bias ---------------------------------------------
// y[p, c] = x[p, c]·scale[c] + bias[c] on a channels-last tensor:
//   x, y:   [pixels, channels]  (NHWC with pixels = N·H·W), x == y allowed
//   scale:  [channels], or nullptr for scale 1
//   bias:   [channels], or nullptr for bias 0
// Throws std::invalid_argument when pixels < 0, channels <= 0, or x / y is null.
void channel_scale_bias(int64_t pixels, int channels, const double* x, const double* scale, const double* bias,
                        double* y);

}  // namespace convlab::ref
