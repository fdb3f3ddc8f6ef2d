// bench/tune_sgemm_tiles.cu — sweep the tile shapes of lesson 03's fp32 SGEMM (rung 03m).
//
//   build-gpu/convlab_tune_sgemm [--size N] [--reps R] [--json FILE]
//
// Rung 03m's kernel (gpu/lib/sgemm_double_buffered.cuh) takes its tile shapes
// as a template parameter. This program instantiates a handful of them, checks
// each against cuBLAS's SGEMM (TF32 off) on the same random N×N×N problem and
// on an odd-sized one, times each with CUDA events (median of R runs after two
// warm-ups, cuBLAS timed in between the same way), and prints one row per
// shape: time, TFLOP/s, ratio to cuBLAS, registers and spills. It answers
// "which tiles should DefaultTiles be?" in one GPU call; the benchmarks
// (convlab_bench) then measure the chosen one properly. lessons/03-gemm/NOTES.md keeps
// the predictions and the answers.
//
// Exit status: 0 when every shape matched cuBLAS, 1 when one did not,
// 2 for a bad flag, 3 without a usable GPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/checked_size.hpp"
#include "core/device.hpp"
#include "gpu/lib/cublas_handle.cuh"
#include "gpu/lib/sgemm_double_buffered.cuh"

namespace {

using namespace convlab;
namespace db = convlab::gpu::double_buffered;

struct Candidate {
  std::string name;
  void (*launch)(int, int, int, const float*, const float*, float*);
  const void* kernel;  // the float4 instance, for cudaFuncGetAttributes
  int threads;
};

// The row of DefaultTiles (whichever shape it is) is marked "(default)".
template <class Cfg>
Candidate candidate(const char* name) {
  return {std::string(name) + (std::is_same_v<Cfg, db::DefaultTiles> ? " (default)" : ""), db::launch_tiles<Cfg>, reinterpret_cast<const void*>(db::gemm_double_buffering<Cfg, true>),
          Cfg::kThreads};
}

// Each row: BM, BN, BK, WM, WN, blocks per SM promised to ptxas.
std::vector<Candidate> candidates() {
  using db::Tiles;
  return {
      candidate<Tiles<128, 128, 8, 64, 32, 2>>("128x128x8 w64x32 b2 (rung 03l's)"),
      candidate<Tiles<128, 128, 16, 64, 32, 2>>("128x128x16 w64x32 b2"),
      candidate<Tiles<128, 128, 8, 32, 64, 2>>("128x128x8 w32x64 b2"),
      candidate<Tiles<128, 128, 16, 32, 64, 2>>("128x128x16 w32x64 b2"),
      candidate<Tiles<128, 128, 16, 64, 32, 1>>("128x128x16 w64x32 b1"),
      candidate<Tiles<128, 128, 8, 64, 64, 2>>("128x128x8 w64x64 b2 (128 thr)"),
      candidate<Tiles<128, 128, 16, 64, 64, 2>>("128x128x16 w64x64 b2 (128 thr)"),
      candidate<Tiles<128, 256, 8, 64, 64, 1>>("128x256x8 w64x64 b1"),
      candidate<Tiles<256, 128, 8, 64, 64, 1>>("256x128x8 w64x64 b1"),
      candidate<Tiles<64, 128, 8, 32, 64, 4>>("64x128x8 w32x64 b4 (128 thr)"),
  };
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "tune_sgemm: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(3);
  }
}

// Row-major C[M,N] = A[M,K]·B[K,N] through column-major cuBLAS: Cᵀ = Bᵀ·Aᵀ.
void cublas_sgemm(int M, int N, int K, const float* A, const float* B, float* C) {
  const float one = 1.f, zero = 0.f;
  gpu::check_cublas(cublasSgemm(gpu::cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N),
                    "cublasSgemm");
}

struct Problem {
  int M, N, K;
  float *A, *B, *C, *C_ref;
};

