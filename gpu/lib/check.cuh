// gpu/lib/check.cuh — turning CUDA's error codes into convlab::DeviceError.
//
// Every CUDA call in gpu/ goes through check_cuda(); every launcher ends with
// check_launch(), because a kernel launch reports a bad configuration (too
// many threads, too much shared memory, ...) only through cudaGetLastError().
// Errors inside a running kernel surface later, at the harness's synchronize.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

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
// The current device's SM count.
inline int sm_count() {
  int device = 0, sms = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SMs)");
  return sms;
}

template <class Kernel> int resident_blocks(Kernel kernel, int threads, std::size_t shared) {
  const int sms = sm_count();
  int per_sm = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  // per_sm is 0 when the kernel cannot run at all with these resources; one
  // block per SM is returned then, and the launch itself reports why it fails.
  // Three runtime queries per call: cheap next to a kernel, and in the
  // benchmarks hidden behind the asynchronous L2 flush before each launch.
  return sms * (per_sm > 0 ? per_sm : 1);
}

// Lets `kernel` be launched with up to `bytes` of dynamic shared memory.
// Above 48 KiB a kernel must ask first (cudaFuncSetAttribute with
// MaxDynamicSharedMemorySize), or its launch fails with "invalid argument";
// `name` labels the error. Call it before every launch that may need it:
//
//   allow_dynamic_shared(kernel, kSharedBytes, "my_kernel");
//   kernel<<<grid, threads, kSharedBytes>>>(...);
//
// The grant belongs to the kernel (one instantiation of a kernel template),
// lasts for the process, and covers every smaller size, so this remembers the
// largest size granted to each kernel and calls CUDA only when a launch asks
// for more: once per kernel in practice. (Asking on every launch would be
// correct too, but it is a driver call on the host inside the timed region.)
// One device per process is assumed (the attribute belongs to a kernel on
// the current device; convlab runs on one GPU). The memory is keyed by the
// kernel's address, not by its C++ type: two
// instantiations with the same parameter list, such as
// flash_tensor_core_kernel<__half, 64> and <__half, 128>, share a type but
// not a grant.
inline void allow_dynamic_shared_bytes(const void* kernel, std::size_t bytes, const char* name) {
  static std::mutex mutex;
  static std::unordered_map<const void*, std::size_t> granted;  // kernel -> the largest size granted
  const std::lock_guard<std::mutex> lock(mutex);
  std::size_t& largest = granted[kernel];
  if (bytes <= largest) return;
  if (const cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
      err != cudaSuccess)
    check_cuda(err, (std::string("cudaFuncSetAttribute(") + name + ", MaxDynamicSharedMemorySize = " +
                     std::to_string(bytes) + ")")
                        .c_str());
  largest = bytes;
}

template <class Kernel> void allow_dynamic_shared(Kernel kernel, std::size_t bytes, const char* name) {
  allow_dynamic_shared_bytes(reinterpret_cast<const void*>(kernel), bytes, name);
}

// CUDA's limits on a launch grid (x may be large, y and z are 16-bit).
inline constexpr int64_t kMaxGridX = 2147483647;
inline constexpr int64_t kMaxGridYZ = 65535;

}  // namespace convlab::gpu
