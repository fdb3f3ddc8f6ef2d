// gpu/lib/wgmma.cuh — Hopper's warpgroup MMA (wgmma, sm_90a): shared-memory
// tile layout, matrix descriptors, register fragments, and the PTX wrappers.
//
// What changes against mma.sync (gpu/lib/mma.cuh):
//
//   * a WARPGROUP (4 consecutive warps, 128 threads, the first warp's index a
//     multiple of 4) issues one instruction together: m64nNk16, D[64 x N] +=
//     A[64 x 16] · B[16 x N], N a multiple of 8 up to 256;
//   * B always, and A optionally, is read by the tensor cores straight from
//     shared memory. The instruction gets a 64-bit MATRIX DESCRIPTOR per
//     operand (start address, two strides, a swizzle mode) instead of
//     registers filled by ldmatrix; the layout in shared memory must be one of
//     the PTX ISA's "canonical layouts";
//   * it is ASYNCHRONOUS: the instruction returns at once, the result lands in
//     the accumulator registers later. wgmma.commit_group closes a group of
//     issued wgmma, wgmma.wait_group N waits until at most N groups are still
//     in flight; only then may the accumulators (and A registers) be touched.
//     wgmma.fence must precede the first wgmma after ordinary code wrote its
//     accumulator or A registers.
//
// Like mma.cuh, two halves: (1) index maps and the descriptor encoding, plain
// constexpr functions checked on the host by tests/lesson09_wgmma_test.cpp,
// and a model of how the hardware reads a descriptor (the PTX ISA's canonical
// layouts) so the host can check that our tile layout and our descriptors
// agree; (2) the PTX wrappers (CUDA only, and only with code for sm_90a:
// elsewhere they trap).
//
// Sources: PTX ISA 9.x, §9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-
// Accumulate" — register fragments (§9.7.15.5.1.1), shared memory matrix
// layout, strides and canonical layouts (§9.7.15.5.1.2), matrix descriptor
// format (§9.7.15.5.1.2.2).
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpu/lib/mma.cuh"

