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
                                    {256, 256, 256, f32},
                                    // Every blocking boundary of every variant, so each variant's own
                                    // test meets them (not only lesson 03's ladder test). CPU rungs
                                    // 05-06 (cpu/lib/gemm_kernels.hpp): MR x NR = 6 x 16 tiles,
                                    // KC = 256 deep slices (K > KC: later slices add to C), MC = 144
                                    // rows per A block, NC = 4080 columns per B panel; rungs 03-04:
                                    // 64 x 512 x 128 cache blocks. GPU rungs: 128-wide block tiles
                                    // and k-tiles of 8-32 are crossed by the same shapes.
                                    {151, 53, 515, f32},   // 2 row blocks (MC + MR + 1), 3 depth slices, ragged
                                    {287, 15, 257, f32},   // narrower than one tile; a 1-deep last slice
                                    {13, 4099, 263, f32},  // 2 column panels (N > NC), K > KC
                                    {67, 521, 130, f32},   // rungs 03-04: every cache block ragged
                                    {1, 1025, 385, f32}};  // one row, long K, N > 2 blocks
      for (GemmProblem p : {GemmProblem{31, 63, 65, f16}, GemmProblem{64, 64, 64, f16},
                            GemmProblem{129, 127, 257, f16}, GemmProblem{1, 8, 16, f16},
                            GemmProblem{65, 33, 96, bf16},
                            // aligned (K, N multiples of 8) with more k-tiles than a
                            // 3-stage pipeline holds: the tensor-core fast paths
                            GemmProblem{200, 264, 264, f16}, GemmProblem{96, 72, 264, bf16}})
        t.push_back(p);
      // GPU only (the CPU ladder's naive rungs would take too long): the
      // 128 x 256 x 64 tiles of the wgmma rungs (gemm/gpu/03p..03r) ± 1, a
      // K tail inside a k tile, more k tiles than their 4-slot ring, and more
      // tiles (17 x 9) than a persistent grid has CTAs.
      if (gpu)
        for (GemmProblem p : {GemmProblem{129, 264, 1032, f16}, GemmProblem{127, 248, 520, bf16},
                              GemmProblem{3, 16, 8, bf16}, GemmProblem{2056, 2056, 72, f16}})
          t.push_back(p);
      return t;
    }
    case ShapeTable::tour:  // the GPU's tensor-core rungs take the second (the tour uses the first each supports)
      if (gpu) return {{4096, 4096, 4096, f32}, {4096, 4096, 4096, f16}};
      return {{512, 512, 512, f32}};
    case ShapeTable::bench:
      if (gpu)
        return {{4096, 4096, 4096, f32},  {4096, 4096, 4096, f16},  {8192, 8192, 8192, f16},
                {4096, 4096, 4096, bf16}, {8192, 8192, 8192, bf16}};
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
