// core/probe_gpu_none.cpp — a build without CUDA has no GPU to probe.
#include "core/probe.hpp"

namespace convlab {
GpuPeaks probe_gpu() { return {}; }
}  // namespace convlab
