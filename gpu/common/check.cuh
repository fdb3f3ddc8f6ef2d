// gpu/common/check.cuh — turning CUDA's error codes into convlab::DeviceError.
//
// Every CUDA call in gpu/ goes through check_cuda(); every launcher ends with
// check_launch(), because a kernel launch reports a bad configuration (too
// many threads, too much shared memory, ...) only through cudaGetLastError().
// Errors inside a running kernel surface later, at the harness's synchronize.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/device.hpp"

namespace convlab::gpu {

inline void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw DeviceError(std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

// After a <<<...>>> launch: did the launch itself succeed?
inline void check_launch(const char* kernel_name) {
  check_cuda(cudaGetLastError(), (std::string("launching ") + kernel_name).c_str());
}

// Number of blocks of `per_block` needed to cover `count` items.
template <class Int> __host__ __device__ constexpr Int ceil_div(Int count, Int per_block) {
  return (count + per_block - 1) / per_block;
}

// True when p may be read or written in 16-byte (float4 / uint4 / cp.async.16) pieces.
inline bool aligned_16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// How many blocks of `kernel` (with `threads` threads and `shared` bytes of
// dynamic shared memory) the current device runs at once: its SM count times
// the blocks one SM holds. A grid of this size is one full wave, the size of a
// "persistent" grid whose blocks loop over the work.
template <class Kernel> int resident_blocks(Kernel kernel, int threads, std::size_t shared) {
  int device = 0, sms = 0, per_sm = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SMs)");
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return sms * (per_sm > 0 ? per_sm : 1);
}

// CUDA's limits on a launch grid (x may be large, y and z are 16-bit).
inline constexpr int64_t kMaxGridX = 2147483647;
inline constexpr int64_t kMaxGridYZ = 65535;

}  // namespace convlab::gpu
