// gpu/lib/hopper/tma_im2col.cuh — TMA's im2col mode: one thread asks the copy
// engine for a box of `pixels` rows of the implicit im2col matrix of an NHWC
// activation, `channels` channels each, at one filter tap (r, s); and the
// 3-D tiled map of a KRSC filter that supplies the matching B box.
//
// Contract of an im2col copy (cuTensorMapEncodeIm2col + cp.async.bulk.tensor.4d.im2col):
//
//   the host describes x [N][H][W][C] (dims innermost first: C, W, H, N), a
//   BOUNDING BOX of filter-origin positions per image, given as two corners
//   relative to the image's edges — lower = (−pad, −pad), upper = the last
//   origin minus the last index, (Q−1)·stride − pad − (W−1) for W (likewise H)
//   — and a traversal stride (the conv's stride) for W and H;
//   the device names the first origin (c0, w0, h0, n0) = (c0, q·stride − pad,
//   p·stride − pad, n) of output pixel (n, p, q) and the tap (s, r) as two
//   16-bit im2col offsets. The engine then walks `pixels` origins: w += stride;
//   past the upper W corner back to the lower one and h += stride; past the
//   upper H corner back and n += 1 — exactly the output pixels m, m+1, ... in
//   NPQ order — and for each writes x[n][h + r][w + s][c0 .. c0+channels) as
//   one 128-byte row, 128-byte swizzled (as TmaTile2d's boxes land: one
//   Sw128Tile panel). Pixels or channels outside x arrive as ZERO: padding and
//   the tile's tail cost no branch. The transaction count is the whole box.
//
// The plain loop one copy replaces (04b's cp.async view, every thread of a CTA):
//
//   for (i = 0; i < pixels; ++i) { (n, p, q) = decode(m0 + i); h = p·stride − pad + r; w = q·stride − pad + s;
//     for (c = 0; c < channels; ++c) tile[sw128(i·128 + 2c)] = inside(n, h, w, c0 + c) ? x[n][h][w][c0 + c] : 0; }
//
// Two halves as in tma.cuh: (1) plain C++: Im2colNhwc (the corners, the
// encoder's rules in tma_im2col_unsupported_reason) and tma_im2col_walk, a
// model of the engine's traversal that tests/hopper_lib_test.cpp checks
// against the conv's own pixel decode for every pixel of every box; (2) CUDA:
// the encoders (the driver's cuTensorMapEncodeIm2col and cuTensorMapEncodeTiled,
// fetched like tma.cuh's, no -lcuda), cached per problem, and the two copies.
//
// Sources: CUDA driver API, cuTensorMapEncodeIm2col (corner ranges: rank 4,
// each in [−128, 127]; traversal strides 1 .. 8; channelsPerPixel ≤ 256,
// inner extent ≤ the swizzle span; pixelsPerColumn ≤ 1024); PTX ISA 9.x
// §5.5.5 (im2col mode: bounding box, traversal, offsets), §9.7.9.25.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/lib/hopper/tma.cuh"

namespace convlab::gpu::hopper {

// ============================================================================
// 1. The model (host and device, plain C++)
// ============================================================================

inline constexpr int kIm2colCornerMin = -128, kIm2colCornerMax = 127;  // rank 4: 8-bit corners
inline constexpr int kIm2colMaxTraversalStride = 8;
inline constexpr int kIm2colMaxOffset = 65535;  // the im2col offsets are 16-bit

// One NHWC activation seen through a convolution's window, and the box a copy moves.
struct Im2colNhwc {
  uint64_t base = 0;               // x[0][0][0][0]
  int N = 1, H = 1, W = 1, C = 1;  // x [N][H][W][C], C contiguous
  int R = 1, S = 1, stride = 1, pad = 0;
  int elem_bytes = 2;
  int pixels = 0, channels = 0;  // the box: rows (output pixels) x channels (128 bytes)

