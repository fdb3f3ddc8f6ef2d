// gpu/lib/wgmma_probe.hpp — is wgmma usable here, and does it do what
// gpu/lib/wgmma.cuh says? Plain C++ (no CUDA types), for variants' run()
// and for tests/lesson09_wgmma_test.cpp; implemented in wgmma_probe.cu,
// which exists only in builds with CONVLAB_CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace convlab::gpu {

// "" when device 0 runs this build's sm_90a code (the wgmma path), otherwise
// why not: no device, a device other than compute capability 9.0, or a build
// whose CONVLAB_CUDA_ARCHS has no 90. Asked once per process, then cached.
std::string wgmma_unavailable_reason();

// The probe: the two products of gpu/attention/09d_flash_wgmma.cu, once each,
// on one CTA of two warpgroups, with that rung's tile layout, descriptors and
// fragment maps (gpu/lib/wgmma.cuh), so that a wrong convention shows up as
// a wrong product, and which product says where:
//
//   s        [128 x 128] = q [128 x d] · k [128 x d]ᵀ   wgmma m64n128k16, A and B K-major from
//                                                      shared memory (warpgroup w: rows 64w..)
//   o_from_p [128 x d]   = p [128 x 128] · v [128 x d]   wgmma m64nNk16, A from registers (loaded
//                                                      by wgmma_a_coord), B = V MN-major
//   o_from_s [128 x d]   = round(s) · v                 the same, A packed straight from s's
//                                                      accumulators (wgmma_d_index_for_a)
//
// d = 64 or 128; q, k, p, v row-major, raw 16-bit patterns of dtype (f16 or
// bf16); results fp32 row-major. s's first wgmma runs with scale-d = 0 on
// accumulators preset to NaN, so "D = A·B, not D += A·B" is checked too.
inline constexpr int kWgmmaProbeRows = 128;  // queries (two warpgroups of 64)
inline constexpr int kWgmmaProbeKeys = 128;  // keys: N of S, K of P·V
struct WgmmaProbeResult {
  std::vector<float> s, o_from_p, o_from_s;
};
// Throws DeviceError when the GPU fails, std::invalid_argument on bad sizes,
// and std::runtime_error with wgmma_unavailable_reason() when wgmma cannot run.
WgmmaProbeResult run_wgmma_probe(DType dtype, int d, const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                                 const std::vector<uint16_t>& p, const std::vector<uint16_t>& v);

}  // namespace convlab::gpu
