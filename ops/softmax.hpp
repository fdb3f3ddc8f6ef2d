// ops/softmax.hpp — the row-softmax operation (lesson 09):
//   y[r, c] = exp(x[r, c] − m_r) / Σ_t exp(x[r, t] − m_r),   m_r = max_t x[r, t]
// x and y are [rows, cols] row-major.
#pragma once

#include <string>
#include <vector>

#include "core/harness.hpp"
#include "core/dtype.hpp"

namespace convlab {

struct SoftmaxProblem {
  int rows = 1, cols = 1;
  DType dtype = DType::f32;  // x and y; every variant computes in fp32 or wider

  double elems() const { return double(rows) * cols; }
  // Convention: 5 operations per element (max compare, subtract, exp, add to
  // the sum, multiply by 1/sum), exp counted as one. Softmax is memory-bound;
  // bytes/s and % of bandwidth are the numbers to read.
  double flops() const { return 5.0 * elems(); }
  double min_bytes() const { return 2.0 * dtype_size(dtype) * elems(); }  // read x once, write y once
  int reduction_depth() const { return cols; }                           // the row sum
  bool valid() const { return rows > 0 && cols > 0; }
};

template <> struct Args<SoftmaxProblem> {
  const void* x;    // [rows, cols] row-major, problem dtype
  void* y;          // [rows, cols] row-major, problem dtype; poisoned before each run
  void* workspace;  // workspace_bytes(problem) bytes, or nullptr
};

template <> struct OpTraits<SoftmaxProblem> {
  static constexpr const char* name = "softmax";
  static std::vector<TensorSpec> inputs(const SoftmaxProblem& p);
  static std::vector<TensorSpec> outputs(const SoftmaxProblem& p);
  static Args<SoftmaxProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const SoftmaxProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  static std::vector<SoftmaxProblem> shapes(ShapeTable table, Device device);
  // spec "rows=4096,cols=1024,dtype=f32" (cols defaults to rows); label "4096x1024_f32".
  static std::string spec(const SoftmaxProblem& p);
  static std::string label(const SoftmaxProblem& p);
  static SoftmaxProblem parse(const std::string& spec);
  // From the user's x [rows, cols].
  static SoftmaxProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
};

}  // namespace convlab