  CONVLAB_HOST_DEVICE constexpr int P() const { return (H + 2 * pad - R) / stride + 1; }
  CONVLAB_HOST_DEVICE constexpr int Q() const { return (W + 2 * pad - S) / stride + 1; }
  // The bounding box of filter origins, each corner relative to its edge (index 0 / index dim−1).
  CONVLAB_HOST_DEVICE constexpr int lower_h() const { return -pad; }
  CONVLAB_HOST_DEVICE constexpr int lower_w() const { return -pad; }
  CONVLAB_HOST_DEVICE constexpr int upper_h() const { return (P() - 1) * stride - pad - (H - 1); }
  CONVLAB_HOST_DEVICE constexpr int upper_w() const { return (Q() - 1) * stride - pad - (W - 1); }
  bool operator==(const Im2colNhwc&) const = default;
};

// "" when cuTensorMapEncodeIm2col accepts `t` with the 128-byte swizzle and
// the box lands as one Sw128Tile panel; otherwise the first rule it breaks.
inline std::string tma_im2col_unsupported_reason(const Im2colNhwc& t) {
  if (t.elem_bytes != 2) return "TMA im2col: 2-byte elements (f16, bf16) only";
  if (t.base % 16 != 0) return "TMA im2col: the activation's base address must be 16-byte aligned";
  if (t.N < 1 || t.H < 1 || t.W < 1 || t.C < 1 || t.R < 1 || t.S < 1 || t.stride < 1 || t.pad < 0)
    return "TMA im2col: sizes must be positive, padding non-negative";
  if (t.P() < 1 || t.Q() < 1) return "TMA im2col: the filter does not fit the padded image";
  if (t.C * t.elem_bytes % 16 != 0)
    return "TMA im2col: C must be a multiple of 8 (a pixel's row is a stride, a multiple of 16 bytes)";
  if (uint64_t(t.N) * t.H * t.W * t.C * t.elem_bytes >= (uint64_t(1) << 40))
    return "TMA im2col: strides must be below 2^40 bytes";
  if (t.stride > kIm2colMaxTraversalStride) return "TMA im2col: the traversal stride (conv stride) is at most 8";
  for (const int corner : {t.lower_h(), t.lower_w(), t.upper_h(), t.upper_w()})
    if (corner < kIm2colCornerMin || corner > kIm2colCornerMax)
      return "TMA im2col: bounding-box corners must lie in [-128, 127] (pad and pad - R + 1 bounded)";
  if (t.R - 1 > kIm2colMaxOffset || t.S - 1 > kIm2colMaxOffset) return "TMA im2col: filter taps are 16-bit offsets";
  if (t.channels * t.elem_bytes != kTmaSwizzleBytes)
    return "TMA im2col: the box's channels must be exactly the 128-byte swizzle span";
  if (t.pixels < 8 || t.pixels > kTmaMaxBoxDim || t.pixels % 8 != 0)
    return "TMA im2col: the box holds 8 .. 256 pixels, whole 8-row swizzle atoms";
  return "";
}

// Where the engine reads box row i of the copy whose first origin is
// (w0, h0, n0) at tap (r, s): the walk through the bounding box, step by
// step as the hardware does it (PTX ISA's im2col traversal), not by decoding
// i. `inside` is false where the element is outside x (it arrives as zero).
struct Im2colPixel {
  int n, h, w;
  bool inside;
};
CONVLAB_HOST_DEVICE constexpr Im2colPixel tma_im2col_walk(const Im2colNhwc& t, int n0, int h0, int w0, int i, int r,
                                                          int s) {
  int n = n0, h = h0, w = w0;
  const int last_w = t.W - 1 + t.upper_w(), last_h = t.H - 1 + t.upper_h();
  for (int step = 0; step < i; ++step) {
    w += t.stride;
    if (w > last_w) {
      w = t.lower_w();
      h += t.stride;
      if (h > last_h) {
        h = t.lower_h();
        ++n;
      }
    }
  }
  const int hh = h + r, ww = w + s;
  return {n, hh, ww, n >= 0 && n < t.N && hh >= 0 && hh < t.H && ww >= 0 && ww < t.W};
}

// A KRSC filter as a 3-D tiled tensor {C, R·S, K} and a box {channels, 1, rows}:
// rows output channels of one tap, `channels` wide, channels ≥ C and rows ≥ K
// arriving as zero. Lands like TmaTile2d's box (one Sw128Tile panel).
struct KrscFilterTile {
  uint64_t base = 0;
  int K = 1, RS = 1, C = 1;
  int elem_bytes = 2;
  int rows = 0, channels = 0;
  bool operator==(const KrscFilterTile&) const = default;
};
inline std::string tma_filter_unsupported_reason(const KrscFilterTile& t) {
  if (t.elem_bytes != 2) return "TMA filter tile: 2-byte elements only";
  if (t.base % 16 != 0) return "TMA filter tile: the base address must be 16-byte aligned";
  if (t.K < 1 || t.RS < 1 || t.C < 1) return "TMA filter tile: sizes must be positive";
  if (t.C * t.elem_bytes % 16 != 0) return "TMA filter tile: C must be a multiple of 8 (16-byte strides)";
  if (uint64_t(t.K) * t.RS * t.C * t.elem_bytes >= (uint64_t(1) << 40)) return "TMA filter tile: strides below 2^40";
  if (t.channels * t.elem_bytes != kTmaSwizzleBytes) return "TMA filter tile: the box is one 128-byte swizzle span wide";
  if (t.rows < 8 || t.rows > kTmaMaxBoxDim || t.rows % 8 != 0) return "TMA filter tile: 8 .. 256 rows, whole atoms";
  return "";
}

}  // namespace convlab::gpu::hopper

