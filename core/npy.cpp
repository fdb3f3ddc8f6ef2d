// core/npy.cpp — the .npy reader and writer declared in core/npy.hpp.
//
// The format (numpy/lib/format.py, "NEP 1"):
//
//   bytes 0-5   magic "\x93NUMPY"
//   bytes 6-7   format version: major, minor (1.0, 2.0 or 3.0)
//   then        header length: uint16 little-endian (1.0) or uint32 (2.0, 3.0)
//   then        header: a Python dict literal, e.g.
//                 {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//               padded with spaces and ended by '\n' so that the data starts
//               on a 64-byte boundary (16 in files from old NumPy versions)
//   then        the raw array bytes, numel × itemsize, in the stated order
//
// Only what a float tensor needs is accepted; everything else is refused
// with a message that names what was found and what would have worked.
#include "core/npy.hpp"

#include "core/checked_size.hpp"

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace convlab {
namespace {

static_assert(std::endian::native == std::endian::little,
              "convlab's .npy I/O copies little-endian file bytes straight into memory");

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;
constexpr const char* kSupported = "'<f4' (float32) and '<f2' (float16)";

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

// Header text for an error line: at most kExcerpt characters, every byte that
// is not printable ASCII written as \xNN, and the length said when cut.
constexpr std::size_t kExcerpt = 160;
std::string excerpt(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kExcerpt; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
      out += buf;
    }
  }
  if (text.size() > kExcerpt) out += "... (" + std::to_string(text.size()) + " characters in all)";
  return out;
}

// What the header dict says.
struct NpyHeader {
  std::string descr;
  bool descr_is_structured = false;  // a list of fields rather than one dtype string
  bool fortran_order = false;
  Shape shape;
  bool has_descr = false, has_order = false, has_shape = false;
};

// A small recursive-descent reader for the one dict literal NumPy writes.
// It accepts quoted strings, True/False, and tuples of integers; a list value
// (a structured dtype) is skipped over and flagged.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = parse_string();
      expect(':');
      skip_space();
      if (key == "descr") {
        h.has_descr = true;
        if (peek() == '[') {
          h.descr_is_structured = true;
          skip_brackets();
        } else {
          h.descr = parse_string();
        }
      } else if (key == "fortran_order") {
        h.has_order = true;
        h.fortran_order = parse_bool();
      } else if (key == "shape") {
        h.has_shape = true;
        h.shape = parse_shape();
      } else {
        malformed("unexpected key '" + excerpt(key) + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') break;
      malformed("expected ',' or '}'");
    }
    if (!h.has_descr || !h.has_order || !h.has_shape)
      malformed("it must have the keys 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  [[noreturn]] void malformed(const std::string& why) const {
    fail(path_, "malformed .npy header (" + why + " at character " + std::to_string(pos_) + "): " + excerpt(s_));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) malformed(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') malformed("expected a quoted string");
    const std::size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string::npos) malformed("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool parse_bool() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    malformed("expected True or False");
  }
  Shape parse_shape() {
    Shape shape;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) malformed("expected a non-negative integer");
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const int digit = s_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) malformed("dimension too large");
        v = v * 10 + digit;
      }
      if (peek() == 'L') ++pos_;  // Python 2 long literal, as in files written by NumPy under Python 2
      shape.push_back(v);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') malformed("expected ',' or ')' in the shape");
    }
    ++pos_;
    return shape;
  }
  void skip_brackets() {
    int depth = 0;
    do {
      if (pos_ >= s_.size()) malformed("unterminated list");
      if (s_[pos_] == '[') ++depth;
      if (s_[pos_] == ']') --depth;
      ++pos_;
    } while (depth > 0);
  }

  const std::string& s_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

DType dtype_from_descr(const NpyHeader& h, const std::string& path) {
  if (h.descr_is_structured)
    fail(path, "unsupported dtype: a structured (record) array; convlab reads " + std::string(kSupported));
  const std::string& d = h.descr;
  // '=' is native order, which convlab only ever runs on as little-endian.
  if (d == "<f4" || d == "=f4") return DType::f32;
  if (d == "<f2" || d == "=f2") return DType::f16;
  if (d.size() >= 3 && d[0] == '>' && d.substr(2) != "1")
    fail(path, "big-endian dtype '" + excerpt(d) + "' is not supported; convlab reads " + std::string(kSupported) +
                   " (in NumPy: a.astype('<" + excerpt(d.substr(1)) + "'))");
  fail(path, "unsupported dtype '" + excerpt(d) + "'; convlab reads " + std::string(kSupported) +
                 " (in NumPy: a.astype(np.float32))");
}

uint64_t little_endian_uint(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string descr_for(DType dtype) {
  switch (dtype) {
    case DType::f32: return "<f4";
    case DType::f16: return "<f2";
    case DType::bf16: break;
  }
  return "";
}

std::string shape_tuple(const Shape& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) out += ",";  // Python's one-element tuple
  return out + ")";
}

