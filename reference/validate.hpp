// reference/validate.hpp — the argument checks shared by the reference
// functions. Every reference validates its shapes and buffers before it
// touches memory and throws std::invalid_argument whose message starts with
// the function's name ("ref::blurpool: H must be positive, got 0").
//
// Internal to reference/: callers only ever see the exceptions.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace convlab::ref::detail {

[[noreturn]] inline void fail(const char* where, const std::string& what) {
  throw std::invalid_argument(std::string("ref::") + where + ": " + what);
}

inline void require(bool ok, const char* where, const std::string& what) {
  if (!ok) fail(where, what);
}

inline void require_positive(const char* where, const char* name, int64_t value) {
  if (value <= 0) fail(where, std::string(name) + " must be positive, got " + std::to_string(value));
}

inline void require_buffer(const char* where, const char* name, const void* pointer) {
  if (pointer == nullptr) fail(where, std::string("buffer '") + name + "' is null");
}

}  // namespace convlab::ref::detail
