// core/checked_size.cpp — checked products and the allocation limit (core/checked_size.hpp).
#include "core/checked_size.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace convlab {
namespace {

std::atomic<uint64_t> g_override{0};  // set by set_max_allocation_bytes; 0: none

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s.empty() ? "scalar" : s;
}

}  // namespace

uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw SizeError(what + ": the size overflows 64 bits (" + std::to_string(a) + " x " + std::to_string(b) + ")");
  return r;
}

uint64_t checked_add(uint64_t a, uint64_t b, const std::string& what) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw SizeError(what + ": the size overflows 64 bits (" + std::to_string(a) + " + " + std::to_string(b) + ")");
  return r;
}

uint64_t checked_bytes(const std::vector<int64_t>& dims, uint64_t element_bytes, const std::string& what) {
  uint64_t n = element_bytes;
  for (int64_t d : dims) {
    if (d < 0) throw SizeError(what + ": negative dimension in shape " + shape_text(dims));
    uint64_t r = 0;
    if (__builtin_mul_overflow(n, uint64_t(d), &r))
      throw SizeError(what + ": shape " + shape_text(dims) + " has more bytes than 64 bits can count");
    n = r;
  }
  return n;
}

uint64_t parse_byte_count(const std::string& text, const std::string& source) {
  const auto bad = [&] {
    return SizeError(source + ": '" + text + "' is not a byte count (accepted: a positive integer, optionally "
                     "with K, M, G or T for powers of 1024, e.g. 16G)");
  };
  if (text.empty() || text[0] < '0' || text[0] > '9') throw bad();
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE) throw bad();
  int shift = 0;
  const std::string suffix(end);
  if (suffix == "K" || suffix == "k" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "GiB") shift = 30;
  else if (suffix == "T" || suffix == "TiB") shift = 40;
  else if (!suffix.empty()) throw bad();
  if (v == 0 || v > (std::numeric_limits<uint64_t>::max() >> shift)) throw bad();
  return uint64_t(v) << shift;
}

uint64_t max_allocation_bytes() {
  if (const uint64_t o = g_override.load()) return o;
  if (const char* env = std::getenv("CONVLAB_MAX_BYTES"); env && *env)
    return parse_byte_count(env, "CONVLAB_MAX_BYTES");
  return kDefaultMaxAllocationBytes;
}

void set_max_allocation_bytes(uint64_t bytes) { g_override.store(bytes); }

std::string describe_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return std::string(buf) + (u ? " (" + std::to_string(bytes) + " bytes)" : "");
}

void check_allocation(uint64_t bytes, const std::string& what) {
  const uint64_t limit = max_allocation_bytes();
  if (bytes > limit)
    throw SizeError(what + " needs " + describe_bytes(bytes) + ", over the limit of " + describe_bytes(limit) +
                    " (raise it with CONVLAB_MAX_BYTES=N or convlab --max-bytes N)");
}

}  // namespace convlab
