// gpu/lib/tma_multicast_cluster_probe.hpp — does a TMA copy multicast to a thread-block cluster
// (gpu/lib/hopper/tma.cuh, tma_load_2d_multicast) put every box in every CTA? Plain C++ (no CUDA
// types), for tests/hopper_lib_test.cpp; implemented in tma_multicast_cluster_probe.cu, which
// exists only in builds with CONVLAB_CUDA.
//
// The probe: `clusters` clusters of `cluster` CTAs (2 or 4). A row-major matrix of boxes · 64 rows
// × 64 16-bit columns. Every CTA poisons its shared tile, then CTA r of a cluster asks for the
// boxes j ≡ r (mod cluster), each multicast to all the cluster's CTAs, while every CTA's mbarrier
// expects all the boxes' bytes. Each CTA then compares its whole tile, read through the 128-byte
// swizzle (tma_sw128_box_offset), with the matrix, and counts the elements that differ.
#pragma once

#include <cstdint>
#include <vector>

namespace convlab::gpu {

inline constexpr int kTmaMulticastProbeMaxBoxes = 16;  // 128 KB of shared memory at most

// Per CTA (cluster · clusters entries), the count of wrong elements. `matrix` holds boxes · 64 · 64
// values. Throws DeviceError when the GPU fails, std::invalid_argument on bad sizes, and
// std::runtime_error with wgmma_unavailable_reason() when the sm_90a code cannot run.
std::vector<int> run_tma_multicast_probe(int cluster, int clusters, int boxes, const std::vector<uint16_t>& matrix);

}  // namespace convlab::gpu
