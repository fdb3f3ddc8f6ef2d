// core/device_none.cpp — the device layer of a build without CUDA: every GPU
// request is a clear error, never a crash.
#include <cstring>

#include "core/device.hpp"

namespace convlab {
namespace {
[[noreturn]] void no_cuda() {
  throw DeviceError("this convlab was built without CUDA (configure with -DCONVLAB_CUDA=ON where nvcc exists)");
}
}  // namespace

bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_device_name() { return ""; }
void require_cuda_device() { no_cuda(); }
void* device_malloc(std::size_t) { no_cuda(); }
void device_free(void*) noexcept {}
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (dst_device != Device::cpu || src_device != Device::cpu) no_cuda();
  if (bytes) std::memcpy(dst, src, bytes);
}
void device_memset(void*, int, std::size_t) { no_cuda(); }
void device_synchronize(const char*) {}
GpuTimer::GpuTimer() {}
GpuTimer::~GpuTimer() {}
void GpuTimer::start() { no_cuda(); }
void GpuTimer::stop() { no_cuda(); }
double GpuTimer::elapsed_ms() { no_cuda(); }
void flush_gpu_l2() {}
void set_shared_memory_poisoner(void (*)()) {}
void poison_shared_memory() {}

}  // namespace convlab
