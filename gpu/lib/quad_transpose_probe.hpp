// gpu/lib/quad_transpose_probe.hpp — does gpu::quad_transpose (gpu/lib/hopper/wgmma_epilogue.cuh)
// leave each thread of a quad the whole 8-column block that it stores? Plain C++ (no CUDA types),
// for tests/hopper_lib_test.cpp; implemented in quad_transpose_probe.cu, which exists only in
// builds with CONVLAB_CUDA.
//
// The probe: `warps` warps. Lane l of warp v (quad g = l / 4, tq = l % 4) starts with
// w[q] = word(v, g, q, tq) — thread tq's pair of columns in 8-column block q of row g, as a
// wgmma or mma.sync accumulator tile leaves it — and calls quad_transpose(w, tq). Afterwards
// w[s] must be word(v, g, tq, s): block tq, from thread s, in column order. Every lane writes
// its four words out and the host compares them with that rule.
#pragma once

#include <cstdint>

#include "gpu/lib/mma.cuh"  // CONVLAB_HOST_DEVICE

namespace convlab::gpu {

// The 32-bit word the probe gives thread tq of quad g in warp v for block q (all < 256 but v).
CONVLAB_HOST_DEVICE constexpr uint32_t quad_transpose_word(int v, int g, int q, int tq) {
  return (uint32_t(v) << 12) | (uint32_t(g) << 8) | (uint32_t(q) << 4) | uint32_t(tq);
}

// The count of (lane, word) places that differ from the rule, over `warps` warps (1 .. 1024).
// Throws DeviceError when the GPU fails and std::invalid_argument on a bad count.
int run_quad_transpose_probe(int warps);

}  // namespace convlab::gpu
