#include "ops/gemm.hpp"

#include "reference/gemm.hpp"

namespace convlab {

template void register_op_handle<GemmProblem>();

std::vector<TensorSpec> OpTraits<GemmProblem>::inputs(const GemmProblem& p) {
  return {{"a", {p.M, p.K}, p.dtype, "row-major MxK"}, {"b", {p.K, p.N}, p.dtype, "row-major KxN"}};
}

std::vector<TensorSpec> OpTraits<GemmProblem>::outputs(const GemmProblem& p) {
  return {{"c", {p.M, p.N}, p.dtype, "row-major MxN"}};
}

Args<GemmProblem> OpTraits<GemmProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* ws) {
  return {in.at(0).data(), in.at(1).data(), out.at(0).data(), ws};
}

void OpTraits<GemmProblem>::reference(const GemmProblem& p, const std::vector<std::vector<double>>& in,
                                      std::vector<std::vector<double>>& out) {
  ref::gemm(p.M, p.N, p.K, in.at(0).data(), in.at(1).data(), out.at(0).data());
}

std::vector<GemmProblem> OpTraits<GemmProblem>::shapes(ShapeTable table, Device device) {
  const bool gpu = device == Device::gpu;
  using enum DType;
  switch (table) {
    case ShapeTable::test: {
      // Ones, primes, tile ± 1 for 16/32/64/128 tiles, skinny and wide.
      std::vector<GemmProblem> t = {{1, 1, 1, f32},     {1, 17, 33, f32},    {7, 5, 3, f32},
                                    {31, 63, 65, f32},  {64, 64, 64, f32},   {65, 129, 31, f32},
                                    {128, 1, 128, f32}, {3, 257, 1, f32},    {127, 96, 200, f32},
                                    {256, 256, 256, f32}};
      for (GemmProblem p : {GemmProblem{31, 63, 65, f16}, GemmProblem{64, 64, 64, f16},
                            GemmProblem{129, 127, 257, f16}, GemmProblem{1, 8, 16, f16},
                            GemmProblem{65, 33, 96, bf16},
                            // aligned (K, N multiples of 8) with more k-tiles than a
                            // 3-stage pipeline holds: the tensor-core fast paths
                            GemmProblem{200, 264, 264, f16}, GemmProblem{96, 72, 264, bf16}})
        t.push_back(p);
      return t;
    }
    case ShapeTable::tour: return {gpu ? GemmProblem{4096, 4096, 4096, f32} : GemmProblem{512, 512, 512, f32}};
    case ShapeTable::bench:
      if (gpu) return {{4096, 4096, 4096, f32}, {4096, 4096, 4096, f16}, {8192, 8192, 8192, f16}};
      return {{256, 256, 256, f32}, {1024, 1024, 1024, f32}, {2048, 2048, 2048, f32}};
  }
  return {};
}

std::string OpTraits<GemmProblem>::spec(const GemmProblem& p) {
  return "M=" + std::to_string(p.M) + ",N=" + std::to_string(p.N) + ",K=" + std::to_string(p.K) +
         ",dtype=" + dtype_name(p.dtype);
}

std::string OpTraits<GemmProblem>::label(const GemmProblem& p) {
  return std::to_string(p.M) + "x" + std::to_string(p.N) + "x" + std::to_string(p.K) + "_" + dtype_name(p.dtype);
}

GemmProblem OpTraits<GemmProblem>::parse(const std::string& text) {
  const KeyValues kv(text);
  kv.require_only({"M", "N", "K", "dtype"}, "gemm");
  GemmProblem p;
  p.M = kv.get_int("M", 256);
  p.N = kv.get_int("N", p.M);
  p.K = kv.get_int("K", p.M);
  p.dtype = parse_dtype(kv.get("dtype", "f32"));
  if (!p.valid()) throw SpecError("invalid gemm problem: M, N and K must be positive");
  return p;
}

GemmProblem OpTraits<GemmProblem>::from_input_shapes(const std::vector<Shape>& shapes, DType dtype,
                                                     const KeyValues& options) {
  options.require_only({}, "gemm with --in (shapes come from the files)");
  if (shapes.size() != 2 || shapes[0].size() != 2 || shapes[1].size() != 2 || shapes[0][1] != shapes[1][0])
    throw SpecError("gemm takes two 2-d inputs a [M,K] and b [K,N] with matching K");
  GemmProblem p{int(shapes[0][0]), int(shapes[1][1]), int(shapes[0][1]), dtype};
  if (!p.valid()) throw SpecError("invalid gemm problem: M, N and K must be positive");
  return p;
}

}  // namespace convlab
