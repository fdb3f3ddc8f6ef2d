// core/dtype.hpp — element types, their sizes and unit roundoffs, and the
// float <-> half / bfloat16 conversions the host side needs.
//
// Half and bfloat16 are stored on the host as raw 16-bit patterns (uint16_t);
// the conversions below round to nearest-even, the same rounding the GPU's
// __float2half_rn / __float2bfloat16_rn use, so a tensor rounded here holds
// exactly the values a kernel will read.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace convlab {

enum class DType { f32, f16, bf16 };

inline std::size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

inline DType parse_dtype(const std::string& s) {
  if (s == "f32" || s == "fp32" || s == "float32") return DType::f32;
  if (s == "f16" || s == "fp16" || s == "float16") return DType::f16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  throw std::invalid_argument("unknown dtype '" + s + "' (expected f32, f16 or bf16; fp32, fp16, float32, float16 "
                              "and bfloat16 are read the same)");
}

// Unit roundoff u = 2^-(mantissa bits + 1): the largest relative error of one
// correctly rounded operation. DESIGN.md's tolerance model is built on it.
inline double unit_roundoff(DType t) {
  switch (t) {
    case DType::f32: return 0x1p-24;  // 5.96e-8
    case DType::f16: return 0x1p-11;  // 4.88e-4
    case DType::bf16: return 0x1p-8;  // 3.91e-3
  }
  return 1.0;
}

// ---- scalar conversions (host) ------------------------------------------

inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if (std::isnan(f)) return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest, ties to even
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_half(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7fffffff;
  if (abs >= 0x7f800000) return sign | (abs > 0x7f800000 ? 0x7e00 : 0x7c00);  // NaN / Inf
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds past 65504: overflow to Inf
  if (abs < 0x38800000) {                       // below 2^-14: subnormal half (or zero)
    // Scale so the half's subnormal grid becomes integers, and let the FPU round.
    const float scaled = bits_float(abs) * 0x1p24f;  // exact: only the exponent moves
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: drop 13 mantissa bits with round-to-nearest-even, rebias 127 -> 15.
  uint32_t r = abs + 0xfff + ((abs >> 13) & 1);
  return sign | static_cast<uint16_t>((r - (112u << 23)) >> 13);
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) return bits_float(sign) + (sign ? -1.f : 1.f) * std::ldexp(static_cast<float>(man), -24);
  if (exp == 31) return bits_float(sign | 0x7f800000 | (man << 13));
  return bits_float(sign | ((exp + 112) << 23) | (man << 13));
}

// Round a double to the nearest value representable in `t` (what storing it does).
inline double round_to(DType t, double v) {
  const float f = static_cast<float>(v);
  switch (t) {
    case DType::f32: return f;
    case DType::f16: return half_to_float(float_to_half(f));
    case DType::bf16: return bf16_to_float(float_to_bf16(f));
  }
  return v;
}

}  // namespace convlab
