// gpu/lib/tdc_core.cu — TDC's core-conv kernel: a direct 3x3 conv for few channels.
//
// Contract: gpu/lib/tdc_core.hpp. Tile diagram of one thread block:
//
//   blockIdx.x → spatial tile (h0, w0) of TH × TW output pixels, blockIdx.z → image n,
//   blockIdx.y → channel tile c0 .. c0+TC−1 (the last one may be short, or TC > C)
//
//        cube in shared memory, [TC][TH+2][TW+2] (channel-major, so that one row
//        of one channel is contiguous)           threads: one per output channel k
//        ┌────────────── TW+2 ─┐                 k = threadIdx.x < K; the warp-padding
//        │ halo                │ TH+2            threads only help stage the cube
//        │   TH × TW outputs   │ × TC channels
//        └─────────────────────┘
//
//   for oh in 0..TH−1:                       one output row at a time
//     acc[0..TW−1] = 0                       registers (RW = TW rounded up to 2, 4, 8, 16)
//     for c in 0..TC−1, r in 0..2:
//       w0,w1,w2 = w[c0+c][r][0..2][k]       CRSN: a warp's 32 k are 128 contiguous bytes
//       v[0..TW+1] = cube[c][oh+r][0..TW+1]  one shared word per lane, broadcast to the warp
//       acc[q] += w0·v[q] + w1·v[q+1] + w2·v[q+2]
//     y[n, h0+oh, w0+q, k] (+)= acc[q]       stored if one channel tile, else atomicAdd
//
// Channel-tile partial sums: with ⌈C/TC⌉ > 1, blocks of different channel tiles add
// into the same outputs. They meet by atomicAdd into a y zeroed by a memset enqueued
// just before (TDC's own choice). A second reduce pass would need a ⌈C/TC⌉·|y|
// workspace and one more kernel; at batch 1 these convolutions take microseconds and
// each launch costs one or two, so the memset node (cheaper than a kernel) and the
// atomics (a warp's 32 adds land in one 128-byte line: one L2 transaction) win. The
// order of the additions varies from run to run, so results are not bit-reproducible;
// the sum is still fp32 over 9·C terms and within the checker's tolerance.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gpu/lib/check.cuh"
#include "gpu/lib/sgemm_double_buffered.cuh"
#include "gpu/lib/tdc_core.hpp"

namespace convlab::gpu {
namespace {

// ---- tunables: the register widths the kernel is instantiated for ----------------------
// A thread's accumulators for one output row live in registers only if their count is a
// compile-time constant, so the kernel is a template on RW and a run-time TW runs on the
// smallest RW >= TW (tdc_register_width: 2, 4, 8, 16), lanes past TW predicated off.
static_assert(kTdcMaxTileWidth == 16, "tdc_core_launch instantiates register widths up to 16 = kTdcMaxTileWidth");
static_assert(kTdcMaxThreads <= 1024, "one thread per output channel: a block holds at most 1024 threads");

template <int RW>  // register width: the most output columns one thread holds
__global__ void tdc_core_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                int H, int W, int C, int K, int TH, int TW, int TC, int tiles_w, bool accumulate) {
  extern __shared__ float cube[];  // [TC][TH+2][TW+2]
  const int h0 = int(blockIdx.x / tiles_w) * TH, w0 = int(blockIdx.x % tiles_w) * TW;
  const int c0 = int(blockIdx.y) * TC, n = int(blockIdx.z);
  const int tc = min(TC, C - c0);
  const int rows = TH + 2, cols = TW + 2;

  // Stage the cube. Consecutive threads take consecutive channels of one pixel, so
  // the global reads of x (NHWC) are contiguous runs of tc floats.
  const int elems = rows * cols * tc;
  for (int e = threadIdx.x; e < elems; e += blockDim.x) {
    const int c = e % tc, pix = e / tc;
    const int i = pix / cols, j = pix % cols;
    const int h = h0 - 1 + i, ww = w0 - 1 + j;
    float v = 0.f;
    if (h >= 0 && h < H && ww >= 0 && ww < W) v = x[((size_t(n) * H + h) * W + ww) * C + c0 + c];
    cube[(c * rows + i) * cols + j] = v;
  }
  __syncthreads();

  const int k = threadIdx.x;
  if (k >= K) return;
  const int th = min(TH, H - h0), tw = min(TW, W - w0);
  for (int oh = 0; oh < th; ++oh) {
    float acc[RW];
#pragma unroll
    for (int q = 0; q < RW; ++q) acc[q] = 0.f;
    for (int c = 0; c < tc; ++c) {
      const float* wc = w + size_t(c0 + c) * 9 * K + k;  // w[c0+c][0][0][k]
      const float* cube_c = cube + (c * rows + oh) * cols;
#pragma unroll
      for (int r = 0; r < 3; ++r) {
        const float wa = __ldg(wc + (3 * r + 0) * K), wb = __ldg(wc + (3 * r + 1) * K),
                    wd = __ldg(wc + (3 * r + 2) * K);
        const float* row = cube_c + r * cols;
        // Plain form: for q < tw: acc[q] += wa·row[q] + wb·row[q+1] + wd·row[q+2].
        // Unrolled to RW with a guard, so acc and v stay in registers.
        float v[RW + 2];
#pragma unroll
        for (int q = 0; q < RW + 2; ++q) v[q] = q < tw + 2 ? row[q] : 0.f;
#pragma unroll
        for (int q = 0; q < RW; ++q) {
          acc[q] = fmaf(wa, v[q], acc[q]);
          acc[q] = fmaf(wb, v[q + 1], acc[q]);
          acc[q] = fmaf(wd, v[q + 2], acc[q]);
        }
      }
    }
    float* out = y + ((size_t(n) * H + h0 + oh) * W + w0) * K + k;
#pragma unroll
    for (int q = 0; q < RW; ++q)
      if (q < tw) {
        if (accumulate)
          atomicAdd(out + size_t(q) * K, acc[q]);
        else
          out[size_t(q) * K] = acc[q];
      }
  }
}

int opt_in_shared_bytes() {
  static const int bytes = [] {
    int device = 0, value = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
               "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin)");
    return value;
  }();
  return bytes;
}

