// core/checked_size.hpp — the one place where sizes of buffers are computed
// and the one limit on how much a run may allocate.
//
// Every tensor, workspace and device buffer convlab allocates gets its byte
// count from here: products in unsigned 64-bit arithmetic, each step checked
// for overflow, so a shape such as N=2^30,H=2^30,W=4 is refused with a
// message instead of wrapping to a small number and being written past its end.
//
// The limit: a run (all of one case's buffers together, and any single
// buffer) may allocate at most max_allocation_bytes(), 16 GiB unless
//   - the environment variable CONVLAB_MAX_BYTES says otherwise
//     (an integer of bytes, or with a suffix K, M, G, T: powers of 1024), or
//   - a program sets it (`convlab --max-bytes N ...`), which wins over both.
// Above it the run is refused before anything is allocated.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace convlab {

// A size that overflows 64 bits, a negative dimension, or a request over the limit.
struct SizeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

constexpr uint64_t kDefaultMaxAllocationBytes = uint64_t(16) << 30;  // 16 GiB

// a·b and a+b, throwing SizeError (naming `what`) when the result does not fit in 64 bits.
uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& what);
uint64_t checked_add(uint64_t a, uint64_t b, const std::string& what);

// The product of `dims` (each must be >= 0) times `element_bytes`; SizeError on
// a negative dimension or an overflow. `what` names the buffer in the message.
uint64_t checked_bytes(const std::vector<int64_t>& dims, uint64_t element_bytes, const std::string& what);

// The limit, as described above; SizeError when CONVLAB_MAX_BYTES is malformed.
uint64_t max_allocation_bytes();
// Sets the limit for this process (0: back to the environment or the default).
void set_max_allocation_bytes(uint64_t bytes);
// "123", "64K", "16G", "1T" (powers of 1024) -> bytes; SizeError naming `source` otherwise.
uint64_t parse_byte_count(const std::string& text, const std::string& source);

// Throws SizeError when `bytes` is over the limit: "<what> needs 4.0 GiB (4294967296 bytes),
// over the limit of 16.0 GiB (raise it with CONVLAB_MAX_BYTES or --max-bytes)".
void check_allocation(uint64_t bytes, const std::string& what);

// "4.0 GiB (4294967296 bytes)"
std::string describe_bytes(uint64_t bytes);

}  // namespace convlab
