// tests/fuzz/fuzz_targets.cpp — the harnesses of tests/fuzz/fuzz_targets.hpp.
#include "tests/fuzz/fuzz_targets.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "app/common.hpp"
#include "core/checked_size.hpp"
#include "core/json.hpp"
#include "core/npy.hpp"
#include "ops/attention.hpp"
#include "ops/conv2d.hpp"
#include "ops/conv_pool.hpp"
#include "ops/ffn.hpp"
#include "ops/gemm.hpp"
#include "ops/softmax.hpp"
#include "core/spec.hpp"

namespace convlab::fuzz {
namespace {

std::string as_text(const uint8_t* data, std::size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

[[noreturn]] void broken(const std::string& what) { throw FuzzFailure(what); }

// Parses `text` as a P and, when that succeeds, sizes its tensors the checked way (no allocation).
template <class P> void parse_problem(const std::string& text) {
  P p;
  try {
    p = OpTraits<P>::parse(text);
  } catch (const SpecError&) {
    return;
  } catch (const std::invalid_argument&) {  // parse_dtype's unknown dtype
    return;
  }
  if (!p.valid()) broken("parse accepted an invalid problem: " + OpTraits<P>::spec(p));
  // The canonical text parses back to the same problem.
  if (OpTraits<P>::spec(OpTraits<P>::parse(OpTraits<P>::spec(p))) != OpTraits<P>::spec(p))
    broken("spec does not round-trip: " + OpTraits<P>::spec(p));
  try {
    for (const TensorSpec& s : OpTraits<P>::inputs(p)) checked_bytes(s.shape, dtype_size(s.dtype), s.name);
    for (const TensorSpec& s : OpTraits<P>::outputs(p)) checked_bytes(s.shape, dtype_size(s.dtype), s.name);
  } catch (const SizeError&) {
  }
}

// Bytes of a .npy file written by write_npy (the one writer there is).
std::string npy_file_bytes(const Shape& shape, DType dtype) {
  const auto path = std::filesystem::temp_directory_path() / ("convlab_fuzz_seed_" + std::to_string(::getpid()) + ".npy");
  Tensor t(shape, dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, 0.25 * double(i % 7) - 0.5);
  write_npy(path.string(), t);
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return s.str();
}

// A version 2.0 file (4-byte header length) by hand: one float, 1.0.
std::string version2_seed() {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  header.append(64 - (12 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x02';
  out += '\x00';
  for (int i = 0; i < 4; ++i) out += char((header.size() >> (8 * i)) & 0xFF);
  out += header;
  const float one = 1.0f;
  out.append(reinterpret_cast<const char*>(&one), 4);
  return out;
}

}  // namespace

void fuzz_npy(const uint8_t* data, std::size_t size) {
  const std::string bytes = as_text(data, size);
  try {
    const Tensor t = read_npy_bytes(bytes, "fuzz.npy");
    // What was read must have come from the bytes: no tensor larger than its file.
    if (t.bytes() > size) broken("read_npy made a tensor of " + std::to_string(t.bytes()) + " bytes from " +
                                 std::to_string(size) + " bytes of file");
    if (t.bytes() > 0) (void)t.get(t.numel() - 1);  // the last element is inside the buffer (ASan checks)
  } catch (const std::runtime_error&) {
  }
}

void fuzz_json(const uint8_t* data, std::size_t size) {
  try {
    const json::Value v = json::parse(as_text(data, size));
    // Whatever parsed quotes and re-parses as a string.
    if (v.is_string() && json::parse(json::quote(v.text)).text != v.text) broken("quote() does not round-trip");
  } catch (const std::runtime_error&) {
  }
}

void fuzz_options(const uint8_t* data, std::size_t size) {
  if (size == 0) return;
  const std::string text = as_text(data + 1, size - 1);
  try {
    const KeyValues kv(text);
    for (const auto& [k, v] : kv.values())
      if (k.empty() || v.empty() || k.find('=') != std::string::npos) broken("KeyValues kept a malformed item");
  } catch (const SpecError&) {
  }
  switch (data[0] % 6) {
    case 0: parse_problem<ConvProblem>(text); break;
    case 1: parse_problem<GemmProblem>(text); break;
    case 2: parse_problem<FfnProblem>(text); break;
    case 3: parse_problem<AttentionProblem>(text); break;
    case 4: parse_problem<SoftmaxProblem>(text); break;
    case 5: parse_problem<ConvPoolProblem>(text); break;
  }
  // The same bytes as a command line of `convlab run`.
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  try {
    const app::ParsedArgs a = app::parse_args(
        words, {{"--shape", true}, {"--seed", true}, {"--in", true}, {"--out", true}, {"--reps", true}, {"--json", false}},
        "run");
    for (const auto& [name, value] : a.values_)
      if (name != "--json" && value.empty()) broken("parse_args took an empty value for " + name);
    (void)a.get_int("--reps", -1, 0, 1000000);
  } catch (const app::UsageError&) {
  }
  try {
    (void)parse_byte_count(text, "fuzz");
  } catch (const SizeError&) {
  }
}

std::vector<std::string> npy_seeds() {
  return {npy_file_bytes({2, 3}, DType::f32), npy_file_bytes({}, DType::f32), npy_file_bytes({1, 5, 3, 2}, DType::f16),
          npy_file_bytes({0, 4}, DType::f32), npy_file_bytes({7}, DType::f16),
          version2_seed()};
}

std::vector<std::string> json_seeds() {
  return {R"({"benchmarks": [{"name": "gemm/cpu/03a_naive/64x64x64_f32", "real_time": 1.5, "time_unit": "ms",
              "FLOP/s": 1e9, "intensity": 2.5, "peak_gflops": 100, "peak_gbs": 20}]})",
          R"({"cpu": {"peak_gflops_single": 50.5, "bandwidth_gbs": [1, 2, 3]}, "ok": true, "none": null})",
          R"(["a\"b\\c\u00e9\n", -1.5e-3, 0, [], {}, [[[]]]])", "3.25", R"("\ud83d")"};
}

std::vector<std::string> options_seeds() {
  return {std::string("\x00", 1) + "N=2,H=7,W=5,C=3,K=4,R=3,S=3,stride=2,pad=1,groups=1,dtype=f32",
          std::string("\x01") + "M=64,N=32,K=17,dtype=f16", std::string("\x02") + "P=37,C=16,hidden=64,C_out=16,act=gelu",
          std::string("\x03") + "B=2,H=3,Nq=17,Nk=9,d=32,causal=1,dtype=bf16", std::string("\x04") + "rows=3,cols=1000",
          std::string("\x05") + "N=1,H=9,W=9,C=4,K=8,R=3,pad=1", std::string("\x00", 1) + "--shape N=1 --reps 3 --out y.npy"};
}

}  // namespace convlab::fuzz
