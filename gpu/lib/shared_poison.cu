// gpu/lib/shared_poison.cu — NaN into every SM's shared memory before a checked GPU run
// (core/device.hpp: poison_shared_memory). One CTA per SM, each asking for the largest dynamic
// shared memory a CTA may have, writes 0xFF bytes over all of it. A later kernel that reads shared
// memory it never wrote then meets NaN (in f16, bf16 and f32) and fails its check, where an
// earlier kernel's leftovers, usually finite, would have hidden the bug. Best effort: the CUDA
// model promises nothing about shared memory between kernels, but the hardware keeps it, and
// tests/core/shared_poison_test.cpp checks that it does (count_shared_units_other_than).
// Installed by a static initialiser; not a variant (it registers nothing).
#include <cuda_runtime.h>

#include "gpu/lib/shared_poison.hpp"

#include "core/device.hpp"
#include "gpu/lib/check.cuh"

namespace convlab::gpu {
namespace {

__global__ void __launch_bounds__(1024) fill_shared_kernel(int units, uint32_t word) {
  extern __shared__ unsigned char smem[];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  for (int i = threadIdx.x; i < units; i += blockDim.x)  // volatile stores: nothing reads them here
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(base + 16u * uint32_t(i)), "r"(word) : "memory");
}

__global__ void __launch_bounds__(1024) count_shared_kernel(int units, uint32_t word, int* counts) {
  extern __shared__ unsigned char smem[];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  int other = 0;
  for (int i = threadIdx.x; i < units; i += blockDim.x) {
    uint32_t a, b, c, d;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                 : "r"(base + 16u * uint32_t(i)));
    other += (a != word || b != word || c != word || d != word) ? 1 : 0;
  }
  atomicAdd(&counts[blockIdx.x], other);
}

struct Grid {
  int sms = 0, bytes = 0;
};

// The SM count and the largest dynamic shared memory a CTA may ask for (16-byte units), with both
// kernels allowed it: worked out once.
const Grid& grid() {
  static const Grid g = [] {
    Grid r;
    int dev = 0;
    check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&r.sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
    check_cuda(cudaDeviceGetAttribute(&r.bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "cudaDeviceGetAttribute");
    r.bytes = r.bytes / 16 * 16;
    check_cuda(cudaFuncSetAttribute(fill_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, r.bytes),
               "cudaFuncSetAttribute(fill_shared_kernel)");
    check_cuda(cudaFuncSetAttribute(count_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, r.bytes),
               "cudaFuncSetAttribute(count_shared_kernel)");
    return r;
  }();
  return g;
}

uint32_t word_of(unsigned char byte) { return 0x01010101u * byte; }

void poison_every_sm() { fill_every_sm_shared(0xFF); }

[[maybe_unused]] const bool installed = (set_shared_memory_poisoner(poison_every_sm), true);

}  // namespace

void fill_every_sm_shared(unsigned char byte) {
  const Grid& g = grid();
  fill_shared_kernel<<<unsigned(g.sms), 1024, std::size_t(g.bytes)>>>(g.bytes / 16, word_of(byte));
  check_launch("fill_shared_kernel");
}

std::vector<int> count_shared_units_other_than(unsigned char byte) {
  const Grid& g = grid();
  int* counts = static_cast<int*>(device_malloc(std::size_t(g.sms) * sizeof(int)));
  device_memset(counts, 0, std::size_t(g.sms) * sizeof(int));
  count_shared_kernel<<<unsigned(g.sms), 1024, std::size_t(g.bytes)>>>(g.bytes / 16, word_of(byte), counts);
  check_launch("count_shared_kernel");
  std::vector<int> out(std::size_t(g.sms));
  copy_bytes(out.data(), Device::cpu, counts, Device::gpu, out.size() * sizeof(int));
  device_free(counts);
  return out;
}

}  // namespace convlab::gpu
