// tests/npy_test.cpp — the .npy reader and writer (core/npy.hpp).
//
// Round trips of odd shapes in f32 and f16; files built byte by byte the way
// NumPy lays them out (versions 1.0, 2.0, 3.0), so the reader is checked
// against the format itself and not only against our own writer; and every
// refusal, each of which must name the file.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/npy.hpp"
#include "tests/catch_compat.hpp"

namespace {

using namespace convlab;

std::filesystem::path scratch_dir() {
  return std::filesystem::temp_directory_path() / ("convlab_npy_test_" + std::to_string(::getpid()));
}

// Removes this process's scratch folder when the test program ends.
struct ScratchCleanup {
  ~ScratchCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(scratch_dir(), ec);
  }
} scratch_cleanup;

std::string temp_path(const std::string& name) {
  std::filesystem::create_directories(scratch_dir());
  return (scratch_dir() / name).string();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The message of the std::runtime_error `action` throws; "" if it throws none.
std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A .npy file as NumPy writes it: magic, version, little-endian header length,
// the dict padded with spaces to `align` bytes and ended by '\n', then data.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1, std::size_t align = 64) {
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t preamble = 6 + 2 + length_bytes;
  std::string header = dict;
  const std::size_t total = (preamble + header.size() + 1 + align - 1) / align * align;
  header.append(total - preamble - header.size() - 1, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  for (std::size_t i = 0; i < length_bytes; ++i) out += char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string float_bytes(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed) {
  Tensor t(shape, dtype);
  std::mt19937_64 rng(seed);
  t.fill_uniform(rng);
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

}  // namespace

TEST_CASE("npy: f32 and f16 tensors of odd shapes round-trip exactly", "[npy][cpu]") {
  const std::vector<Shape> shapes = {{13}, {3, 1, 5, 7}, {2, 9}, {1, 1, 1}, {2, 1, 3, 1, 2, 3}, {}, {4, 0, 3}};
  uint64_t seed = 1;
  for (DType dtype : {DType::f32, DType::f16}) {
    for (const Shape& shape : shapes) {
      INFO(dtype_name(dtype) << " " << shape_string(shape));
      const std::string path = temp_path("round_trip.npy");
      const Tensor original = random_tensor(shape, dtype, seed++);
      write_npy(path, original);
      const Tensor back = read_npy(path);
      CHECK(back.dtype() == dtype);
      CHECK(back.shape() == shape);
      CHECK(same_bytes(original, back));
      // The data starts on a 64-byte boundary, as NumPy writes it.
      CHECK((read_bytes(path).size() - original.bytes()) % 64 == 0);
    }
  }
}

TEST_CASE("npy: writes the header NumPy expects", "[npy][cpu]") {
  const std::string path = temp_path("header.npy");
  Tensor t({2, 3}, DType::f32);
  for (int i = 0; i < 6; ++i) t.set(i, i);
  write_npy(path, t);
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() == 128 + 24);
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(uint8_t(bytes[8]) + 256 * uint8_t(bytes[9]) == 118);  // header length: 128 − 10
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  CHECK(bytes.substr(10, dict.size()) == dict);
  CHECK(bytes[127] == '\n');

  Tensor vector({5}, DType::f16);
  vector.poison();
  write_npy(path, vector);
  CHECK(contains(read_bytes(path), "'descr': '<f2'"));
  CHECK(contains(read_bytes(path), "'shape': (5,)"));
}

TEST_CASE("npy: reads hand-built files of every version", "[npy][cpu]") {
  const std::vector<float> values = {1.5f, -2.0f, 0.25f, 3.0f, -0.125f, 1e-3f};
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  for (int major : {1, 2, 3}) {
    for (std::size_t align : {16, 64}) {
      INFO("version " << major << ".0, header aligned to " << align);
      const std::string path = temp_path("hand_built.npy");
      write_bytes(path, npy_bytes(dict, float_bytes(values), major, align));
      const Tensor t = read_npy(path);
      CHECK(t.dtype() == DType::f32);
      CHECK(t.shape() == Shape{2, 3});
      for (int i = 0; i < 6; ++i) CHECK(t.get(i) == values[i]);
    }
  }

  SECTION("float16 with known bit patterns") {
    const std::string path = temp_path("half.npy");
    const uint16_t halves[3] = {0x3C00, 0xC000, 0x3555};  // 1.0, -2.0, 0.333...
    std::string data(6, '\0');
    std::memcpy(data.data(), halves, 6);
    write_bytes(path, npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }", data));
    const Tensor t = read_npy(path);
    CHECK(t.dtype() == DType::f16);
    CHECK(t.shape() == Shape{3});
    CHECK(t.get(0) == 1.0);
    CHECK(t.get(1) == -2.0);
    CHECK(std::abs(t.get(2) - 1.0 / 3.0) < 1e-3);
  }

  SECTION("keys in another order, double quotes, Python 2 longs, a scalar") {
    const std::string path = temp_path("variants.npy");
    write_bytes(path, npy_bytes("{\"shape\": (2L, 1L), \"fortran_order\": False, \"descr\": \"<f4\"}",
                                float_bytes({7.0f, 8.0f})));
    const Tensor t = read_npy(path);
    CHECK(t.shape() == Shape{2, 1});
    CHECK(t.get(1) == 8.0);

    write_bytes(path, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", float_bytes({42.0f})));
    const Tensor scalar = read_npy(path);
    CHECK(scalar.shape().empty());
    CHECK(scalar.numel() == 1);
    CHECK(scalar.get(0) == 42.0);
  }
}

TEST_CASE("npy: refuses bad files with the path in the message", "[npy][cpu]") {
  const std::string path = temp_path("bad.npy");
  const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  auto read_error = [&](const std::string& bytes) {
    write_bytes(path, bytes);
    return error_of([&] { read_npy(path); });
  };

  SECTION("cannot open") {
    const std::string missing = temp_path("does_not_exist.npy");
    const std::string e = error_of([&] { read_npy(missing); });
    INFO(e);
    CHECK(contains(e, missing));
    CHECK(contains(e, "cannot open"));
  }
  SECTION("bad magic") {
    const std::string e = read_error("PK\x03\x04 this is a zip file, not an array");
    INFO(e);
    CHECK(contains(e, path));
    CHECK(contains(e, "bad magic"));
    CHECK(contains(read_error(""), "empty"));
  }
  SECTION("truncated header") {
    const std::string full = npy_bytes(good_dict, float_bytes({1, 2, 3, 4, 5, 6}));
    for (std::size_t keep : {4, 7, 9, 40}) {
      const std::string e = read_error(full.substr(0, keep));
      INFO("first " << keep << " bytes: " << e);
      CHECK(contains(e, path));
      CHECK(contains(e, "truncated .npy header"));
    }
  }
  SECTION("truncated data") {
    const std::string e = read_error(npy_bytes(good_dict, float_bytes({1, 2, 3, 4, 5})));
    INFO(e);
    CHECK(contains(e, path));
    CHECK(contains(e, "truncated data"));
    CHECK(contains(e, "24 bytes"));
  }
  SECTION("unsupported dtype") {
    const std::string e = read_error(
        npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\0')));
    INFO(e);
    CHECK(contains(e, path));
    CHECK(contains(e, "'<f8'"));
    CHECK(contains(e, "'<f4'"));
    CHECK(contains(e, "'<f2'"));
    CHECK(contains(read_error(npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", "ab")),
                   "unsupported dtype '|u1'"));
    CHECK(contains(read_error(npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                                        std::string(4, '\0'))),
                   "structured"));
  }
  SECTION("big-endian") {
    const std::string e = read_error(
        npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", std::string(24, '\0')));
    INFO(e);
    CHECK(contains(e, path));
    CHECK(contains(e, "big-endian"));
  }
  SECTION("Fortran order") {
    const std::string e = read_error(
        npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", float_bytes({1, 2, 3, 4, 5, 6})));
    INFO(e);
    CHECK(contains(e, path));
    CHECK(contains(e, "Fortran"));
  }
  SECTION("unknown version and malformed header") {
    std::string v4 = npy_bytes(good_dict, float_bytes({1, 2, 3, 4, 5, 6}), 2);
    v4[6] = 4;
    CHECK(contains(read_error(v4), "version 4.0"));
    CHECK(contains(read_error(npy_bytes("{'descr': '<f4', 'shape': (2, 3), }", float_bytes({1, 2, 3, 4, 5, 6}))),
                   "malformed"));
    CHECK(contains(read_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", "")),
                   "malformed"));
  }
  SECTION("writing: bf16 and an unwritable path") {
    const Tensor bf16({2}, DType::bf16);
    const std::string e = error_of([&] { write_npy(path, bf16); });
    INFO(e);
    CHECK(contains(e, path));
    CHECK(contains(e, "bfloat16"));
    const std::string nowhere = temp_path("no_such_dir") + "/x.npy";
    const std::string e2 = error_of([&] { write_npy(nowhere, Tensor({1}, DType::f32)); });
    CHECK(contains(e2, nowhere));
  }
}
