// core/ops/gemm.hpp — the GEMM operation: C[M,N] = A[M,K] · B[K,N], row-major.
#pragma once

#include <string>
#include <vector>

#include "core/harness.hpp"
#include "core/problems.hpp"

namespace convlab {

template <> struct Args<GemmProblem> {
  const void* a;    // [M, K] row-major, problem dtype
  const void* b;    // [K, N] row-major, problem dtype
  void* c;          // [M, N] row-major, problem dtype; poisoned before each run
  void* workspace;  // workspace_bytes(problem) bytes, or nullptr
};

template <> struct OpTraits<GemmProblem> {
  static constexpr const char* name = "gemm";
  static std::vector<TensorSpec> inputs(const GemmProblem& p);
  static std::vector<TensorSpec> outputs(const GemmProblem& p);
  static Args<GemmProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const GemmProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  static std::vector<GemmProblem> shapes(ShapeTable table, Device device);
  // spec "M=512,N=512,K=512,dtype=f32" (N and K default to M); label "512x512x512_f32".
  static std::string spec(const GemmProblem& p);
  static std::string label(const GemmProblem& p);
  static GemmProblem parse(const std::string& spec);
  // From the user's a [M,K] and b [K,N].
  static GemmProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
};

}  // namespace convlab
