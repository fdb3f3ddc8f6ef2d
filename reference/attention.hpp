// reference/attention.hpp — scaled dot-product attention O = softmax(Q·Kᵀ·scale)·V,
// the oracle for lesson 09's fused (FlashAttention-style) kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace convlab::ref {

// Shapes and options of one attention call.
//   q: [B, H, Nq, d]   queries        (all row-major, d fastest)
//   k: [B, H, Nk, d]   keys
//   v: [B, H, Nk, d]   values
//   o: [B, H, Nq, d]   output
//   o[b,h,i,:] = Σ_j softmax_j(scale · q[b,h,i,:]·k[b,h,j,:]) · v[b,h,j,:]
// Causal masking is TOP-LEFT aligned: query i attends to keys j <= i, whatever
// Nq and Nk are. With Nq > Nk the rows i >= Nk see every key; with Nq < Nk the
// keys j > Nq − 1 are seen by no query. (FlashAttention-2 aligns bottom-right
// instead, i.e. query i sees keys j <= i + Nk − Nq; the two agree when Nq == Nk.)
// Top-left never leaves a row empty: key 0 is visible to every query.
struct AttentionShape {
  int B = 1;   // batch
  int H = 1;   // heads
  int Nq = 1;  // query length
  int Nk = 1;  // key / value length
  int d = 1;   // head dimension (queries, keys and values alike)
  // The logit scale. No silent default: it starts as NaN and the reference
  // throws until the caller sets it, usually to standard_scale() = 1/√d.
  double scale = std::numeric_limits<double>::quiet_NaN();
  bool causal = false;  // top-left causal mask, see above

  double standard_scale() const { return 1.0 / std::sqrt(double(d)); }
};

// Plain three-pass attention per query row: scores, row max and sum,
// weighted sum of V. Throws std::invalid_argument when a size is not
// positive, scale is not finite, or a buffer is null.
void attention(const AttentionShape& shape, const double* q, const double* k, const double* v, double* o);

}  // namespace convlab::ref
