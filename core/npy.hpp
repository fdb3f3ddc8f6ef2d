// core/npy.hpp — NumPy .npy files in and out, so a student can run any variant
// on tensors made in Python and check the answer there too.
//
// Read: format versions 1.0, 2.0 and 3.0; little-endian float32 ('<f4') and
// float16 ('<f2') in C order, any rank (rank 0 is a one-element Tensor with an
// empty shape). Write: version 1.0 (2.0 only if a header would not fit), of a
// f32 or f16 tensor. NumPy has no standard bfloat16 dtype, so bf16 tensors are
// refused rather than silently written as something else.
//
// Every failure is a std::runtime_error whose message starts with the path:
// the file cannot be opened, has no .npy magic, a truncated or malformed
// header, an unsupported or big-endian dtype, Fortran order, or less data than
// its shape says.
#pragma once

#include <string>

#include "core/tensor.hpp"

namespace convlab {

// A host tensor holding the file's array.
Tensor read_npy(const std::string& path);

// The same reader on the bytes of a file held in memory; `name` starts its messages.
Tensor read_npy_bytes(const std::string& bytes, const std::string& name);

// Writes `t` (any device; a GPU tensor is copied to the host first).
void write_npy(const std::string& path, const Tensor& t);

}  // namespace convlab
