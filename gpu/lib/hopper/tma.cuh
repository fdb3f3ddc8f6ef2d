// gpu/lib/hopper/tma.cuh — the Tensor Memory Accelerator (TMA, sm_90): one
// thread asks the copy engine for a whole 2-D tile, global -> shared, and the
// engine reports completion on an mbarrier (gpu/lib/hopper/mbarrier.cuh).
//
// Contract of a tiled copy ("tensor map" + cp.async.bulk.tensor.2d):
//
//   the host describes a row-major matrix  [rows][cols], `elem_bytes` each,
//   rows `row_stride_bytes` apart, and a box of box_rows x box_cols elements;
//   the device names the box by its first element (col0, row0) — innermost
//   coordinate first — and the engine writes box_rows·box_cols elements to a
//   shared tile, row after row, each box row box_cols·elem_bytes long, with
//   the 128-byte swizzle applied to the shared address. Elements outside the
//   matrix (col ≥ cols, row ≥ rows, also negative) are written as ZERO, and
//   the mbarrier's transaction count is always the whole box's bytes.
//
// The plain loop one tiled copy replaces (every thread of a CTA, cp.async):
//
//   for (r = 0; r < box_rows; ++r) for (c = 0; c < box_cols; ++c)
//     tile[sw128(r·128 + 2c)] = (row0+r < rows && col0+c < cols) ? g[row0+r][col0+c] : 0;
//
// A box of several such panels side by side (box_panels, a 3-D tensor map) is one copy that
// writes them one panel after another: the loop above once per panel p, at tile + p·box_rows·128,
// from column col0 + p·box_cols.
//
// Two halves, as in gpu/lib/wgmma.cuh: (1) a plain-C++ model of what the
// encoder demands (TmaTile2d, tma_tile_unsupported_reason) and of where the
// engine puts each element (tma_sw128_box_offset), checked on the host by
// tests/hopper_lib_test.cpp against Sw128Tile and the wgmma descriptor model;
// (2) CUDA only: the tensor map encoded through the driver's
// cuTensorMapEncodeTiled, fetched with cudaGetDriverEntryPointByVersion so
// that nothing links libcuda, cached per (matrix, box), and the device-side
// copy and prefetch instructions.
//
// Sources: CUDA driver API, "Tensor Map Object Management"
// (cuTensorMapEncodeTiled's requirements); PTX ISA 9.x §9.7.9.25
// (cp.async.bulk.tensor), §5.5 (tensor maps, swizzle modes).
#pragma once

#include <cstdint>
#include <string>

#include "gpu/lib/wgmma.cuh"  // sw128_address: the same 128-byte swizzle