namespace convlab::gpu {

// ============================================================================
// 1. Index maps, layouts, descriptors (host and device)
// ============================================================================

// ---- register fragments of wgmma.mma_async.m64nNk16 (f16/bf16 in, f32 out) ----
//
// `thread` is the thread's index in its warpgroup (threadIdx.x % 128), so
// warp w = thread / 32 of the warpgroup and lane = thread % 32.
//
// Accumulator D, N/2 fp32 registers d[0 .. N/2): warp w owns rows 16w .. 16w+15;
// within the warp the layout is mma.sync's m16n8 C fragment (mma_c_coord)
// repeated over the N/8 column tiles, four registers per tile:
//
//   d[4j + c]  ->  row 16w + g + 8·(c >> 1),  column 8j + 2t + (c & 1)
CONVLAB_HOST_DEVICE constexpr MatrixCoord wgmma_d_coord(int thread, int i) {
  const MatrixCoord c = mma_c_coord(thread % 32, i % 4);
  return {16 * (thread / 32) + c.row, 8 * (i / 4) + c.col};
}

// A from registers (4 registers of two 16-bit elements): warp w supplies rows
// 16w .. 16w+15 of the 64 x 16 A tile, in mma.sync's m16k16 A layout (mma_a_coord).
CONVLAB_HOST_DEVICE constexpr MatrixCoord wgmma_a_coord(int thread, int reg, int half) {
  const MatrixCoord a = mma_a_coord(thread % 32, reg, half);
  return {16 * (thread / 32) + a.row, a.col};
}

// Accumulators reused as an A operand (FlashAttention's P = softmax(S) fed to
// P·V without leaving registers): the A fragment of k16 step `kstep` of a
// 64 x N accumulator — its columns 16·kstep .. 16·kstep+15 — is, register r,
// half h, exactly accumulator d[wgmma_d_index_for_a(kstep, r, h)] of the same
// thread (two neighbouring n8 tiles of C = one m16k16 A; checked on the host).
CONVLAB_HOST_DEVICE constexpr int wgmma_d_index_for_a(int kstep, int reg, int half) {
  return 8 * kstep + 4 * (reg >> 1) + 2 * (reg & 1) + half;
}

// ---- the shared-memory tile: 128-byte swizzle, 16-bit elements ---------------------
//
// A logical kRows x kCols row-major tile (Q, K or V: row = query or key, col =
// head dimension) is stored as kCols/64 PANELS, each kRows x 64 elements, one
// 128-byte line per row. Inside every group of 8 rows (1024 bytes: one
// "swizzle atom") the 16-byte chunk c of row r sits at chunk position c ^ (r % 8):
//
//   byte_offset(row, col) = (col / 64)·kRows·128 + row·128
//                         + 16·(((col % 64) / 8) ^ (row % 8)) + 2·(col % 8)
//
//   panel 0 (cols 0-63)                    panel 1 (cols 64-127)
//   row 0: c0 c1 c2 c3 c4 c5 c6 c7         row 0: ...
//   row 1: c1 c0 c3 c2 c5 c4 c7 c6         (chunk positions hold logical chunk c ^ r)
//   row 2: c2 c3 c0 c1 c6 c7 c4 c5
//   ...
//
// This is exactly what the hardware's 128-byte swizzle does to an address
// (XOR bits [4,7) with bits [7,10): CUTLASS's Swizzle<3,4,3>), provided every
// panel starts on a 1024-byte boundary — then one layout serves both operand
// orders below, and both the cp.async writes and the wgmma reads are free of
// bank conflicts (8 consecutive rows' chunk c land in 8 different bank groups).
template <int kRows, int kCols> struct Sw128Tile {
  static_assert(kRows % 8 == 0, "whole 8-row swizzle atoms (1024 bytes)");
  static_assert(kCols % 64 == 0, "whole 64-element (128-byte) panels");
  static constexpr int kPanelCols = 64;
  static constexpr int kPanels = kCols / kPanelCols;
  static constexpr int kRowBytes = 128;                 // one row of one panel
  static constexpr int kPanelBytes = kRows * kRowBytes;  // multiple of 1024
  static constexpr int kBytes = kPanels * kPanelBytes;

  static CONVLAB_HOST_DEVICE constexpr int byte_offset(int row, int col) {
    return (col / kPanelCols) * kPanelBytes + row * kRowBytes + 16 * (((col % kPanelCols) / 8) ^ (row % 8)) +
           2 * (col % 8);
  }
};

// ---- the matrix descriptor (§9.7.15.5.1.2.2) ------------------------------------------
//
//   bits  0-13  start address        (bytes >> 4; shared-state-space address)
//   bits 16-29  leading byte offset  (bytes >> 4)
//   bits 32-45  stride byte offset   (bytes >> 4)
//   bits 49-51  base offset          (0: every swizzle pattern starts 1024-aligned)
//   bits 62-63  swizzle mode         (0 none, 1 = 128 B, 2 = 64 B, 3 = 32 B)
//
// each field holding (x & 0x3FFFF) >> 4. Because the start address is the
// lowest field, adding (bytes >> 4) to a descriptor moves its start (as long
// as the address stays below 256 KB, which shared memory always does).
enum class WgmmaSwizzle : uint32_t { none = 0, b128 = 1, b64 = 2, b32 = 3 };

CONVLAB_HOST_DEVICE constexpr uint64_t wgmma_encode(uint32_t bytes) { return (bytes & 0x3FFFFu) >> 4; }

CONVLAB_HOST_DEVICE constexpr uint64_t wgmma_descriptor(uint32_t start_address, uint32_t leading_byte_offset,
                                                        uint32_t stride_byte_offset, WgmmaSwizzle swizzle) {
  return wgmma_encode(start_address) | wgmma_encode(leading_byte_offset) << 16 |
         wgmma_encode(stride_byte_offset) << 32 | uint64_t(swizzle) << 62;
}

// The fields back, in bytes (what the host model below reads).
struct WgmmaDescriptorFields {
  uint32_t start_address, leading_byte_offset, stride_byte_offset, base_offset;
  WgmmaSwizzle swizzle;
};
CONVLAB_HOST_DEVICE constexpr WgmmaDescriptorFields wgmma_decode(uint64_t desc) {
  return {uint32_t(desc & 0x3FFF) << 4, uint32_t((desc >> 16) & 0x3FFF) << 4, uint32_t((desc >> 32) & 0x3FFF) << 4,
          uint32_t((desc >> 49) & 0x7), WgmmaSwizzle(uint32_t(desc >> 62) & 0x3)};
}

// ---- the two operand orders, for one k16 step ---------------------------------------
//
// K-MAJOR (the default, transpose flag 0): the operand's 16 k values of a
// row are contiguous. A = Q [query][d] and B = K [key][d] of S = Q·Kᵀ are both
// stored like this — the B operand of wgmma is "column-major K x N", i.e. N
// rows of K contiguous values, which is K's natural [key][d] layout. In the
// canonical 128-byte-swizzled K-major layout (T = 8 elements = 16 bytes)
//
//   ((8, m), (T, 2)) : ((8T, SBO), (1, T))          (elements; then the swizzle)
//
// the 8 rows of an atom are 128 bytes apart, groups of 8 rows SBO apart, and
// the 16 k values are two neighbouring chunks. The leading byte offset is
// unused for swizzled K-major layouts ("assumed 1"). For our tile: SBO = 1024;
// the k16 step s of a 64-wide panel starts 32·s bytes into the row — the
// hardware applies the XOR to the full address, so moving the start by 32
// bytes inside a 1024-aligned atom selects logical chunks 2s, 2s+1 of every row.
template <class Tile>
CONVLAB_HOST_DEVICE constexpr uint64_t k_major_descriptor(uint32_t tile_address, int row0, int k0) {
  // row0: first of the 64 (A) or N (B) rows, a multiple of 8; k0: first k, a multiple of 16.
  return wgmma_descriptor(tile_address + (k0 / Tile::kPanelCols) * Tile::kPanelBytes + row0 * Tile::kRowBytes +
                              2 * (k0 % Tile::kPanelCols),
                          16, 8 * Tile::kRowBytes, WgmmaSwizzle::b128);
}

// The same descriptor moved to k-step k0 (a multiple of 16) of the same rows:
// k_major_descriptor(tile, row0, k0) == wgmma_advance(k_major_descriptor(tile,
// row0, 0), k_major_step_bytes<Tile>(k0)). Kernels build the k0 = 0 descriptor
// once and add a compile-time constant per step.
CONVLAB_HOST_DEVICE constexpr uint64_t wgmma_advance(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }
template <class Tile> CONVLAB_HOST_DEVICE constexpr uint32_t k_major_step_bytes(int k0) {
  return (k0 / Tile::kPanelCols) * Tile::kPanelBytes + 2 * (k0 % Tile::kPanelCols);
}

// MN-MAJOR (transpose flag 1, allowed for f16/bf16 from shared memory): the
// operand's N values of a k row are contiguous. B = V [key][d] of O = P·V is
// K x N = keys x d with d contiguous: the same tile layout as K, read the other
// way. Canonical 128-byte-swizzled MN-major layout:
//
//   ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO))
//
// 64 consecutive n (8 chunks) form one 128-byte line; the next 64 n are LBO
// bytes further (our next panel: LBO = kRows·128); the 8 k rows of an atom
// are 128 bytes apart and the next 8 k rows SBO = 1024 bytes further. The k16
// step starting at key k0 (a multiple of 16) starts at row k0.
template <class Tile> CONVLAB_HOST_DEVICE constexpr uint64_t mn_major_descriptor(uint32_t tile_address, int k0) {
  return wgmma_descriptor(tile_address + k0 * Tile::kRowBytes, Tile::kPanelBytes, 8 * Tile::kRowBytes,
                          WgmmaSwizzle::b128);
}
// Likewise: mn_major_descriptor(tile, k0)
//        == wgmma_advance(mn_major_descriptor(tile, 0), mn_major_step_bytes<Tile>(k0)).
template <class Tile> CONVLAB_HOST_DEVICE constexpr uint32_t mn_major_step_bytes(int k0) {
  return k0 * Tile::kRowBytes;
}

// ---- a model of the hardware's read, for host tests -----------------------------------
//
// The byte address at which wgmma finds element (mn, k) of one k16 step of an
// operand (mn = row of A or column of B, k in [0, 16)), given its descriptor,
// transcribed from the canonical layouts above (§9.7.15.5.1.2.1.3) for 16-bit
// elements and the 128-byte swizzle with base offset 0. The tests compare it
// with Sw128Tile::byte_offset: if the two agree, what cp.async writes is what
// wgmma reads — as far as this reading of the PTX ISA is right, which only the
// GPU test (gpu/lib/wgmma_probe.cu) can confirm.
CONVLAB_HOST_DEVICE constexpr uint32_t sw128_address(uint32_t linear) { return linear ^ (((linear >> 7) & 7) << 4); }

CONVLAB_HOST_DEVICE constexpr uint32_t wgmma_k_major_sw128_address(uint64_t desc, int mn, int k) {
  const WgmmaDescriptorFields f = wgmma_decode(desc);
  return sw128_address(f.start_address + 128 * (mn % 8) + f.stride_byte_offset * (mn / 8) + 2 * (k % 8) +
                       16 * (k / 8));
}

CONVLAB_HOST_DEVICE constexpr uint32_t wgmma_mn_major_sw128_address(uint64_t desc, int k, int mn) {
  const WgmmaDescriptorFields f = wgmma_decode(desc);
  return sw128_address(f.start_address + 2 * (mn % 8) + 16 * ((mn / 8) % 8) + f.leading_byte_offset * (mn / 64) +
                       128 * (k % 8) + f.stride_byte_offset * (k / 8));
}

// ============================================================================
// 2. PTX wrappers (CUDA only; real only in code compiled for sm_90a)
// ============================================================================
#if defined(__CUDACC__)

// wgmma and setmaxnreg are "arch-specific" PTX: they exist for sm_90a, not for
// sm_90 (nor any other target). Device passes for other targets compile these
// wrappers as traps, so a file using them builds everywhere. What keeps
// kernels away from the traps is a host-side check:
// gpu::wgmma_unavailable_reason() (wgmma_probe.hpp) launches a one-thread
// kernel that reports kWgmmaCompiled (only gpu/lib/wgmma_probe.cu reads
// that constant), and callers ask it before launching: rung 09d's run() throws
// Unsupported when the reason is not empty. CMakeLists.txt compiles files
// whose name contains "wgmma" (or "cluster") for 90a when CONVLAB_CUDA_ARCHS lists 90
// explicitly.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CONVLAB_WGMMA_ASM 1
#else
#define CONVLAB_WGMMA_ASM 0
#endif
// True in the device pass that compiles wgmma (false in the host pass too).
inline constexpr bool kWgmmaCompiled = CONVLAB_WGMMA_ASM;

// Orders this warp's earlier register writes (accumulators, A fragments)
// before the warpgroup's next wgmma.mma_async reads or writes them.
__device__ __forceinline__ void wgmma_fence() {
#if CONVLAB_WGMMA_ASM
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

// Closes the group of wgmma.mma_async issued since the previous commit.
__device__ __forceinline__ void wgmma_commit_group() {
#if CONVLAB_WGMMA_ASM
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}

// Waits until at most kPending committed groups are still in flight: groups
// complete in order, so wait<1> after committing X then Y waits for X.
template <int kPending> __device__ __forceinline__ void wgmma_wait_group() {
#if CONVLAB_WGMMA_ASM
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#else
  __trap();
#endif
}

// Shared memory written through the ordinary ("generic") proxy — st.shared,
// cp.async — becomes visible to the async proxy that wgmma reads through only
// after this fence (by the writing thread, before the barrier that publishes it).
__device__ __forceinline__ void fence_proxy_async_shared() {
#if CONVLAB_WGMMA_ASM
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#else
  __trap();
#endif
}

// The compiler sees a wgmma as an ordinary instruction that reads and writes
// its registers at issue; the hardware writes the accumulators (and reads A)
// until wait_group returns. An empty asm that "modifies" a register pins it:
// after a wait, every later use of the register depends on the fence, so no
// use is hoisted above the wait; and a register fenced after the wait stays
// allocated (not reused for a temporary) while the wgmma may still read it.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void fence_operand(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
template <class T, int N> __device__ __forceinline__ void fence_operands(T (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence_operand(r[i]);
}
template <class T, int M, int N> __device__ __forceinline__ void fence_operands(T (&r)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i) fence_operands(r[i]);
}

// ---- the wgmma.mma_async instructions -----------------------------------------------------
//
// Inline asm needs its operands listed one by one: an m64nNk16 wgmma has N/2
// fp32 accumulators per thread, so the register list is 32 or 64 entries
// long. The lists are written once, as macros (the asm text and its "+f"
// operands), and each instruction below is one macro taking the element type's
// PTX name ("f16" or "bf16"). They are #undef'd at the end of this header.
#define CONVLAB_WGMMA_D32_TEXT \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define CONVLAB_WGMMA_D64_TEXT \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define CONVLAB_WGMMA_D32_OPERANDS(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
// The same 32 accumulators as outputs only ("=&f", early clobber: no input shares them).
#define CONVLAB_WGMMA_D32_OUTPUTS(d) \
  "=&f"(d[0]), "=&f"(d[1]), "=&f"(d[2]), "=&f"(d[3]), "=&f"(d[4]), "=&f"(d[5]), "=&f"(d[6]), "=&f"(d[7]), \
  "=&f"(d[8]), "=&f"(d[9]), "=&f"(d[10]), "=&f"(d[11]), "=&f"(d[12]), "=&f"(d[13]), "=&f"(d[14]), "=&f"(d[15]), \
  "=&f"(d[16]), "=&f"(d[17]), "=&f"(d[18]), "=&f"(d[19]), "=&f"(d[20]), "=&f"(d[21]), "=&f"(d[22]), "=&f"(d[23]), \
  "=&f"(d[24]), "=&f"(d[25]), "=&f"(d[26]), "=&f"(d[27]), "=&f"(d[28]), "=&f"(d[29]), "=&f"(d[30]), "=&f"(d[31])
#define CONVLAB_WGMMA_D64_OPERANDS(d) \
  CONVLAB_WGMMA_D32_OPERANDS(d), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

#define CONVLAB_WGMMA_D128_TEXT \
  "{" "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define CONVLAB_WGMMA_D128_OPERANDS(d) \
  CONVLAB_WGMMA_D64_OPERANDS(d), \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
  "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

// D[64 x 256] (+)= A · B, A from shared memory K-major (descriptor %128), B
// from shared memory MN-major (descriptor %129, transpose flag 1): the GEMM
// operands of lesson 03's wgmma rungs (A [M][K] and B [K][N], both row-major).
#define CONVLAB_WGMMA_SS_N256_MN_B(TYPE)                                                                \
  asm volatile("{\n.reg .pred accumulate;\n"                                                            \
               "setp.ne.b32 accumulate, %130, 0;\n"                                                     \
               "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " " CONVLAB_WGMMA_D128_TEXT \
               ", %128, %129, accumulate, 1, 1, 0, 1;\n}\n"                                            \
               : CONVLAB_WGMMA_D128_OPERANDS(d)                                                          \
               : "l"(a_desc), "l"(b_desc), "r"(int(accumulate)))
// D[64 x N] (+)= A · B, A K-major and B MN-major from shared memory, N = 128
// and N = 64 (the FFN's expand product: X [rows][C] times U [C][hidden]).
#define CONVLAB_WGMMA_SS_N128_MN_B(TYPE)                                                               \
  asm volatile("{\n.reg .pred accumulate;\n"                                                           \
               "setp.ne.b32 accumulate, %66, 0;\n"                                                     \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " " CONVLAB_WGMMA_D64_TEXT \
               ", %64, %65, accumulate, 1, 1, 0, 1;\n}\n"                                            \
               : CONVLAB_WGMMA_D64_OPERANDS(d)                                                          \
               : "l"(a_desc), "l"(b_desc), "r"(int(accumulate)))
// D[64 x 64] = A · B (scale-d false: D's old values are not read), A K-major and B
// MN-major from shared memory; D listed as outputs only.
#define CONVLAB_WGMMA_SS_N64_MN_B_OVERWRITE(TYPE)                                                      \
  asm volatile("{\n.reg .pred accumulate;\n"                                                           \
               "setp.ne.b32 accumulate, 0, 0;\n"                                                       \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " " CONVLAB_WGMMA_D32_TEXT  \
               ", %32, %33, accumulate, 1, 1, 0, 1;\n}\n"                                            \
               : CONVLAB_WGMMA_D32_OUTPUTS(d)                                                           \
               : "l"(a_desc), "l"(b_desc))
#define CONVLAB_WGMMA_SS_N64_MN_B(TYPE)                                                                \
  asm volatile("{\n.reg .pred accumulate;\n"                                                           \
               "setp.ne.b32 accumulate, %34, 0;\n"                                                     \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " " CONVLAB_WGMMA_D32_TEXT  \
               ", %32, %33, accumulate, 1, 1, 0, 1;\n}\n"                                            \
               : CONVLAB_WGMMA_D32_OPERANDS(d)                                                          \
               : "l"(a_desc), "l"(b_desc), "r"(int(accumulate)))
// D[64 x 256] (+)= A · B, A from four registers, B MN-major from shared memory.
#define CONVLAB_WGMMA_RS_N256(TYPE)                                                                    \
  asm volatile("{\n.reg .pred accumulate;\n"                                                           \
               "setp.ne.b32 accumulate, %133, 0;\n"                                                    \
               "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE " " CONVLAB_WGMMA_D128_TEXT \
               ", {%128, %129, %130, %131}, %132, accumulate, 1, 1, 1;\n}\n"                          \
               : CONVLAB_WGMMA_D128_OPERANDS(d)                                                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(int(accumulate)))
// D[64 x 128] (+)= A · B, A and B from shared memory (descriptors %64, %65);
// scale-d = accumulate (%66), no negation, both operands K-major (tnspA = tnspB = 0).
#define CONVLAB_WGMMA_SS_N128(TYPE)                                                                    \
  asm volatile("{\n.reg .pred accumulate;\n"                                                           \
               "setp.ne.b32 accumulate, %66, 0;\n"                                                     \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " " CONVLAB_WGMMA_D64_TEXT \
               ", %64, %65, accumulate, 1, 1, 0, 0;\n}\n"                                             \
               : CONVLAB_WGMMA_D64_OPERANDS(d)                                                          \
               : "l"(a_desc), "l"(b_desc), "r"(int(accumulate)))
// D[64 x N] (+)= A · B, A from four registers, B from shared memory MN-major
// (tnspB = 1), N = 128 and N = 64.
#define CONVLAB_WGMMA_RS_N128(TYPE)                                                                    \
  asm volatile("{\n.reg .pred accumulate;\n"                                                           \
               "setp.ne.b32 accumulate, %69, 0;\n"                                                     \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " " CONVLAB_WGMMA_D64_TEXT \
               ", {%64, %65, %66, %67}, %68, accumulate, 1, 1, 1;\n}\n"                               \
               : CONVLAB_WGMMA_D64_OPERANDS(d)                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(int(accumulate)))
#define CONVLAB_WGMMA_RS_N64(TYPE)                                                                     \
  asm volatile("{\n.reg .pred accumulate;\n"                                                           \
               "setp.ne.b32 accumulate, %37, 0;\n"                                                     \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " " CONVLAB_WGMMA_D32_TEXT  \
               ", {%32, %33, %34, %35}, %36, accumulate, 1, 1, 1;\n}\n"                               \
               : CONVLAB_WGMMA_D32_OPERANDS(d)                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(int(accumulate)))

// D[64 x 128] (+)= A[64 x 16] · B[16 x 128], A and B from shared memory, both
// K-major (k_major_descriptor). accumulate = false: D = A·B (scale-d = 0).
// d: fragment layout wgmma_d_coord.
template <class Element>
__device__ __forceinline__ void wgmma_m64n128k16_ss(float (&d)[64], uint64_t a_desc, uint64_t b_desc,
                                                    bool accumulate) {
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>,
                "wgmma: f16 or bf16 inputs");
#if CONVLAB_WGMMA_ASM
  if constexpr (std::is_same_v<Element, __half>)
    CONVLAB_WGMMA_SS_N128("f16");
  else
    CONVLAB_WGMMA_SS_N128("bf16");
#else
  __trap();
#endif
}

// D[64 x N] (+)= A[64 x 16] · B[16 x N], N = 64, 128 or 256: A from registers
// (wgmma_a_coord), B from shared memory MN-major (mn_major_descriptor,
// transpose flag 1).
template <class Element, int N>
__device__ __forceinline__ void wgmma_m64nNk16_rs_mn_major_b(float (&d)[N / 2], const uint32_t (&a)[4],
                                                             uint64_t b_desc, bool accumulate) {
  static_assert(N == 64 || N == 128 || N == 256, "instantiated for N = 64, 128 and 256 only");
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>,
                "wgmma: f16 or bf16 inputs");
#if CONVLAB_WGMMA_ASM
  if constexpr (N == 256 && std::is_same_v<Element, __half>)
    CONVLAB_WGMMA_RS_N256("f16");
  else if constexpr (N == 256)
    CONVLAB_WGMMA_RS_N256("bf16");
  else if constexpr (N == 128 && std::is_same_v<Element, __half>)
    CONVLAB_WGMMA_RS_N128("f16");
  else if constexpr (N == 128)
    CONVLAB_WGMMA_RS_N128("bf16");
  else if constexpr (std::is_same_v<Element, __half>)
    CONVLAB_WGMMA_RS_N64("f16");
  else
    CONVLAB_WGMMA_RS_N64("bf16");
#else
  __trap();
#endif
}