Problem make_problem(int M, int N, int K, std::mt19937& rng) {
  Problem p{M, N, K, nullptr, nullptr, nullptr, nullptr};
  // The same limit as every other buffer (core/checked_size.hpp): A, B, C and the cuBLAS C.
  check_allocation(checked_bytes({M, K}, 4, "A") + checked_bytes({K, N}, 4, "B") + 2 * checked_bytes({M, N}, 4, "C"),
                   "the sweep's four matrices");
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> a(size_t(M) * K), b(size_t(K) * N);
  for (float& v : a) v = u(rng);
  for (float& v : b) v = u(rng);
  check(cudaMalloc(&p.A, a.size() * 4), "cudaMalloc");
  check(cudaMalloc(&p.B, b.size() * 4), "cudaMalloc");
  check(cudaMalloc(&p.C, size_t(M) * N * 4), "cudaMalloc");
  check(cudaMalloc(&p.C_ref, size_t(M) * N * 4), "cudaMalloc");
  check(cudaMemcpy(p.A, a.data(), a.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(p.B, b.data(), b.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  cublas_sgemm(M, N, K, p.A, p.B, p.C_ref);
  check(cudaDeviceSynchronize(), "cuBLAS reference");
  return p;
}

// Relative L2 distance of p.C from cuBLAS's p.C_ref (infinite if C holds a NaN or Inf).
double rel_l2_vs_cublas(const Problem& p) {
  const size_t n = size_t(p.M) * p.N;
  std::vector<float> c(n), r(n);
  check(cudaMemcpy(c.data(), p.C, n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(r.data(), p.C_ref, n * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(c[i])) return INFINITY;
    diff += (double(c[i]) - r[i]) * (double(c[i]) - r[i]);
    norm += double(r[i]) * r[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

// One run into a C poisoned with NaN, then its distance from cuBLAS.
double run_and_compare(const Problem& p, void (*launch)(int, int, int, const float*, const float*, float*)) {
  check(cudaMemset(p.C, 0xFF, size_t(p.M) * p.N * 4), "cudaMemset");  // all-ones bytes: NaN in every float
  launch(p.M, p.N, p.K, p.A, p.B, p.C);
  check(cudaDeviceSynchronize(), "kernel");
  return rel_l2_vs_cublas(p);
}

template <class F>
double median_ms(F&& run, int reps) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) run();
  std::vector<float> ms(reps);
  for (float& m : ms) {
    check(cudaEventRecord(start), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    check(cudaEventElapsedTime(&m, start, stop), "cudaEventElapsedTime");
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int usage(const char* msg) {
  std::fprintf(stderr, "tune_sgemm: %s\nusage: convlab_tune_sgemm [--size N] [--reps R] [--json FILE]\n", msg);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int size = 4096, reps = 15;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--size" || arg == "--reps" || arg == "--json") && i + 1 >= argc) return usage("missing value");
    if (arg == "--size") size = std::atoi(argv[++i]);
    else if (arg == "--reps") reps = std::atoi(argv[++i]);
    else if (arg == "--json") json_path = argv[++i];
    else return usage(("unknown option '" + arg + "'").c_str());
  }
  if (size < 1 || size > 16384 || reps < 1) return usage("--size must be in 1..16384 and --reps positive");
  try {
    require_cuda_device();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tune_sgemm: %s\n", e.what());
    return 3;
  }

  std::mt19937 rng(2026);
  const Problem big = make_problem(size, size, size, rng);
  const Problem odd = make_problem(333, 517, 259, rng);  // scalar path, partial tiles everywhere
  const double flops = 2.0 * size * size * size;
  const double t_cublas = median_ms([&] { cublas_sgemm(size, size, size, big.A, big.B, big.C); }, reps);
  std::printf("%d^3 fp32, median of %d; cuBLAS %.3f ms = %.1f TFLOP/s\n", size, reps, t_cublas,
              flops / t_cublas * 1e-9);
  std::printf("%-40s %9s %8s %8s %6s %6s %9s %9s\n", "tiles", "ms", "TFLOP/s", "/cuBLAS", "regs", "spill",
              "err(big)", "err(odd)");

  std::ofstream json;
  if (!json_path.empty()) {
    json.open(json_path);
    if (!json) return usage(("cannot write " + json_path).c_str());
    json << "{\"size\": " << size << ", \"reps\": " << reps << ", \"cublas_ms\": " << t_cublas << ", \"rows\": [";
  }
  bool all_ok = true, first = true;
  for (const Candidate& c : candidates()) {
    cudaFuncAttributes attr{};
    check(cudaFuncGetAttributes(&attr, c.kernel), "cudaFuncGetAttributes");
    const double err_big = run_and_compare(big, c.launch), err_odd = run_and_compare(odd, c.launch);
    // fp32, K ≤ 16384: ~1e-7 expected (0 when both sum k in order with FMA, as seen on the H200).
    bool ok = err_big < 1e-5 && err_odd < 1e-5;
    const double t = median_ms([&] { c.launch(size, size, size, big.A, big.B, big.C); }, reps);
    const double err_after = rel_l2_vs_cublas(big);  // the last timed run's output, checked too
    ok = ok && err_after < 1e-5;
    all_ok = all_ok && ok;
    std::printf("%-40s %9.3f %8.1f %8.3f %6d %6zu %9.2e %9.2e%s\n", c.name.c_str(), t, flops / t * 1e-9, t_cublas / t,
                attr.numRegs, size_t(attr.localSizeBytes), err_big, err_odd, ok ? "" : "  WRONG");
    if (json) {
      json << (first ? "" : ",") << "\n  {\"tiles\": \"" << c.name << "\", \"ms\": " << t
           << ", \"tflops\": " << flops / t * 1e-9 << ", \"vs_cublas\": " << t_cublas / t
           << ", \"registers\": " << attr.numRegs << ", \"spill_bytes\": " << attr.localSizeBytes
           << ", \"rel_l2_big\": " << err_big << ", \"rel_l2_odd\": " << err_odd << ", \"ok\": " << (ok ? "true" : "false")
           << "}";
    }
    first = false;
  }
  if (json) json << "\n]}\n";
  std::printf(all_ok ? "all tile shapes matched cuBLAS\n" : "SOME TILE SHAPES DID NOT MATCH cuBLAS\n");
  return all_ok ? 0 : 1;
}