// ============================================================================
// 2. CUDA: encoding on the host, copying on the device
// ============================================================================
#if defined(__CUDACC__)
namespace convlab::gpu::hopper {

// cuTensorMapEncodeIm2col's signature (driver API, CUDA 12.0 and later).
using EncodeIm2colFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                    const cuuint64_t*, const int*, const int*, cuuint32_t, cuuint32_t,
                                    const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

inline EncodeIm2colFn im2col_map_encoder() {
  static const EncodeIm2colFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    check_cuda(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeIm2col", &p, 12000, cudaEnableDefault, &found),
               "cudaGetDriverEntryPointByVersion(cuTensorMapEncodeIm2col)");
    if (found != cudaDriverEntryPointSuccess || p == nullptr)
      throw DeviceError("the CUDA driver has no cuTensorMapEncodeIm2col (TMA needs a 12.0+ driver)");
    return reinterpret_cast<EncodeIm2colFn>(p);
  }();
  return fn;
}

inline CUtensorMap encode_tma_im2col_nhwc(const Im2colNhwc& t) {
  if (const std::string why = tma_im2col_unsupported_reason(t); !why.empty()) throw std::invalid_argument(why);
  CUtensorMap map;
  const uint64_t e = uint64_t(t.elem_bytes);
  const cuuint64_t dims[4] = {cuuint64_t(t.C), cuuint64_t(t.W), cuuint64_t(t.H), cuuint64_t(t.N)};
  const cuuint64_t strides[3] = {t.C * e, uint64_t(t.W) * t.C * e, uint64_t(t.H) * t.W * t.C * e};
  const int lower[2] = {t.lower_w(), t.lower_h()};  // innermost spatial dimension first, like dims
  const int upper[2] = {t.upper_w(), t.upper_h()};
  const cuuint32_t traversal[4] = {1, cuuint32_t(t.stride), cuuint32_t(t.stride), 1};
  const CUresult r = im2col_map_encoder()(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, reinterpret_cast<void*>(t.base), dims, strides, lower, upper,
      cuuint32_t(t.channels), cuuint32_t(t.pixels), traversal, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw DeviceError("cuTensorMapEncodeIm2col failed (CUresult " + std::to_string(int(r)) + ")");
  return map;
}

inline CUtensorMap encode_tma_krsc_filter(const KrscFilterTile& t) {
  if (const std::string why = tma_filter_unsupported_reason(t); !why.empty()) throw std::invalid_argument(why);
  CUtensorMap map;
  const uint64_t e = uint64_t(t.elem_bytes);
  const cuuint64_t dims[3] = {cuuint64_t(t.C), cuuint64_t(t.RS), cuuint64_t(t.K)};
  const cuuint64_t strides[2] = {t.C * e, uint64_t(t.RS) * t.C * e};
  const cuuint32_t box[3] = {cuuint32_t(t.channels), 1, cuuint32_t(t.rows)};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, reinterpret_cast<void*>(t.base),
                                          dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw DeviceError("cuTensorMapEncodeTiled (KRSC filter) failed (CUresult " + std::to_string(int(r)) + ")");
  return map;
}

// Both maps, encoded once per problem and remembered (keyed by every field,
// the base addresses included) so a timed launch makes no driver call.
inline CUtensorMap cached_tma_im2col_nhwc(const Im2colNhwc& t) {
  static std::mutex mutex;
  static std::map<std::tuple<uint64_t, int, int, int, int, int, int, int, int, int, int>, CUtensorMap> cache;
  const auto key = std::make_tuple(t.base, t.N, t.H, t.W, t.C, t.R, t.S, t.stride, t.pad, t.pixels, t.channels);
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 256) cache.clear();
  return cache.emplace(key, encode_tma_im2col_nhwc(t)).first->second;
}
inline CUtensorMap cached_tma_krsc_filter(const KrscFilterTile& t) {
  static std::mutex mutex;
  static std::map<std::tuple<uint64_t, int, int, int, int, int>, CUtensorMap> cache;
  const auto key = std::make_tuple(t.base, t.K, t.RS, t.C, t.rows, t.channels);
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 256) cache.clear();
  return cache.emplace(key, encode_tma_krsc_filter(t)).first->second;
}

// ---- device side ---------------------------------------------------------------------

// The im2col box whose first origin is (w0, h0, n0), channels c0 .., at tap
// (r, s), into the 1024-aligned shared tile `dst`, completing on `barrier`.
__device__ __forceinline__ void tma_load_im2col_4d(uint32_t dst, const CUtensorMap* map, uint32_t barrier, int c0,
                                                   int w0, int h0, int n0, uint16_t s, uint16_t r) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};\n" ::"r"(dst),
      "l"(tensor_map_address(map)), "r"(barrier), "r"(c0), "r"(w0), "r"(h0), "r"(n0), "h"(s), "h"(r)
      : "memory");
#else
  __trap();
#endif
}

// The filter box (channels c0 .., tap rs, output channels k0 ..) into `dst`.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const CUtensorMap* map, uint32_t barrier, int c0, int rs,
                                            int k0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
      "l"(tensor_map_address(map)), "r"(barrier), "r"(c0), "r"(rs), "r"(k0)
      : "memory");
#else
  __trap();
#endif
}

}  // namespace convlab::gpu::hopper
#endif  // __CUDACC__
