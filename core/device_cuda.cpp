// core/device_cuda.cpp — the device layer on the CUDA runtime.
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/checked_size.hpp"
#include "core/device.hpp"

namespace convlab {
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw DeviceError(std::string(what) + ": " + cudaGetErrorString(err));
}

cudaMemcpyKind copy_kind(Device dst, Device src) {
  if (dst == Device::cpu) return src == Device::cpu ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost;
  return src == Device::cpu ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice;
}

}  // namespace

bool cuda_compiled() { return true; }

int cuda_device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky "no driver" error
      return 0;
    }
    return n;
  }();
  return count;
}

std::string cuda_device_name() {
  if (cuda_device_count() == 0) return "";
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  return prop.name;
}

void require_cuda_device() {
  if (cuda_device_count() == 0) throw DeviceError("no CUDA device: this variant needs a GPU and none is visible");
}

void* device_malloc(std::size_t bytes) {
  // Every device buffer of the harness comes through here: the same limit as host memory.
  check_allocation(bytes, "a device buffer");
  require_cuda_device();
  void* p = nullptr;
  const cudaError_t e = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear it: an out-of-memory is not sticky
    throw DeviceError("cudaMalloc of " + describe_bytes(bytes) + " failed: " + cudaGetErrorString(e));
  }
  return p;
}

void device_free(void* p) noexcept {
  if (p) cudaFree(p);
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::cpu && src_device == Device::cpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
  check(cudaMemcpy(dst, src, bytes, copy_kind(dst_device, src_device)), "cudaMemcpy");
}

void device_memset(void* p, int byte, std::size_t bytes) { check(cudaMemset(p, byte, bytes), "cudaMemset"); }

void device_synchronize(const char* what) {
  if (cuda_device_count() == 0) return;
  check(cudaGetLastError(), what);
  check(cudaDeviceSynchronize(), what);
}

GpuTimer::GpuTimer() {
  require_cuda_device();
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "cudaEventCreate");
  check(cudaEventCreate(&b), "cudaEventCreate");
  start_ = a;
  stop_ = b;
}
GpuTimer::~GpuTimer() {
  if (start_) cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_) cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}
void GpuTimer::start() { check(cudaEventRecord(static_cast<cudaEvent_t>(start_)), "cudaEventRecord"); }
void GpuTimer::stop() { check(cudaEventRecord(static_cast<cudaEvent_t>(stop_)), "cudaEventRecord"); }
double GpuTimer::elapsed_ms() {
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)),
        "cudaEventElapsedTime");
  return ms;
}

void flush_gpu_l2() {
  static void* scratch = nullptr;
  static std::size_t scratch_bytes = 0;
  if (!scratch) {
    int dev = 0, l2 = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev), "cudaDeviceGetAttribute");
    scratch_bytes = 2 * static_cast<std::size_t>(l2 > 0 ? l2 : (64 << 20));
    scratch = device_malloc(scratch_bytes);  // lives for the process, like the L2 itself
  }
  check(cudaMemsetAsync(scratch, 0, scratch_bytes), "cudaMemsetAsync (L2 flush)");
}

namespace {
void (*shared_poisoner)() = nullptr;
}  // namespace

void set_shared_memory_poisoner(void (*poison)()) { shared_poisoner = poison; }

void poison_shared_memory() {
  static const bool off = [] {
    const char* v = std::getenv("CONVLAB_POISON_SHARED");
    return v && std::string(v) == "0";
  }();
  if (shared_poisoner && !off && cuda_device_count() > 0) shared_poisoner();
}

}  // namespace convlab