namespace convlab::gpu::hopper {

// ============================================================================
// 1. The model (host and device, plain C++)
// ============================================================================

// The 128-byte swizzle is the only mode this library encodes: its 1024-byte
// atoms are what gpu::Sw128Tile and the wgmma descriptors expect.
inline constexpr int kTmaSwizzleBytes = 128;
inline constexpr int kTmaSwizzleAtomBytes = 1024;  // 8 rows of 128 bytes: where a swizzled box must start
inline constexpr int kTmaMaxBoxDim = 256;          // cuTensorMapEncodeTiled: every boxDim[i] ≤ 256

// One row-major 2-D matrix in global memory and the box a copy moves.
//
// box_panels > 1: one copy moves box_panels side-by-side panels of box_rows × box_cols, the
// columns col0 .. col0 + box_panels·box_cols − 1, and writes them one panel after another
// (panel p at p·box_rows·128 bytes), exactly as box_panels copies of single panels would. The
// tensor map is then 3-D — (column within a panel, row, panel), strides (row stride, 128 bytes)
// — so that a stage of a weight matrix is one copy instead of one per panel (the copy engine
// takes each copy in turn: lesson 11's NOTES.md, the TMA stream probe).
struct TmaTile2d {
  uint64_t base = 0;              // global address of element (0, 0)
  uint64_t rows = 0, cols = 0;    // the matrix; cols is the contiguous dimension
  uint64_t row_stride_bytes = 0;  // distance between rows
  int elem_bytes = 2;             // 2 (f16, bf16) or 4
  int box_rows = 0, box_cols = 0;  // the box; box_cols·elem_bytes must be the 128-byte swizzle span
  int box_panels = 1;              // panels of box_cols columns moved by one copy
  bool operator==(const TmaTile2d&) const = default;
};

// "" when cuTensorMapEncodeTiled accepts `t` with the 128-byte swizzle and
// the box lands as one Sw128Tile panel; otherwise the first rule it breaks.
// (The encoder's own rules: a 16-byte aligned base, strides multiples of 16
// below 2^40, dimensions 1 .. 2^32, box dimensions 1 .. 256, the inner box
// at most the swizzle span; ours: the inner box exactly the span, whole
// 8-row atoms.)
inline std::string tma_tile_unsupported_reason(const TmaTile2d& t) {
  if (t.elem_bytes != 2 && t.elem_bytes != 4) return "TMA tile: element size must be 2 or 4 bytes";
  if (t.base % 16 != 0) return "TMA tile: the global base address must be 16-byte aligned";
  if (t.rows < 1 || t.cols < 1 || t.rows > (uint64_t(1) << 32) || t.cols > (uint64_t(1) << 32))
    return "TMA tile: matrix dimensions must be 1 .. 2^32";
  if (t.row_stride_bytes % 16 != 0)
    return "TMA tile: the row stride must be a multiple of 16 bytes (cols·elem_bytes = " +
           std::to_string(t.row_stride_bytes) + ")";
  if (t.row_stride_bytes >= (uint64_t(1) << 40)) return "TMA tile: the row stride must be below 2^40 bytes";
  if (t.row_stride_bytes < t.cols * uint64_t(t.elem_bytes)) return "TMA tile: rows overlap (stride < row bytes)";
  if (t.box_rows < 1 || t.box_rows > kTmaMaxBoxDim || t.box_cols < 1 || t.box_cols > kTmaMaxBoxDim)
    return "TMA tile: box dimensions must be 1 .. 256";
  if (t.box_cols * t.elem_bytes != kTmaSwizzleBytes)
    return "TMA tile: the box's inner extent must be exactly the 128-byte swizzle span";
  if (t.box_rows % 8 != 0) return "TMA tile: the box must hold whole 8-row swizzle atoms";
  if (t.box_panels < 1 || t.box_panels > kTmaMaxBoxDim) return "TMA tile: box panels must be 1 .. 256";
  // The engine checks each dimension of a 3-D box on its own: a last panel partly past the row's
  // end would read the next row's first columns (and, after the last row, past the matrix).
  if (t.box_panels > 1 && t.cols % uint64_t(t.box_cols) != 0)
    return "TMA tile: a box of several panels needs whole panels (cols a multiple of " +
           std::to_string(t.box_cols) + ")";
  return "";
}

// Bytes one copy of the box writes (and adds to the mbarrier's transaction count).
CONVLAB_HOST_DEVICE constexpr uint32_t tma_box_bytes(const TmaTile2d& t) {
  return uint32_t(t.box_rows) * t.box_cols * t.elem_bytes * t.box_panels;
}

// Where the engine writes element (r, c) of the box, relative to a
// 1024-aligned destination: rows are 128 bytes apart and the 16-byte chunk
// index is XORed with r % 8 (the engine swizzles address bits [4,7) with
// bits [7,10)). For 2-byte elements this equals
// Sw128Tile<box_rows, 64>::byte_offset(r, c) — one panel (host-tested).
CONVLAB_HOST_DEVICE constexpr uint32_t tma_sw128_box_offset(int r, int c, int elem_bytes) {
  return sw128_address(uint32_t(r) * kTmaSwizzleBytes + uint32_t(c) * elem_bytes);
}

// The same for a box of several panels (TmaTile2d::box_panels): column c of the box is column
// c % panel_cols of panel c / panel_cols, and each panel is box_rows rows of 128 bytes.
CONVLAB_HOST_DEVICE constexpr uint32_t tma_sw128_panels_offset(int r, int c, int box_rows, int panel_cols,
                                                                int elem_bytes) {
  return uint32_t(c / panel_cols) * uint32_t(box_rows) * kTmaSwizzleBytes +
         tma_sw128_box_offset(r, c % panel_cols, elem_bytes);
}

}  // namespace convlab::gpu::hopper

// ============================================================================
// 2. CUDA: encoding on the host, copying on the device
// ============================================================================
#if defined(__CUDACC__)
#include <cuda.h>  // CUtensorMap and the enums only: no libcuda symbol is linked
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <tuple>

#include "core/device.hpp"
#include "gpu/lib/check.cuh"

