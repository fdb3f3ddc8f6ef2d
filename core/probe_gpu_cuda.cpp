// core/probe_gpu_cuda.cpp — the GPU's own limits, measured: copy bandwidth and
// cuBLAS GEMM rates (DESIGN.md: peaks are measured, not copied).
//
// Every "% of peak" of a GPU variant divides by one of these numbers:
//   copy_gbs         cudaMemcpy device → device of 1 GiB, bytes read + written
//   sgemm_gflops     cuBLAS fp32 GEMM 4096³, IEEE fp32 (TF32 off)
//   hgemm_gflops     cuBLAS fp16 GEMM 8192³, fp32 accumulation, fp16 output
//   bf16gemm_gflops  cuBLAS bf16 GEMM 8192³, fp32 accumulation, bf16 output
// Each is the median of kTimedRuns runs after kWarmupRuns, timed with CUDA
// events. GEMM inputs are random, never zeros: tensor cores draw less power,
// and so clock higher, on zeros, which would flatter the peak. The whole probe
// takes well under five seconds on an H100/H200.
//
// Plain C++ (no kernels): buffers are filled from the host.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/checked_size.hpp"
#include "core/dtype.hpp"
#include "core/probe.hpp"

namespace convlab {
namespace {

// ---- tunables ----------------------------------------------------------------
constexpr std::size_t kCopyBytes = std::size_t(1) << 30;  // per buffer: far beyond any L2
constexpr int kSgemmSize = 4096;                           // fp32: ~0.14 TFLOP per run
constexpr int kHalfGemmSize = 8192;                        // fp16/bf16: ~1.1 TFLOP per run
constexpr int kWarmupRuns = 3;
constexpr int kTimedRuns = 10;
static_assert(kWarmupRuns >= 1 && kTimedRuns >= 1, "a median needs timed runs, and the first run pays for loading kernels");
static_assert(kSgemmSize % 128 == 0 && kHalfGemmSize % 128 == 0,
              "sizes that tile evenly, so the peak is not diluted by edge tiles");

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw DeviceError(std::string("GPU probe: ") + what + ": " + cudaGetErrorString(err));
}
void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string("GPU probe: ") + what + ": " + cublasGetStatusName(status));
}

struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t bytes) {
    check_allocation(bytes, "a probe buffer");  // the same limit as every other buffer
    check(cudaMalloc(&ptr, bytes), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* ptr = nullptr;
};

struct Events {
  Events() {
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t start = nullptr, stop = nullptr;
};

// Median time in milliseconds of `work` (queued on the default stream).
template <class Work> double median_ms(Work&& work) {
  Events ev;
  for (int i = 0; i < kWarmupRuns; ++i) work();
  check(cudaDeviceSynchronize(), "warm-up");
  std::vector<double> ms;
  for (int i = 0; i < kTimedRuns; ++i) {
    check(cudaEventRecord(ev.start), "cudaEventRecord");
    work();
    check(cudaEventRecord(ev.stop), "cudaEventRecord");
    check(cudaEventSynchronize(ev.stop), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, ev.start, ev.stop), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double copy_bandwidth_gbs() {
  DeviceBuffer src(kCopyBytes), dst(kCopyBytes);
  check(cudaMemset(src.ptr, 0x5a, kCopyBytes), "cudaMemset");  // touch every page before timing
  check(cudaMemset(dst.ptr, 0, kCopyBytes), "cudaMemset");
  const double ms = median_ms(
      [&] { check(cudaMemcpyAsync(dst.ptr, src.ptr, kCopyBytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync"); });
  return 2.0 * double(kCopyBytes) / (ms * 1e-3) / 1e9;  // every byte is read once and written once
}

// `count` random values uniform in [-1, 1), as the element type's bit patterns.
// A table of 4096 correctly rounded values indexed by a fast generator: the
// rounding is done 4096 times, not 67 million.
template <class Bits> std::vector<Bits> random_elements(std::size_t count, DType dtype) {
  std::mt19937_64 rng(20240611);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<Bits> table(4096);
  for (Bits& v : table) {
    const float f = uniform(rng);
    if constexpr (sizeof(Bits) == 4) {
      std::memcpy(&v, &f, 4);
    } else {
      v = dtype == DType::bf16 ? float_to_bf16(f) : float_to_half(f);
    }
  }
  std::vector<Bits> out(count);
  uint64_t state = rng();
  for (Bits& v : out) {  // xorshift64: random enough for the table index, and fast
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    v = table[state >> 52];
  }
  return out;
}

// C = A·B for n×n matrices of `dtype`, fp32 accumulation; returns GFLOP/s.
double gemm_gflops(cublasHandle_t handle, int n, DType dtype) {
  const cudaDataType_t type = dtype == DType::f32 ? CUDA_R_32F : dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
  const std::size_t count = std::size_t(n) * n, bytes = count * dtype_size(dtype);
  DeviceBuffer a(bytes), b(bytes), c(bytes);
  if (dtype == DType::f32) {
    const std::vector<uint32_t> host = random_elements<uint32_t>(count, dtype);
    check(cudaMemcpy(a.ptr, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(b.ptr, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  } else {
    const std::vector<uint16_t> host = random_elements<uint16_t>(count, dtype);
    check(cudaMemcpy(a.ptr, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(b.ptr, host.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  const float alpha = 1.f, beta = 0.f;
  const double ms = median_ms([&] {
    check(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.ptr, type, n, b.ptr, type, n, &beta,
                       c.ptr, type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  });
  return 2.0 * double(n) * n * n / (ms * 1e-3) / 1e9;
}

}  // namespace

GpuPeaks probe_gpu() {
  GpuPeaks peaks;
  if (cuda_device_count() == 0) return peaks;

  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  peaks.name = prop.name;
  peaks.sm_count = prop.multiProcessorCount;

  peaks.copy_gbs = copy_bandwidth_gbs();

  cublasHandle_t handle = nullptr;
  check(cublasCreate(&handle), "cublasCreate");
  struct HandleGuard {
    cublasHandle_t h;
    ~HandleGuard() { cublasDestroy(h); }
  } guard{handle};
  // IEEE fp32 (no TF32) and fp32 split-K reductions: the same rules as the variants.
  check(cublasSetMathMode(handle, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
        "cublasSetMathMode");
  peaks.sgemm_gflops = gemm_gflops(handle, kSgemmSize, DType::f32);
  peaks.hgemm_gflops = gemm_gflops(handle, kHalfGemmSize, DType::f16);
  peaks.bf16gemm_gflops = gemm_gflops(handle, kHalfGemmSize, DType::bf16);
  return peaks;
}

}  // namespace convlab
