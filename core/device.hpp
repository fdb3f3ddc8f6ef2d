// core/device.hpp — the little the harness needs from a GPU, behind plain C++.
//
// Implemented by core/device_cuda.cpp when convlab is built with CUDA and by
// core/device_none.cpp otherwise, so no file outside gpu/ includes a CUDA
// header. Every function that can fail throws convlab::DeviceError with the
// CUDA error string; none of them aborts.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

namespace convlab {

// One name per device everywhere: the folder gpu/, the id op/gpu/name, the test
// tag [gpu] and the benchmark name op/gpu/name/shape.
enum class Device { cpu, gpu };
inline const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "gpu"; }

struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool cuda_compiled();       // was this build configured with CONVLAB_CUDA?
int cuda_device_count();    // 0 when not compiled, no driver, or no device
std::string cuda_device_name();  // "" when none
// Throws DeviceError("no CUDA device: ...") unless a device can be used.
void require_cuda_device();

void* device_malloc(std::size_t bytes);
void device_free(void* p) noexcept;
// device_malloc's bytes, freed when the owner goes (the GPU probes' scratch buffers).
inline std::unique_ptr<void, void (*)(void*) noexcept> device_buffer(std::size_t bytes) {
  return {device_malloc(bytes), device_free};
}
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes);
void device_memset(void* p, int byte, std::size_t bytes);
// Waits for all queued work and turns any asynchronous kernel error into a DeviceError.
void device_synchronize(const char* what);

// CUDA-event stopwatch on the default stream (DESIGN.md: GPU timing).
class GpuTimer {
 public:
  GpuTimer();
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;
  void start();
  void stop();
  double elapsed_ms();  // synchronizes on the stop event
 private:
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

// Shared-memory poison for checked runs: fills every SM's shared memory with 0xFF bytes (NaN in
// f16, bf16 and f32) before a GPU variant runs, so that a kernel reading shared memory it never
// wrote meets NaN, not an earlier kernel's leftovers (which are often finite, and hide the bug).
// The kernel lives in gpu/lib/shared_poison.cu, which installs it; with no GPU code linked, or
// CONVLAB_POISON_SHARED=0 in the environment, poison_shared_memory does nothing.
void set_shared_memory_poisoner(void (*poison)());
void poison_shared_memory();

// Evicts the GPU's L2 by writing a buffer twice its size, so each timed
// repetition reads its inputs from HBM, not from the previous repetition's cache.
void flush_gpu_l2();

}  // namespace convlab
