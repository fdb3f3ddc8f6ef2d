// gpu/lib/quad_transpose_probe.cu — the GPU half of gpu/lib/quad_transpose_probe.hpp: each warp
// runs gpu::quad_transpose on words that name their place, and writes them out for the host to
// check. Not a variant: it registers nothing.
#include "gpu/lib/quad_transpose_probe.hpp"

#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <vector>

#include "core/device.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/hopper/wgmma_epilogue.cuh"

namespace convlab::gpu {
namespace {

// One warp per block: out[(warp · 32 + lane) · 4 + s] = the lane's w[s] after the turn.
__global__ void quad_transpose_probe_kernel(uint32_t* out) {
  const int lane = threadIdx.x, v = blockIdx.x;
  const int g = lane / 4, tq = lane % 4;
  uint32_t w[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) w[q] = quad_transpose_word(v, g, q, tq);
  quad_transpose(w, tq);
#pragma unroll
  for (int s = 0; s < 4; ++s) out[(v * 32 + lane) * 4 + s] = w[s];
}

}  // namespace

int run_quad_transpose_probe(int warps) {
  if (warps < 1 || warps > 1024) throw std::invalid_argument("run_quad_transpose_probe: 1 .. 1024 warps");
  const std::size_t words = std::size_t(warps) * 32 * 4;
  const auto d = device_buffer(words * 4);
  device_memset(d.get(), 0xff, words * 4);  // poison: a word nobody writes is wrong
  quad_transpose_probe_kernel<<<warps, 32>>>(static_cast<uint32_t*>(d.get()));
  check_cuda(cudaGetLastError(), "launching quad_transpose_probe_kernel");
  device_synchronize("quad_transpose_probe_kernel");
  std::vector<uint32_t> got(words);
  copy_bytes(got.data(), Device::cpu, d.get(), Device::gpu, words * 4);
  int wrong = 0;
  for (int v = 0; v < warps; ++v)
    for (int lane = 0; lane < 32; ++lane)
      for (int s = 0; s < 4; ++s)
        wrong += got[(std::size_t(v) * 32 + lane) * 4 + s] != quad_transpose_word(v, lane / 4, lane % 4, s);
  return wrong;
}

}  // namespace convlab::gpu