// D[64 x 256] (+)= A[64 x 16] · B[16 x 256], both from shared memory: A
// K-major (k_major_descriptor), B MN-major (mn_major_descriptor, transpose
// flag 1; its four 64-column panels LBO apart). accumulate = false: D = A·B.
// d: fragment layout wgmma_d_coord (N = 256: 128 registers).
template <class Element>
__device__ __forceinline__ void wgmma_m64n256k16_ss_mn_major_b(float (&d)[128], uint64_t a_desc, uint64_t b_desc,
                                                               bool accumulate) {
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>,
                "wgmma: f16 or bf16 inputs");
#if CONVLAB_WGMMA_ASM
  if constexpr (std::is_same_v<Element, __half>)
    CONVLAB_WGMMA_SS_N256_MN_B("f16");
  else
    CONVLAB_WGMMA_SS_N256_MN_B("bf16");
#else
  __trap();
#endif
}

// D[64 x N] (+)= A[64 x 16] · B[16 x N], N = 64 or 128, both from shared
// memory: A K-major (k_major_descriptor), B MN-major (mn_major_descriptor).
template <class Element, int N>
__device__ __forceinline__ void wgmma_m64nNk16_ss_mn_major_b(float (&d)[N / 2], uint64_t a_desc, uint64_t b_desc,
                                                             bool accumulate) {
  static_assert(N == 64 || N == 128, "instantiated for N = 64 and 128 only");
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>,
                "wgmma: f16 or bf16 inputs");
