// gpu/lib/tdc_core.hpp — TDC's core-conv kernel (lesson 12), launchable with any tile.
// Plain C++ (no CUDA types), for gpu/tucker_core/12a_tdc_direct.cu, the oracle sweep
// (bench/tdc_oracle.cu) and tests/lesson12_tdc_test.cpp; implemented in tdc_core.cu,
// which exists only in builds with CONVLAB_CUDA.
#pragma once

#include <cstddef>
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

// The whole Tucker layer (ops/tucker_conv.hpp, TuckerConvProblem) as three launches on
// `stream`: z1 = x · u_in and y = z2 · u_out_t on lesson 03's double-buffered SGEMM (the
// suite's pointwise kernel: a 1x1 conv over NHWC is that GEMM), z2 = the core conv with
// tile `core_tile`. workspace holds z1 [N,H,W,D1] then z2 [N,H,W,D2] (tucker_layer_workspace_bytes).
std::string tucker_layer_unsupported(const TuckerConvProblem& p, const TdcTile& core_tile);
std::size_t tucker_layer_workspace_bytes(const TuckerConvProblem& p);
void tucker_layer_launch(const TuckerConvProblem& p, const TdcTile& core_tile, const float* x, const float* u_in,
                         const float* core, const float* u_out_t, float* y, void* workspace, void* stream = nullptr);

}  // namespace convlab::gpu
