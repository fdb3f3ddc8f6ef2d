// gpu/lib/tdc_core.hpp — TDC's core-conv kernel (lesson 12), launchable with any tile.
// Plain C++ (no CUDA types), for gpu/tucker_core/12a_tdc_direct.cu, the oracle sweep
// (bench/tdc_oracle.cu) and tests/lesson12_tdc_test.cpp; implemented in tdc_core.cu,
// which exists only in builds with CONVLAB_CUDA.
#pragma once

#include <string>

#include "ops/tucker_conv.hpp"

namespace convlab::gpu {

// "" when tdc_core_launch can run p with tile t, otherwise why not: fp32 only,
// K ≤ kTdcMaxThreads (one thread per output channel), 1 ≤ TW ≤ kTdcMaxTileWidth,
// TH, TC ≥ 1, the cube within the device's opt-in shared memory, the grid's limits.
std::string tdc_core_unsupported(const TuckerCoreProblem& p, const TdcTile& t);

// y = conv3x3(x, w) (ops/tucker_conv.hpp: x NHWC, w CRSN, y NHWC, device pointers),
// enqueued on `stream` (a cudaStream_t; nullptr: the default stream). With more than
// one channel tile it enqueues a memset of y and the kernel adds into it. Throws
// std::invalid_argument for an unsupported (p, t), DeviceError for a failed launch.
void tdc_core_launch(const TuckerCoreProblem& p, const TdcTile& t, const float* x, const float* w, float* y,
                     void* stream = nullptr);

}  // namespace convlab::gpu
