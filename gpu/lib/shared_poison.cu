// gpu/lib/shared_poison.cu — NaN into every SM's shared memory before a checked GPU run
// (core/device.hpp: poison_shared_memory). One CTA per SM, each asking for the largest dynamic
// shared memory a CTA may have, writes 0xFF bytes over all of it. A later kernel that reads shared
// memory it never wrote then meets NaN (in f16, bf16 and f32) and fails its check, where an
// earlier kernel's leftovers, usually finite, would have hidden the bug. Best effort: the CUDA
// model promises nothing about shared memory between kernels, but the hardware keeps it.
// Installed by a static initialiser; not a variant (it registers nothing).
#include <cuda_runtime.h>

#include "core/device.hpp"
#include "gpu/lib/check.cuh"

namespace convlab::gpu {
namespace {

__global__ void __launch_bounds__(1024) poison_shared_kernel(int units) {
  extern __shared__ unsigned char smem[];
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  for (int i = threadIdx.x; i < units; i += blockDim.x)  // volatile stores: nothing reads them here
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(base + 16u * uint32_t(i)), "r"(~0u) : "memory");
}

void poison_every_sm() {
  static int sms = 0, bytes = 0;
  if (sms == 0) {
    int dev = 0;
    check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
    check_cuda(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "cudaDeviceGetAttribute");
    bytes = bytes / 16 * 16;
    check_cuda(cudaFuncSetAttribute(poison_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
               "cudaFuncSetAttribute(poison_shared_kernel)");
  }
  poison_shared_kernel<<<unsigned(sms), 1024, std::size_t(bytes)>>>(bytes / 16);
  check_launch("poison_shared_kernel");
}

[[maybe_unused]] const bool installed = (set_shared_memory_poisoner(poison_every_sm), true);

}  // namespace
}  // namespace convlab::gpu
