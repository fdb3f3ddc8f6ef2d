// tests/core/checked_size_test.cpp — the checked sizes and the allocation
// limit (core/checked_size.hpp), the problem descriptors' overflow-safe
// validity, the JSON reader's nesting limit, and the --shape key rules.
#include <limits>
#include <string>

#include "core/checked_size.hpp"
#include "core/json.hpp"
#include "ops/ffn.hpp"
#include "ops/conv2d.hpp"
#include "core/spec.hpp"
#include "core/tensor.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

using namespace convlab;
using testing::throws;

namespace {
// Sets the limit for one scope and puts the previous state back.
struct LimitScope {
  explicit LimitScope(uint64_t bytes) { set_max_allocation_bytes(bytes); }
  ~LimitScope() { set_max_allocation_bytes(0); }
};
}  // namespace

TEST_CASE("checked sizes: products and sums that overflow 64 bits are refused", "[core][cpu]") {
  const uint64_t big = uint64_t(1) << 32;
  CHECK(checked_mul(big, big - 1, "x") == big * (big - 1));
  CHECK(throws<SizeError>([&] { checked_mul(big, big, "x"); }));
  CHECK(throws<SizeError>([&] { checked_add(std::numeric_limits<uint64_t>::max(), 1, "x"); }));
  CHECK(checked_bytes({2, 3, 5}, 4, "t") == 120);
  CHECK(checked_bytes({}, 2, "t") == 2);
  CHECK(checked_bytes({7, 0, int64_t(1) << 62}, 4, "t") == 0);
  // The shape of issue 16's first crash: 2^30 · 2^30 · 4 · 1 elements of 4 bytes wrap to 0.
  CHECK(throws<SizeError>([] { checked_bytes({1 << 30, 1 << 30, 4, 1}, 4, "t"); }));
  CHECK(throws<SizeError>([] { checked_bytes({3, -1}, 4, "t"); }));
}

TEST_CASE("checked sizes: byte counts with suffixes", "[core][cpu]") {
  CHECK(parse_byte_count("123", "t") == 123);
  CHECK(parse_byte_count("64K", "t") == 64 * 1024);
  CHECK(parse_byte_count("16G", "t") == uint64_t(16) << 30);
  CHECK(parse_byte_count("2TiB", "t") == uint64_t(2) << 40);
  for (const char* bad : {"", "0", "-5", "1.5G", "12Q", "G", "99999999999999999999", "17179869184T"}) {
    INFO("'" << bad << "'");
    CHECK(throws<SizeError>([&] { parse_byte_count(bad, "t"); }));
  }
}

TEST_CASE("checked sizes: a tensor over the limit is refused before it is allocated", "[core][cpu]") {
  {
    const LimitScope limit(1 << 20);
    CHECK(max_allocation_bytes() == uint64_t(1) << 20);
    const Tensor ok({256, 1024}, DType::f32);  // exactly 1 MiB
    CHECK(ok.bytes() == std::size_t(1) << 20);
    CHECK(throws<SizeError>([] { Tensor({256, 1025}, DType::f32); }));
    CHECK(throws<SizeError>([] { Tensor({1 << 30, 1 << 30, 4, 1}, DType::f32); }));  // wraps without the check
  }
  CHECK(max_allocation_bytes() >= kDefaultMaxAllocationBytes / 1024);  // back to the environment or the default
  try {
    check_allocation(uint64_t(1) << 62, "a test buffer");
    CHECK(false);
  } catch (const SizeError& e) {
    const std::string m = e.what();
    CHECK(m.find("a test buffer") != std::string::npos);
    CHECK(m.find("CONVLAB_MAX_BYTES") != std::string::npos);
  }
}

TEST_CASE("problem descriptors: validity is computed without int overflow", "[core][cpu]") {
  ConvProblem p{1, 8, 8, 4, 4, 3, 3, 1, 1 << 30, 1, DType::f32};
  CHECK(!p.valid());
  CHECK(p.invalid_reason().find("H + 2*pad") != std::string::npos);  // not "the filter is larger..."
  p.pad = 1;
  CHECK(p.valid());
  p = ConvProblem{1, 2, 2, 1, 1, 5, 5, 1, 1, 1, DType::f32};
  CHECK(p.invalid_reason() == "the filter is larger than the padded input");
  try {
    OpTraits<FfnProblem>::parse("P=1073741824,C=1073741824");
    CHECK(false);
  } catch (const SpecError& e) {
    CHECK(std::string(e.what()).find("4*C") != std::string::npos);
  }
  CHECK(OpTraits<FfnProblem>::parse("P=8,C=1073741824,hidden=1").hidden == 1);  // explicit hidden: no default to overflow
}

TEST_CASE("shape text (--shape): a repeated key is refused, not silently overwritten", "[core][cpu]") {
  for (const char* text : {"N=1,N=2", "M=4,M=5", "stride=2,stride=3", "a=1,b=2,a=1"}) {
    INFO(text);
    CHECK(throws<SpecError>([&] { KeyValues kv(text); }));
  }
  CHECK(KeyValues("N=1,H=2").get_int("H", 0) == 2);
  try {
    KeyValues("x=1").require_only({}, "softmax with --in");
    CHECK(false);
  } catch (const SpecError& e) {
    CHECK(std::string(e.what()).find("(valid: )") == std::string::npos);
  }
}

TEST_CASE("json: nesting is limited and errors print no raw bytes", "[core][cpu]") {
  CHECK(json::parse(std::string(200, '[') + std::string(200, ']')).kind == json::Value::Kind::array);
  for (const std::size_t depth : {std::size_t(257), std::size_t(10000), std::size_t(200000)}) {
    INFO("depth " << depth);
    try {
      json::parse(std::string(depth, '[') + std::string(depth, ']'));
      CHECK(false);
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()).find("nesting") != std::string::npos);
    }
    CHECK(throws<std::runtime_error>([&] { json::parse(std::string(depth, '{')); }));
  }
  try {
    json::parse("\x93NUMPY");
    CHECK(false);
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    CHECK(m.find("0x93") != std::string::npos);
    for (unsigned char c : m) CHECK((c >= 0x20 && c < 0x7F));
  }
  CHECK(throws<std::runtime_error>([] { json::parse(R"("\u12G4")"); }));
}
