// gpu/lib/hopper/dependent_launch.cuh — programmatic dependent launch (sm_90): a kernel that
// follows another in the stream is scheduled before its predecessor has finished, does what does
// not depend on it, and then waits for it inside the kernel.
//
// Without it, kernel B after kernel A in one stream starts only once every CTA of A has exited
// and A's writes are flushed; the SMs idle through A's last partial wave, B's launch and B's own
// start-up (staging weights, loading constants). With it:
//
//   kernel A (any launch)                     kernel B (launched with the attribute below)
//   allow_dependent_launch()   -- once every CTA of A has called it (or exited), B's CTAs may
//                                 be placed on whatever SM room A leaves
//   ... A's work ...                          set-up that reads nothing A writes
//                                             wait_for_prerequisite_grid()  -- A complete, its
//                                                                             writes visible
//                                             the rest of B
//
// The wait covers A as a whole, so a chain A -> B -> C is ordered as before: C's wait returns
// after B completed, and B completed after its own wait for A. Both instructions are no-ops in a
// kernel launched without the attribute, so the kernels stay correct under any launch. The rule
// that keeps it correct: before its wait, a dependent kernel reads only what no kernel still
// running may write (weights, biases) and writes nothing another kernel reads.
//
// PTX ISA: "griddepcontrol" (.launch_dependents, .wait), sm_90. Host: cudaLaunchKernelEx with
// cudaLaunchAttributeProgrammaticStreamSerialization.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "gpu/lib/check.cuh"

namespace convlab::gpu::hopper {

// Let the kernels launched after this one as dependents be scheduled once every CTA of this
// grid has called this or exited.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Wait until the grid this one depends on has completed and its writes are visible (at once
// when this grid was launched without the attribute).
__device__ __forceinline__ void wait_for_prerequisite_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// kernel<<<grid, block, bytes>>>(args...) on the default stream; with `dependent`, as a
// programmatic dependent of the kernel before it in the stream (the kernel must call
// wait_for_prerequisite_grid() before it reads that kernel's results).
template <class... Params, class... Args>
void launch_kernel(bool dependent, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t bytes,
                   const char* name, Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = bytes;
  config.stream = nullptr;
  config.attrs = dependent ? &attribute : nullptr;
  config.numAttrs = dependent ? 1 : 0;
  check_cuda(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), (std::string("launching ") + name).c_str());
}

}  // namespace convlab::gpu::hopper
