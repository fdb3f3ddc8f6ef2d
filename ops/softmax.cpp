#include "ops/softmax.hpp"

#include "reference/softmax.hpp"

namespace convlab {

template void register_op_handle<SoftmaxProblem>();

std::vector<TensorSpec> OpTraits<SoftmaxProblem>::inputs(const SoftmaxProblem& p) {
  return {{"x", {p.rows, p.cols}, p.dtype, "row-major rows x cols"}};
}

std::vector<TensorSpec> OpTraits<SoftmaxProblem>::outputs(const SoftmaxProblem& p) {
  return {{"y", {p.rows, p.cols}, p.dtype, "row-major rows x cols"}};
}

Args<SoftmaxProblem> OpTraits<SoftmaxProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* ws) {
  return {in.at(0).data(), out.at(0).data(), ws};
}

void OpTraits<SoftmaxProblem>::reference(const SoftmaxProblem& p, const std::vector<std::vector<double>>& in,
                                         std::vector<std::vector<double>>& out) {
  ref::softmax_rows(p.rows, p.cols, in.at(0).data(), out.at(0).data());
}

std::vector<SoftmaxProblem> OpTraits<SoftmaxProblem>::shapes(ShapeTable table, Device device) {
  const bool gpu = device == Device::gpu;
  using enum DType;
  switch (table) {
    case ShapeTable::test:
      // One element, one row, a warp ± 1, rows longer than a block's worth of
      // registers, primes. (Large-magnitude rows: tests/lesson09_attention_test.cpp.)
      return {{1, 1, f32},   {1, 31, f32},   {3, 33, f32},   {7, 1000, f32}, {64, 4096, f32},
              {5, 4099, f32}, {128, 257, f32}, {3, 33, f16},  {17, 1025, f16}, {9, 200, bf16}};
    case ShapeTable::tour: return {gpu ? SoftmaxProblem{65536, 4096, f32} : SoftmaxProblem{4096, 1024, f32}};
    case ShapeTable::bench:
      if (gpu) return {{65536, 4096, f32}, {65536, 4096, f16}};
      return {{4096, 1024, f32}};
  }
  return {};
}

std::string OpTraits<SoftmaxProblem>::spec(const SoftmaxProblem& p) {
  return "rows=" + std::to_string(p.rows) + ",cols=" + std::to_string(p.cols) + ",dtype=" + dtype_name(p.dtype);
}

std::string OpTraits<SoftmaxProblem>::label(const SoftmaxProblem& p) {
  return std::to_string(p.rows) + "x" + std::to_string(p.cols) + "_" + dtype_name(p.dtype);
}

SoftmaxProblem OpTraits<SoftmaxProblem>::parse(const std::string& text) {
  const KeyValues kv(text);
  kv.require_only({"rows", "cols", "dtype"}, "softmax");
  SoftmaxProblem p;
  p.rows = kv.get_int("rows", 1024);
  p.cols = kv.get_int("cols", p.rows);
  p.dtype = parse_dtype(kv.get("dtype", "f32"));
  if (!p.valid()) throw SpecError("invalid softmax problem: rows and cols must be positive");
  return p;
}

SoftmaxProblem OpTraits<SoftmaxProblem>::from_input_shapes(const std::vector<Shape>& shapes, DType dtype,
                                                           const KeyValues& options) {
  options.require_only({}, "softmax with --in (the shape comes from the file)");
  if (shapes.size() != 1 || shapes[0].size() != 2) throw SpecError("softmax takes one 2-d input x [rows, cols]");
  SoftmaxProblem p{int(shapes[0][0]), int(shapes[0][1]), dtype};
  if (!p.valid()) throw SpecError("invalid softmax problem: rows and cols must be positive");
  return p;
}

}  // namespace convlab