#if CONVLAB_WGMMA_ASM
  if constexpr (N == 128 && std::is_same_v<Element, __half>)
    CONVLAB_WGMMA_SS_N128_MN_B("f16");
  else if constexpr (N == 128)
    CONVLAB_WGMMA_SS_N128_MN_B("bf16");
  else if constexpr (std::is_same_v<Element, __half>)
    CONVLAB_WGMMA_SS_N64_MN_B("f16");
  else
    CONVLAB_WGMMA_SS_N64_MN_B("bf16");
#else
  __trap();
#endif
}

// D[64 x 64] = A[64 x 16] · B[16 x 64], A K-major and B MN-major from shared memory,
// the first k-step of a product whose accumulators held something else before: the
// compiler sees d written, not read, so the old values die at their last use instead
// of staying allocated across a loop (with "+f" and accumulate = false they would).
template <class Element>
__device__ __forceinline__ void wgmma_m64n64k16_ss_mn_major_b_overwrite(float (&d)[32], uint64_t a_desc,
                                                                        uint64_t b_desc) {
  static_assert(std::is_same_v<Element, __half> || std::is_same_v<Element, __nv_bfloat16>,
                "wgmma: f16 or bf16 inputs");
#if CONVLAB_WGMMA_ASM
  if constexpr (std::is_same_v<Element, __half>)
    CONVLAB_WGMMA_SS_N64_MN_B_OVERWRITE("f16");
  else
    CONVLAB_WGMMA_SS_N64_MN_B_OVERWRITE("bf16");
#else
  __trap();
#endif
}

#undef CONVLAB_WGMMA_RS_N64
#undef CONVLAB_WGMMA_SS_N64_MN_B_OVERWRITE
#undef CONVLAB_WGMMA_D32_OUTPUTS
#undef CONVLAB_WGMMA_RS_N128
#undef CONVLAB_WGMMA_SS_N128
#undef CONVLAB_WGMMA_SS_N256_MN_B
#undef CONVLAB_WGMMA_SS_N128_MN_B
#undef CONVLAB_WGMMA_SS_N64_MN_B
#undef CONVLAB_WGMMA_RS_N256
#undef CONVLAB_WGMMA_D128_OPERANDS
#undef CONVLAB_WGMMA_D128_TEXT
#undef CONVLAB_WGMMA_D64_OPERANDS
#undef CONVLAB_WGMMA_D32_OPERANDS
#undef CONVLAB_WGMMA_D64_TEXT
#undef CONVLAB_WGMMA_D32_TEXT
#undef CONVLAB_WGMMA_ASM
#endif  // __CUDACC__

}  // namespace convlab::gpu
