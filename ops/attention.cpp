#include "ops/attention.hpp"

#include "reference/attention.hpp"

namespace convlab {

template void register_op_handle<AttentionProblem>();

std::vector<TensorSpec> OpTraits<AttentionProblem>::inputs(const AttentionProblem& p) {
  return {{"q", {p.B, p.H, p.Nq, p.d}, p.dtype, "BHNd"},
          {"k", {p.B, p.H, p.Nk, p.d}, p.dtype, "BHNd"},
          {"v", {p.B, p.H, p.Nk, p.d}, p.dtype, "BHNd"}};
}

std::vector<TensorSpec> OpTraits<AttentionProblem>::outputs(const AttentionProblem& p) {
  return {{"o", {p.B, p.H, p.Nq, p.d}, p.dtype, "BHNd"}};
}

Args<AttentionProblem> OpTraits<AttentionProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out,
                                                        void* ws) {
  return {in.at(0).data(), in.at(1).data(), in.at(2).data(), out.at(0).data(), ws};
}

void OpTraits<AttentionProblem>::reference(const AttentionProblem& p, const std::vector<std::vector<double>>& in,
                                           std::vector<std::vector<double>>& out) {
  ref::AttentionShape s{p.B, p.H, p.Nq, p.Nk, p.d};
  s.scale = s.standard_scale();
  s.causal = p.causal;
  ref::attention(s, in.at(0).data(), in.at(1).data(), in.at(2).data(), out.at(0).data());
}

namespace {

AttentionProblem attn(int B, int H, int Nq, int Nk, int d, bool causal, DType dtype) {
  return {B, H, Nq, Nk, d, causal, dtype};
}

// Sequence lengths 1 (below every tile), 17 (odd, below a 64-key tile), 64 (one
// tile exactly) and 200 (three tiles and a ragged fourth); d = 64 and 128; one
// head and three; masked and not; every dtype. Plus Nq != Nk both ways, where
// top-left causal alignment matters.
std::vector<AttentionProblem> test_shapes() {
  std::vector<AttentionProblem> t;
  for (DType dtype : {DType::f32, DType::f16, DType::bf16})
    for (int n : {1, 17, 64, 200})
      for (int d : {64, 128})
        for (bool causal : {false, true}) {
          const int heads = (n + d) % 3 == 0 ? 1 : 3;  // spread B·H ∈ {1, 3} over the table
          if (dtype == DType::bf16 && d == 128 && n != 200) continue;  // bf16: a lighter sample
          t.push_back(attn(1, heads, n, n, d, causal, dtype));
        }
  for (DType dtype : {DType::f32, DType::f16})
    for (bool causal : {false, true}) {
      t.push_back(attn(1, 2, 17, 130, 64, causal, dtype));  // more keys than queries
      t.push_back(attn(3, 1, 130, 17, 128, causal, dtype)); // more queries than keys
    }
  t.push_back(attn(2, 3, 64, 64, 64, false, DType::f32));
  t.push_back(attn(1, 1, 1, 1, 64, true, DType::bf16));
  // N = 300: three 128-query blocks and three 128-key tiles with a partial last
  // one, so a double-buffered kernel refills its K/V buffers (200 does not).
  for (DType dtype : {DType::f16, DType::bf16})
    for (int d : {64, 128})
      for (bool causal : {false, true}) t.push_back(attn(1, 2, 300, 300, d, causal, dtype));
  return t;
}

}  // namespace

std::vector<AttentionProblem> OpTraits<AttentionProblem>::shapes(ShapeTable table, Device device) {
  const bool gpu = device == Device::gpu;
  using enum DType;
  switch (table) {
    case ShapeTable::test: return test_shapes();
    case ShapeTable::tour:
      // GPU: the fp32 rung takes the second (the tour uses the first each supports).
      if (gpu) return {attn(4, 16, 4096, 4096, 128, false, f16), attn(4, 16, 1024, 1024, 64, false, f32)};
      return {attn(1, 8, 512, 512, 64, false, f32)};
    case ShapeTable::bench:
      if (gpu)
        return {attn(4, 16, 4096, 4096, 128, false, f16), attn(4, 16, 4096, 4096, 128, true, f16),
                attn(4, 16, 4096, 4096, 64, false, f16), attn(4, 16, 4096, 4096, 128, false, bf16),
                attn(4, 16, 1024, 1024, 64, false, f32)};
      return {attn(1, 8, 512, 512, 64, false, f32), attn(1, 8, 512, 512, 64, true, f32)};
  }
  return {};
}

std::string OpTraits<AttentionProblem>::spec(const AttentionProblem& p) {
  std::string s = "B=";
  s += std::to_string(p.B);
  s += ",H=";
  s += std::to_string(p.H);
  s += ",Nq=";
  s += std::to_string(p.Nq);
  s += ",Nk=";
  s += std::to_string(p.Nk);
  s += ",d=";
  s += std::to_string(p.d);
  s += p.causal ? ",causal=1" : ",causal=0";
  s += ",dtype=";
  s += dtype_name(p.dtype);
  return s;
}

std::string OpTraits<AttentionProblem>::label(const AttentionProblem& p) {
  std::string s = "b";
  s += std::to_string(p.B);
  s += "h";
  s += std::to_string(p.H);
  s += "_q";
  s += std::to_string(p.Nq);
  s += "k";
  s += std::to_string(p.Nk);
  s += "_d";
  s += std::to_string(p.d);
  s += p.causal ? "_causal_" : "_";
  s += dtype_name(p.dtype);
  return s;
}

namespace {
void validate(const AttentionProblem& p) {
  if (!p.valid()) throw SpecError("invalid attention problem: B, H, Nq, Nk and d must be positive");
}
bool parse_flag(const KeyValues& kv, const char* key) {
  const int v = kv.get_int(key, 0);
  if (v != 0 && v != 1) throw SpecError(std::string(key) + " must be 0 or 1");
  return v == 1;
}
}  // namespace

AttentionProblem OpTraits<AttentionProblem>::parse(const std::string& text) {
  const KeyValues kv(text);
  kv.require_only({"B", "H", "N", "Nq", "Nk", "d", "causal", "dtype"}, "attention");
  AttentionProblem p;
  p.B = kv.get_int("B", 1);
  p.H = kv.get_int("H", 1);
  const int n = kv.get_int("N", 256);
  p.Nq = kv.get_int("Nq", n);
  p.Nk = kv.get_int("Nk", kv.has("N") ? n : p.Nq);
  p.d = kv.get_int("d", 64);
  p.causal = parse_flag(kv, "causal");
  p.dtype = parse_dtype(kv.get("dtype", "f32"));
  validate(p);
  return p;
}

AttentionProblem OpTraits<AttentionProblem>::from_input_shapes(const std::vector<Shape>& shapes, DType dtype,
                                                               const KeyValues& options) {
  options.require_only({"causal"}, "attention with --in (shapes come from the files)");
  if (shapes.size() != 3 || shapes[0].size() != 4 || shapes[1].size() != 4 || shapes[2].size() != 4)
    throw SpecError("attention takes three 4-d inputs q [B,H,Nq,d], k [B,H,Nk,d], v [B,H,Nk,d]");
  const Shape &q = shapes[0], &k = shapes[1], &v = shapes[2];
  if (k != v || q[0] != k[0] || q[1] != k[1] || q[3] != k[3])
    throw SpecError("attention: k and v must have one shape, and q must share B, H and d with them");
  AttentionProblem p{int(q[0]), int(q[1]), int(q[2]), int(k[2]), int(q[3]), parse_flag(options, "causal"), dtype};
  validate(p);
  return p;
}

}  // namespace convlab
