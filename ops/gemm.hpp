// ops/gemm.hpp — the GEMM operation: C[M,N] = A[M,K] · B[K,N], row-major.
// Its problem descriptor (shapes, FLOPs, compulsory bytes), what a variant
// receives, and how the harness draws, checks and names GEMM problems.
// "Compulsory bytes" follow Lavin's Eq. 23: every input element read once,
// every weight read once, every output written once, nothing re-read. It is
// the floor a kernel's traffic can approach, not what a naive kernel moves.
// Operational intensity (Eq. 24) is flops() / min_bytes().
#pragma once

#include <string>
#include <vector>

#include "core/harness.hpp"
#include "core/dtype.hpp"

namespace convlab {

// C[M,N] = A[M,K] · B[K,N], all row-major, no transposes.
struct GemmProblem {
  int M = 0, N = 0, K = 0;
  DType dtype = DType::f32;  // A, B and C; accumulation is always fp32 or wider

  double flops() const { return 2.0 * M * N * K; }
  double min_bytes() const { return double(dtype_size(dtype)) * (double(M) * K + double(K) * N + double(M) * N); }
  int reduction_depth() const { return K; }
  bool valid() const { return M > 0 && N > 0 && K > 0; }
};


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