template <int RW>
void launch_with(const TuckerCoreProblem& p, const TdcTile& t, const float* x, const float* w, float* y,
                 cudaStream_t stream) {
  const int tiles_h = (p.H + t.th - 1) / t.th, tiles_w = (p.W + t.tw - 1) / t.tw;
  const int channel_tiles = (p.C + t.tc - 1) / t.tc;
  const bool accumulate = channel_tiles > 1;
  const std::size_t smem = std::size_t(t.th + 2) * (t.tw + 2) * std::min(t.tc, p.C) * sizeof(float);
  if (smem > 48 * 1024) allow_dynamic_shared(tdc_core_kernel<RW>, smem, "tdc_core_kernel");
  if (accumulate)
    check_cuda(cudaMemsetAsync(y, 0, std::size_t(p.N) * p.H * p.W * p.K * sizeof(float), stream), "cudaMemsetAsync(y)");
  const dim3 grid(unsigned(tiles_h) * unsigned(tiles_w), unsigned(channel_tiles), unsigned(p.N));
  tdc_core_kernel<RW><<<grid, tdc_threads(p), smem, stream>>>(x, w, y, p.H, p.W, p.C, p.K, t.th, t.tw,
                                                               std::min(t.tc, p.C), tiles_w, accumulate);
  check_launch("tdc_core_kernel");
}

}  // namespace

std::string tdc_core_unsupported(const TuckerCoreProblem& p, const TdcTile& t) {
  if (p.dtype != DType::f32) return "fp32 only";
  if (!p.valid()) return p.invalid_reason();
  if (p.K > kTdcMaxThreads) return "K > " + std::to_string(kTdcMaxThreads) + " (one thread per output channel)";
  if (t.th < 1 || t.tc < 1 || t.tw < 1 || t.tw > kTdcMaxTileWidth)
    return "tile " + tile_name(t) + ": TH, TC >= 1 and 1 <= TW <= " + std::to_string(kTdcMaxTileWidth);
  const double tiles = double((p.H + t.th - 1) / t.th) * ((p.W + t.tw - 1) / t.tw);
  if (tiles > double(kMaxGridX) || (p.C + t.tc - 1) / t.tc > kMaxGridYZ || p.N > kMaxGridYZ) return "grid too large";
  const double smem = double(t.th + 2) * (t.tw + 2) * std::min(t.tc, p.C) * 4.0;
  if (smem > 48 * 1024 && smem > opt_in_shared_bytes()) return "tile " + tile_name(t) + ": cube above the shared memory of one block";
  return "";
}

void tdc_core_launch(const TuckerCoreProblem& p, const TdcTile& t, const float* x, const float* w, float* y,
                     void* stream_ptr) {
  if (const std::string why = tdc_core_unsupported(p, t); !why.empty())
    throw std::invalid_argument("tdc_core_launch: " + why);
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  switch (tdc_register_width(t.tw)) {
    case 2: launch_with<2>(p, t, x, w, y, stream); break;
    case 4: launch_with<4>(p, t, x, w, y, stream); break;
    case 8: launch_with<8>(p, t, x, w, y, stream); break;
    default: launch_with<16>(p, t, x, w, y, stream); break;
  }
}

std::string tucker_layer_unsupported(const TuckerConvProblem& p, const TdcTile& core_tile) {
  if (p.dtype != DType::f32) return "fp32 only";
  if (!p.valid()) return p.invalid_reason();
  if (ceil_div<double>(p.pixels(), double_buffered::kBlockM) > double(kMaxGridYZ))
    return "N·H·W above the SGEMM's grid (65535 row tiles of 128)";
  return tdc_core_unsupported(p.core(), core_tile);
}

std::size_t tucker_layer_workspace_bytes(const TuckerConvProblem& p) {
  return std::size_t(p.pixels()) * (p.D1 + p.D2) * sizeof(float);
}

void tucker_layer_launch(const TuckerConvProblem& p, const TdcTile& core_tile, const float* x, const float* u_in,
                         const float* core, const float* u_out_t, float* y, void* workspace, void* stream_ptr) {
  if (const std::string why = tucker_layer_unsupported(p, core_tile); !why.empty())
    throw std::invalid_argument("tucker_layer_launch: " + why);
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  const int M = int(p.pixels());
  float* z1 = static_cast<float*>(workspace);   // [N, H, W, D1]
  float* z2 = z1 + std::size_t(M) * p.D1;       // [N, H, W, D2]
  double_buffered::launch(M, p.D1, p.C, x, u_in, z1, stream);             // 1x1 C → D1
  tdc_core_launch(p.core(), core_tile, z1, core, z2, stream);             // 3x3 D1 → D2
  double_buffered::launch(M, p.K, p.D2, z2, u_out_t, y, stream);          // 1x1 D2 → K
}

}  // namespace convlab::gpu
