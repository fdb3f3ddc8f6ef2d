#include "ops/ffn.hpp"

#include <climits>
#include <cstdint>

#include "reference/ffn.hpp"

namespace convlab {

template void register_op_handle<FfnProblem>();

std::vector<TensorSpec> OpTraits<FfnProblem>::inputs(const FfnProblem& p) {
  return {{"x", {p.P, p.C}, p.dtype, "row-major PxC"},
          {"u", {p.C, p.hidden}, p.dtype, "row-major Cxhidden"},
          {"a", {p.hidden}, p.dtype, "hidden"},
          {"v", {p.hidden, p.C_out}, p.dtype, "row-major hiddenxC_out"},
          {"b", {p.C_out}, p.dtype, "C_out"}};
}

std::vector<TensorSpec> OpTraits<FfnProblem>::outputs(const FfnProblem& p) {
  return {{"z", {p.P, p.C_out}, p.dtype, "row-major PxC_out"}};
}

Args<FfnProblem> OpTraits<FfnProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* ws) {
  return {in.at(0).data(), in.at(1).data(), in.at(2).data(), in.at(3).data(), in.at(4).data(), out.at(0).data(), ws};
}

void OpTraits<FfnProblem>::reference(const FfnProblem& p, const std::vector<std::vector<double>>& in,
                                     std::vector<std::vector<double>>& out) {
  const ref::FfnShape shape{p.P, p.C, p.hidden, p.C_out, p.activation};
  ref::ffn(shape, in.at(0).data(), in.at(1).data(), in.at(2).data(), in.at(3).data(), in.at(4).data(),
           out.at(0).data());
}

namespace {

using enum DType;
constexpr FfnActivation relu = FfnActivation::relu, silu = FfnActivation::silu, gelu = FfnActivation::gelu;

FfnProblem ffn(int P, int C, int hidden, int C_out, FfnActivation act, DType dtype) {
  return {P, C, hidden, C_out, act, dtype};
}

// Correctness table. P: 1, a prime, and values that leave partial row tiles
// for 64- and 128-row tiles. Channels: 16 and 64 (the tensor-core kernel's
// smallest and typical widths), 128 and 256 (its other configurations), and
// odd or unaligned widths that only the general variants take.
std::vector<FfnProblem> test_shapes(bool gpu) {
  std::vector<FfnProblem> t = {
      // f32: every CPU variant and the fp32 GPU paths
      ffn(1, 16, 64, 16, relu, f32),
      ffn(37, 16, 64, 16, silu, f32),
      ffn(1000, 64, 256, 64, gelu, f32),
      ffn(37, 64, 256, 64, relu, f32),
      ffn(129, 64, 256, 64, silu, f32),
      ffn(1000, 16, 64, 16, relu, f32),
      ffn(37, 17, 45, 13, gelu, f32),  // odd everything, C_out != C
      ffn(5, 3, 7, 2, relu, f32),
      ffn(37, 300, 45, 13, gelu, f32),  // C past one CPU depth slice (256): the sliced packing
      // hidden = 300: past the fused CPU rung's 128-wide hidden chunk (twice, ragged) and
      // past KC = 256 as the second GEMM's depth; P = 131 past its 96-row tile, ragged
      ffn(131, 24, 300, 20, gelu, f32),
      // f16: the cuBLAS path and the fused tensor-core kernel
      ffn(1, 16, 64, 16, relu, f16),
      ffn(37, 64, 256, 64, silu, f16),
      ffn(1000, 64, 256, 64, gelu, f16),
      ffn(1000, 16, 64, 16, relu, f16),
      ffn(129, 64, 256, 64, relu, f16),
      ffn(300, 64, 200, 64, relu, f16),      // hidden not a multiple of the 64-wide chunk
      ffn(37, 32, 128, 32, silu, f16),       // the C = 32 configuration
      ffn(130, 128, 512, 128, gelu, f16),    // the C = 128 configuration
      ffn(70, 256, 1024, 256, silu, f16),    // the C = 256 configuration
      ffn(37, 24, 40, 32, gelu, f16),        // multiples of 8, not of 16, C_out != C: cuBLAS only
      // bf16: cuBLAS and the fused kernel
      ffn(37, 64, 256, 64, relu, bf16),
      ffn(1000, 16, 64, 16, gelu, bf16),
  };
  // GPU only (too slow for the CPU ladder's plain rungs): more 128-row tiles
  // than a persistent grid of 132 CTAs has (08d_fused_wgmma's X buffers and
  // U/V ring wrap across tiles; 08e's CTAs get odd and even counts of 64-row
  // tiles), and a partial last hidden chunk at C = 256.
  if (gpu)
    for (const FfnProblem& p : {ffn(33869, 64, 256, 64, gelu, f16), ffn(17000, 128, 512, 128, silu, bf16),
                                ffn(300, 256, 520, 256, relu, f16),
                                // 08e: one 64-row tile (the second consumer only takes turns) with
                                // its largest resident hidden (5 chunks); two tiles, the second of
                                // one row, and a last chunk of 8 columns
                                ffn(64, 64, 640, 64, gelu, f16), ffn(65, 64, 136, 64, silu, bf16)})
      t.push_back(p);
  return t;
}

}  // namespace

