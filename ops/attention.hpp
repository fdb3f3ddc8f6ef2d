// ops/attention.hpp — scaled dot-product attention (lesson 09):
//   O = softmax(Q·Kᵀ·scale [+ causal mask]) · V,   scale = 1/√d
// per (batch, head).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "core/harness.hpp"
#include "core/dtype.hpp"

namespace convlab {

//   q: [B, H, Nq, d]   k: [B, H, Nk, d]   v: [B, H, Nk, d]   o: [B, H, Nq, d]
// all row-major (d fastest), one dtype. Causal masking is TOP-LEFT aligned, as
// in reference/attention.hpp: query i sees keys j <= i whatever Nq and Nk are,
// as PyTorch's scaled_dot_product_attention(is_causal=True) does (its mask is
// ones(L, S).tril()). FlashAttention 2.1 and later align bottom-right; the two
// agree when Nq == Nk, which is every benchmark shape.
struct AttentionProblem {
  int B = 1, H = 1, Nq = 1, Nk = 1, d = 64;
  bool causal = false;
  DType dtype = DType::f32;

  double scale() const { return 1.0 / std::sqrt(double(d)); }
  double heads() const { return double(B) * H; }

  // (query, key) pairs that take part: Nq·Nk, or Σ_i min(i + 1, Nk) with the
  // top-left causal mask (about half of Nq·Nk when Nq == Nk).
  double visible_pairs() const {
    if (!causal) return double(Nq) * Nk;
    if (Nq <= Nk) return double(Nq) * (Nq + 1) / 2;
    return double(Nk) * (Nk + 1) / 2 + double(Nq - Nk) * Nk;
  }
  // Convention: 4·d FLOPs per visible (query, key) pair — 2·d for the score
  // q·k and 2·d for adding p·v into the output; softmax's exp and sums are
  // not counted. Non-causal: 4·B·H·Nq·Nk·d, the count FlashAttention's papers
  // and the 150 TFLOP/s goal use. Causal: only the visible half, so a
  // causal kernel that skipped nothing would look twice as slow as it is, and
  // one that skips masked tiles is not credited with work it did not do.
  double flops() const { return 4.0 * d * heads() * visible_pairs(); }
  // q, k, v read once, o written once: O(N·d). The N×N scores are not
  // compulsory — avoiding them is the whole point of the fused form.
  double min_bytes() const {
    return dtype_size(dtype) * heads() * d * (2.0 * Nq + 2.0 * Nk);
  }
  // Tolerance (core/compare.hpp: bound ∝ u_f32·√depth + u_dtype). An output
  // is behind two reductions: the score, a sum of d products, and the
  // weighted sum of Nk values (with the normaliser, another Nk-long sum).
  // Their rounding errors are independent and add in quadrature, so
  // u·√d and u·√Nk combine to u·√(d + Nk). The fp16/bf16 term u_dtype covers
  // the rounding of O and, for the tensor-core kernels, the rounding of the
  // probabilities to fp16/bf16 before the P·V product: each p_j (in [0, 1])
  // gets a relative error ≤ u_dtype, so o = Σ p_j v_j / l moves by at most
  // u_dtype·max|v|, and in the mean by u_dtype·|o|/√3 or less — well inside the
  // fixed multiples of u_dtype compare() allows. An fp16 accumulation of
  // P·V (error ~u_f16·√Nk) would still fail, as it should.
  int reduction_depth() const { return d + Nk; }
  bool valid() const { return B > 0 && H > 0 && Nq > 0 && Nk > 0 && d > 0; }
};

template <> struct Args<AttentionProblem> {
  const void* q;    // [B, H, Nq, d] row-major, problem dtype
  const void* k;    // [B, H, Nk, d] row-major, problem dtype
  const void* v;    // [B, H, Nk, d] row-major, problem dtype
  void* o;          // [B, H, Nq, d] row-major, problem dtype; poisoned before each run
  void* workspace;  // workspace_bytes(problem) bytes, or nullptr
};

template <> struct OpTraits<AttentionProblem> {
  static constexpr const char* name = "attention";
  static std::vector<TensorSpec> inputs(const AttentionProblem& p);
  static std::vector<TensorSpec> outputs(const AttentionProblem& p);
  static Args<AttentionProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const AttentionProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  static std::vector<AttentionProblem> shapes(ShapeTable table, Device device);
  // spec "B=4,H=16,Nq=4096,Nk=4096,d=128,causal=0,dtype=f16" (N=... sets Nq and
  // Nk; defaults B=1, H=1, Nk=Nq, d=64, causal=0, dtype=f32);
  // label "b4h16_q4096k4096_d128_f16" with "_causal" before the dtype when masked.
  static std::string spec(const AttentionProblem& p);
  static std::string label(const AttentionProblem& p);
  static AttentionProblem parse(const std::string& spec);
  // From the user's q [B,H,Nq,d], k [B,H,Nk,d], v [B,H,Nk,d]; causal=1 from the options.
  static AttentionProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
};

}  // namespace convlab