namespace convlab::gpu::hopper {

// cuTensorMapEncodeTiled's signature (the driver API, CUDA 12.0 and later).
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's encoder, looked up once through the runtime (no -lcuda).
inline EncodeTiledFn tensor_map_encoder() {
  static const EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    check_cuda(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found),
               "cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)");
    if (found != cudaDriverEntryPointSuccess || p == nullptr)
      throw DeviceError("the CUDA driver has no cuTensorMapEncodeTiled (TMA needs a 12.0+ driver)");
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// Encodes `t` (which must pass tma_tile_unsupported_reason) with the
// 128-byte swizzle and zero fill outside the matrix. One panel a box: a 2-D
// map (cols, rows). Several: a 3-D map (column within a panel, row, panel)
// whose panel stride, 128 bytes, is smaller than its row stride (strides
// not nested, as ThunderKittens encodes its swizzled tiles; the [gpu] test
// of tma_panels_wgmma_probe checks that the encoder takes it and where the
// bytes land).
inline CUtensorMap encode_tma_tile_2d(const TmaTile2d& t) {
  if (const std::string why = tma_tile_unsupported_reason(t); !why.empty()) throw std::invalid_argument(why);
  CUtensorMap map;
  const bool panels = t.box_panels > 1;
  const cuuint64_t dims[3] = {panels ? cuuint64_t(t.box_cols) : t.cols, t.rows,  // innermost first
                              panels ? t.cols / cuuint64_t(t.box_cols) : 1};
  const cuuint64_t strides[2] = {t.row_stride_bytes, cuuint64_t(t.box_cols) * t.elem_bytes};  // dims 1..; dim 0 dense
  const cuuint32_t box[3] = {cuuint32_t(t.box_cols), cuuint32_t(t.box_rows), cuuint32_t(t.box_panels)};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUtensorMapDataType type =
      t.elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;  // bits only: bf16 copies alike
  const CUresult r = tensor_map_encoder()(&map, type, panels ? 3 : 2, reinterpret_cast<void*>(t.base), dims, strides,
                                          box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw DeviceError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ") for a " +
                      std::to_string(t.rows) + " x " + std::to_string(t.cols) + " matrix, box " +
                      std::to_string(t.box_rows) + " x " + std::to_string(t.box_cols) +
                      (panels ? " x " + std::to_string(t.box_panels) + " panels" : std::string()));
  return map;
}

// The tensor map of `t`, encoded the first time this process asks for it and
// remembered (keyed by every field, the base address included), so a timed
// launch does no driver call. A handful of entries per problem; the cache
// holds at most kMaxEntries and starts over when full.
inline CUtensorMap cached_tma_tile_2d(const TmaTile2d& t) {
  using Key = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, int, int, int, int>;
  constexpr std::size_t kMaxEntries = 256;
  static std::mutex mutex;
  static std::map<Key, CUtensorMap> cache;
  const Key key{t.base, t.rows, t.cols, t.row_stride_bytes, t.elem_bytes, t.box_rows, t.box_cols, t.box_panels};
  const std::lock_guard<std::mutex> lock(mutex);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= kMaxEntries) cache.clear();
  return cache.emplace(key, encode_tma_tile_2d(t)).first->second;
}

// ---- device side ---------------------------------------------------------------------

// A tensor map lives in kernel-parameter space (`const __grid_constant__
// CUtensorMap`); the copy instruction takes its generic address.
__device__ __forceinline__ uint64_t tensor_map_address(const CUtensorMap* map) {
  return reinterpret_cast<uint64_t>(map);
}

// Fetches the descriptor into the TMA unit's cache ahead of the first copy.
__device__ __forceinline__ void tma_prefetch_descriptor(const CUtensorMap* map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(tensor_map_address(map)) : "memory");
#else
  __trap();
#endif
}

// Copies the box whose first element is (row0, col0) into the shared tile at
// `dst` (1024-aligned shared address) and signals completion of its bytes on
// the mbarrier at `barrier` (which must expect them: mbarrier_arrive_expect_tx).
// One thread issues it. Out-of-matrix elements arrive as zeros.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t barrier, int col0,
                                            int row0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::
          "r"(dst),
      "l"(tensor_map_address(map)), "r"(barrier), "r"(col0), "r"(row0)
      : "memory");
#else
  __trap();
#endif
}

// The box of a map encoded with box_panels > 1 (3-D) whose first element is (row0, col0), col0
// a multiple of the panel width (panel_cols): its panels land one after another at `dst`, as
// box_panels calls of tma_load_2d at panel_cols-column steps would put them. Out-of-matrix rows
// and panels arrive as zeros.
__device__ __forceinline__ void tma_load_panels(uint32_t dst, const CUtensorMap* map, uint32_t barrier, int col0,
                                                int row0, int panel_cols) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], "
      "[%2];\n" ::"r"(dst),
      "l"(tensor_map_address(map)), "r"(barrier), "r"(0), "r"(row0), "r"(col0 / panel_cols)
      : "memory");
#else
  __trap();
#endif
}

// The same box into every CTA of this thread's cluster whose bit is set in `cta_mask` (bit r:
// cluster rank r): the engine writes it at the same shared offset `dst` in each of them and
// completes its bytes on each one's mbarrier at the same offset `barrier`. Every receiving CTA
// must have that mbarrier initialised (and expecting the bytes, in its current phase) before the
// copy can land: initialise, fence_mbarrier_init, then a cluster barrier, before the first copy.
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, uint32_t barrier, int col0,
                                                      int row0, uint16_t cta_mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(dst),
      "l"(tensor_map_address(map)), "r"(barrier), "r"(col0), "r"(row0), "h"(cta_mask)
      : "memory");
#else
  __trap();
#endif
}

}  // namespace convlab::gpu::hopper
#endif  // __CUDACC__