std::vector<FfnProblem> OpTraits<FfnProblem>::shapes(ShapeTable table, Device device) {
  const bool gpu = device == Device::gpu;
  constexpr int kImageNetTokens = 128 * 56 * 56;  // 401408: batch 128 at 56x56, a ConvNeXt stage-1 FFN
  switch (table) {
    case ShapeTable::test: return test_shapes(gpu);
    case ShapeTable::tour:
      // fp32 on both devices, as for gemm: every rung's first step takes it;
      // the fused tensor-core rung takes the fp16 one (the tour uses the first each supports).
      if (gpu) return {ffn(kImageNetTokens, 64, 256, 64, relu, f32), ffn(kImageNetTokens, 64, 256, 64, relu, f16)};
      return {ffn(8 * 28 * 28, 64, 256, 64, relu, f32)};
    case ShapeTable::bench:
      if (gpu)
        return {ffn(kImageNetTokens, 64, 256, 64, relu, f16), ffn(kImageNetTokens, 128, 512, 128, relu, f16),
                ffn(kImageNetTokens, 256, 1024, 256, relu, f16), ffn(kImageNetTokens, 64, 256, 64, relu, f32)};
      return {ffn(8 * 28 * 28, 64, 256, 64, relu, f32)};
  }
  return {};
}

std::string OpTraits<FfnProblem>::spec(const FfnProblem& p) {
  return "P=" + std::to_string(p.P) + ",C=" + std::to_string(p.C) + ",hidden=" + std::to_string(p.hidden) +
         ",C_out=" + std::to_string(p.C_out) + ",act=" + ref::activation_name(p.activation) +
         ",dtype=" + dtype_name(p.dtype);
}

std::string OpTraits<FfnProblem>::label(const FfnProblem& p) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on a
  // long chain of operator+ that starts with a one-character literal.
  std::string s = "p";
  s += std::to_string(p.P);
  s += "_c" + std::to_string(p.C);
  s += "_h" + std::to_string(p.hidden);
  s += "_co" + std::to_string(p.C_out);
  s += std::string("_") + ref::activation_name(p.activation) + "_" + dtype_name(p.dtype);
  return s;
}

namespace {

FfnActivation parse_activation(const std::string& s) {
  for (FfnActivation a : {relu, silu, gelu})
    if (s == ref::activation_name(a)) return a;
  throw SpecError("unknown activation '" + s + "' for ffn (expected relu, silu or gelu)");
}

void validate(const FfnProblem& p) {
  if (!p.valid()) throw SpecError("invalid ffn problem: P, C, hidden and C_out must be positive, act relu, silu or gelu");
}

}  // namespace

FfnProblem OpTraits<FfnProblem>::parse(const std::string& text) {
  const KeyValues kv(text);
  kv.require_only({"P", "C", "hidden", "C_out", "act", "dtype"}, "ffn");
  FfnProblem p;
  p.P = kv.get_int("P", 1024);
  p.C = kv.get_int("C", 64);
  // The default hidden = 4·C, taken in 64 bits and held to the same 2^30 bound
  // as a hidden= key (KeyValues::get_int), so the spec it prints parses again.
  if (!kv.has("hidden") && int64_t(p.C) * 4 > (int64_t(1) << 30))
    throw SpecError("invalid ffn problem: the default hidden = 4*C = " + std::to_string(int64_t(p.C) * 4) +
                    " is over 1073741824, the largest size a key takes; give hidden=... or a smaller C");
  p.hidden = kv.has("hidden") ? kv.get_int("hidden", 0) : 4 * p.C;
  p.C_out = kv.get_int("C_out", p.C);
  p.activation = parse_activation(kv.get("act", "relu"));
  p.dtype = parse_dtype(kv.get("dtype", "f32"));
  validate(p);
  return p;
}

FfnProblem OpTraits<FfnProblem>::from_input_shapes(const std::vector<Shape>& shapes, DType dtype,
                                                   const KeyValues& options) {
  options.require_only({"act"}, "ffn with --in (shapes come from the files)");
  if (shapes.size() != 5 || shapes[0].size() != 2 || shapes[1].size() != 2 || shapes[2].size() != 1 ||
      shapes[3].size() != 2 || shapes[4].size() != 1 || shapes[0][1] != shapes[1][0] ||
      shapes[1][1] != shapes[2][0] || shapes[3][0] != shapes[1][1] || shapes[4][0] != shapes[3][1])
    throw SpecError("ffn takes x [P,C], u [C,hidden], a [hidden], v [hidden,C_out], b [C_out] with matching sizes");
  FfnProblem p{int(shapes[0][0]), int(shapes[0][1]), int(shapes[1][1]), int(shapes[3][1]),
               parse_activation(options.get("act", "relu")), dtype};
  validate(p);
  return p;
}


}  // namespace convlab
