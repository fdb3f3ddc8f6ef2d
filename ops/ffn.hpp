// ops/ffn.hpp — the position-wise feed-forward network of Eq. 30,
//
//   FFN(X) = φ(X·U + a)·V + b
//
// and how the harness draws, checks and names FFN problems (lesson 08).
//
// FfnProblem is the one source of the op's shapes, FLOPs and bytes; the
// activation type is the reference's (ops/ sits above reference/).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "core/harness.hpp"
#include "reference/elementwise.hpp"

namespace convlab {

using FfnActivation = ref::Activation;  // relu, silu or gelu (the exact erf form)

// z = φ(x·u + a)·v + b over P rows (pixels N·H·W, or tokens).
//   x: [P, C]            row-major (NHWC activations with P = N·H·W)
//   u: [C, hidden]       row-major, the reference's [in, out] convention
//   a: [hidden]
//   v: [hidden, C_out]   row-major
//   b: [C_out]
//   z: [P, C_out]        row-major
// Eq. 30 has hidden = α·C and C_out = C.
struct FfnProblem {
  int P = 1;       // rows
  int C = 1;       // input channels
  int hidden = 1;  // hidden channels, α·C
  int C_out = 1;   // output channels (C in Eq. 30)
  FfnActivation activation = FfnActivation::relu;
  DType dtype = DType::f32;  // x, u, a, v, b and z; accumulation fp32 or wider

  // Two GEMMs, 2 FLOPs per multiply-accumulate. The biases and φ are not
  // counted: P·(hidden + C_out) adds and P·hidden activations are under 1%
  // of the MACs for C ≥ 64 (and φ's cost depends on the function).
  double flops() const { return 2.0 * double(P) * (double(C) * hidden + double(hidden) * C_out); }

  // Compulsory DRAM bytes of the loop-fused form (Eq. 32): x read once,
  // the weights and biases read once, z written once. No hidden tensor.
  double min_bytes() const {
    return double(dtype_size(dtype)) * (double(P) * C + double(C) * hidden + hidden + double(hidden) * C_out + C_out +
                                        double(P) * C_out);
  }

  // DRAM bytes of the layer-by-layer form as the suite's unfused variants run
  // it: the GEMM writes the hidden tensor H [P, hidden], the bias+φ pass reads
  // and writes it, the second GEMM reads it (4 passes over P·hidden values);
  // the second GEMM writes z and the bias pass reads and writes it (2 more
  // passes over P·C_out). An epilogue-fused layer-by-layer GEMM pair would
  // still move H twice (written once, read once): hidden_passes = 2, z_passes = 0.
  double layer_by_layer_bytes(int hidden_passes = 4, int z_passes = 2) const {
    return min_bytes() + double(dtype_size(dtype)) * (double(hidden_passes) * P * hidden + double(z_passes) * P * C_out);
  }

  // Tolerance model (core/compare.hpp): bound c·(u_fp32·√depth + u_out).
  // Each output is the end of two chained fp32 reductions: depth C into each
  // hidden value, then depth `hidden` into z; their rounding errors add in
  // quadrature, √(C + hidden) ≥ (√C + √hidden)/√2, and φ's slope is at most
  // ~1.13 (GELU), so depth = C + hidden covers both within the constant.
  // An f16/bf16 problem also rounds the hidden activation to the problem's
  // type before the second GEMM (the layer-by-layer GPU paths store H in
  // f16; the fused kernel feeds it to the second mma as f16) and the unfused
  // paths round H and z once more after their bias pass. Each such rounding
  // is a relative perturbation of at most u_out on independent terms, so with
  // random-sign weights it adds ≈ u_out/√3 to the relative L2 error of z: four
  // roundings give ≈ 1.2·u_out in L2, against c_l2·u_out = 8·u_out in the
  // bound, and the max-abs error stays a few u_out·max|z| against 32·u_out.
  // So the global constants hold without loosening; the depth is not inflated
  // to hide anything.
  int reduction_depth() const { return C + hidden; }

  // φ is one of the FFN's three (ref::Activation also has identity and
  // gelu_tanh, which the variants' epilogues do not implement).
  bool valid() const {
    return P > 0 && C > 0 && hidden > 0 && C_out > 0 &&
           (activation == FfnActivation::relu || activation == FfnActivation::silu ||
            activation == FfnActivation::gelu);
  }
};

template <> struct Args<FfnProblem> {
  const void* x;    // [P, C]          row-major, problem dtype
  const void* u;    // [C, hidden]     row-major
  const void* a;    // [hidden]
  const void* v;    // [hidden, C_out] row-major
  const void* b;    // [C_out]
  void* z;          // [P, C_out]      row-major; poisoned before each run
  void* workspace;  // workspace_bytes(problem) bytes, or nullptr
};

template <> struct OpTraits<FfnProblem> {
  static constexpr const char* name = "ffn";
  static std::vector<TensorSpec> inputs(const FfnProblem& p);
  static std::vector<TensorSpec> outputs(const FfnProblem& p);
  static Args<FfnProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const FfnProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  static std::vector<FfnProblem> shapes(ShapeTable table, Device device);
  // spec "P=401408,C=64,hidden=256,C_out=64,act=relu,dtype=f16" (hidden defaults
  // to 4·C, C_out to C, act to relu, dtype to f32); label
  // "p401408_c64_h256_co64_relu_f16" for benchmark names.
  static std::string spec(const FfnProblem& p);
  static std::string label(const FfnProblem& p);
  static FfnProblem parse(const std::string& spec);
  // The reference keeps the whole hidden tensor [P, hidden] in double (reference/ffn.cpp).
  static uint64_t reference_scratch_bytes(const FfnProblem& p) {
    return checked_bytes({p.P, p.hidden}, sizeof(double), "the ffn reference's hidden tensor");
  }
  // From the user's x [P,C], u [C,hidden], a [hidden], v [hidden,C_out], b [C_out];
  // the activation from `options` (act=relu by default).
  static FfnProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
};

}  // namespace convlab