// The reader proper, on any seekable stream (a file, or bytes in memory for the fuzz harness).
Tensor read_npy_stream(std::istream& in, const std::string& path) {
  in.seekg(0, std::ios::end);
  const std::streamoff file_size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (file_size < 0) fail(path, "cannot tell the file's size (not a regular file?)");

  // Magic and version.
  unsigned char prefix[8] = {};
  in.read(reinterpret_cast<char*>(prefix), sizeof prefix);
  const std::size_t got = static_cast<std::size_t>(in.gcount());
  const std::size_t magic_seen = got < kMagicSize ? got : kMagicSize;
  if (got == 0) fail(path, "not a .npy file (it is empty)");
  if (std::memcmp(prefix, kMagic, magic_seen) != 0) fail(path, "not a .npy file (bad magic: no \\x93NUMPY at the start)");
  if (got < sizeof prefix) fail(path, "truncated .npy header (the file ends inside the magic and version)");
  const int major = prefix[6], minor = prefix[7];
  if (major < 1 || major > 3 || minor != 0)
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (convlab reads 1.0, 2.0 and 3.0)");

  // Header length: 2 bytes in version 1.0, 4 bytes in 2.0 and 3.0.
  const int length_bytes = major == 1 ? 2 : 4;
  unsigned char length_field[4] = {};
  in.read(reinterpret_cast<char*>(length_field), length_bytes);
  if (in.gcount() != length_bytes) fail(path, "truncated .npy header (the file ends inside the header length)");
  const uint64_t header_len = little_endian_uint(length_field, length_bytes);
  // NumPy's writer keeps headers small (a dtype, a flag and a shape); anything
  // this large is not a tensor's header, and is not read into memory.
  constexpr uint64_t kMaxHeader = 1 << 20;
  if (header_len > kMaxHeader)
    fail(path, "malformed .npy header (it says " + std::to_string(header_len) + " bytes; convlab reads headers of up to " +
                   std::to_string(kMaxHeader) + ")");
  const uint64_t data_offset = sizeof prefix + length_bytes + header_len;
  if (uint64_t(file_size) < data_offset)
    fail(path, "truncated .npy header (it says " + std::to_string(header_len) + " bytes, the file has " +
                   std::to_string(uint64_t(file_size) - sizeof prefix - length_bytes) + ")");
  std::string text(header_len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_len));
  if (uint64_t(in.gcount()) != header_len) fail(path, "truncated .npy header (read failed)");

  const NpyHeader header = HeaderParser(text, path).parse();
  const DType dtype = dtype_from_descr(header, path);
  if (header.fortran_order)
    fail(path, "Fortran-order (column-major) arrays are not supported; save a C-order array "
               "(in NumPy: np.ascontiguousarray(a))");

  constexpr std::size_t kMaxRank = 64;  // NumPy 2's limit (NPY_MAXDIMS)
  if (header.shape.size() > kMaxRank)
    fail(path, "shape of rank " + std::to_string(header.shape.size()) + " (NumPy arrays have at most " +
                   std::to_string(kMaxRank) + " dimensions)");
  // Element count, guarding against shapes whose byte size overflows.
  uint64_t numel = 1;
  for (int64_t d : header.shape) {
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / 8 / uint64_t(d))
      fail(path, "shape " + excerpt(shape_tuple(header.shape)) + " is too large");
    numel *= uint64_t(d);
  }
  const uint64_t data_bytes = numel * dtype_size(dtype);
  const uint64_t available = uint64_t(file_size) - data_offset;
  if (available < data_bytes)
    fail(path, "truncated data: shape " + excerpt(shape_tuple(header.shape)) + " of " + header.descr + " needs " +
                   std::to_string(data_bytes) + " bytes, the file holds " + std::to_string(available));

  Tensor t = [&] {
    try {
      return Tensor(header.shape, dtype);
    } catch (const SizeError& e) {  // over the allocation limit: say which file
      fail(path, e.what());
    }
  }();
  in.read(static_cast<char*>(t.data()), static_cast<std::streamsize>(data_bytes));
  if (uint64_t(in.gcount()) != data_bytes) fail(path, "truncated data (read failed)");
  return t;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, not a .npy file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open for reading (") + std::strerror(errno) + ")");
  return read_npy_stream(in, path);
}

Tensor read_npy_bytes(const std::string& bytes, const std::string& name) {
  std::istringstream in(bytes, std::ios::binary);
  return read_npy_stream(in, name);
}

void write_npy(const std::string& path, const Tensor& tensor) {
  if (tensor.device() != Device::cpu) {
    write_npy(path, tensor.to(Device::cpu));
    return;
  }
  const std::string descr = descr_for(tensor.dtype());
  if (descr.empty())
    fail(path, std::string("cannot write a ") + dtype_name(tensor.dtype()) +
                   " tensor: NumPy has no standard bfloat16 dtype (.npy holds f32 and f16 here)");

  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_tuple(tensor.shape()) + ", }";
  // Pad with spaces and a final '\n' so the data starts on a 64-byte boundary.
  // Version 1.0 has a 16-bit length; an enormous rank needs version 2.0.
  const bool version2 = header.size() + 1 + 12 > 65535;
  const std::size_t preamble = kMagicSize + 2 + (version2 ? 4 : 2);
  const std::size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, std::string("cannot open for writing (") + std::strerror(errno) + ")");
  out.write(kMagic, kMagicSize);
  const unsigned char version[2] = {static_cast<unsigned char>(version2 ? 2 : 1), 0};
  out.write(reinterpret_cast<const char*>(version), 2);
  const uint64_t len = header.size();
  unsigned char length_field[4];
  for (int i = 0; i < 4; ++i) length_field[i] = static_cast<unsigned char>(len >> (8 * i));
  out.write(reinterpret_cast<const char*>(length_field), version2 ? 4 : 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(tensor.data()), static_cast<std::streamsize>(tensor.bytes()));
  out.close();
  if (!out) fail(path, "write failed (disk full?)");
}

}  // namespace convlab
