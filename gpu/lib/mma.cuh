// gpu/lib/mma.cuh — warp-level tensor-core building blocks (sm_80 and later):
// mma.sync m16n8k16, ldmatrix, cp.async, and the index maps that go with them.
//
// Two halves:
//
//   1. Index maps (plain constexpr functions, host and device). Which lane of a
//      warp holds which element of an mma fragment, which lane hands ldmatrix
//      which row address, and the XOR swizzle of a shared-memory tile. They are
//      the part that is easy to get wrong, so they are written once, here, and
//      checked on the host by tests/mma_layout_test.cpp (which includes this
//      file with an ordinary C++ compiler: the PTX half below is CUDA-only).
//   2. Inline-PTX wrappers, one small function per instruction, each with the
//      layout it produces or consumes.
//
// Vocabulary, for lane = threadIdx.x % 32 of a warp:
//   group  g = lane / 4   (0..7)   "groupID" in the PTX ISA
//   thread t = lane % 4   (0..3)   "threadID_in_group"
// A 32-bit register holds two 16-bit elements; the element with the lower
// column (or k) index sits in the low half.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// The index maps run on the host (tests) and on the device (kernels). This one
// qualifier macro exists because __host__ __device__ is not C++ and a template
// cannot stand in for a declaration specifier.
#if defined(__CUDACC__)
#define CONVLAB_HOST_DEVICE __host__ __device__
#else
#define CONVLAB_HOST_DEVICE
#endif

namespace convlab::gpu {

// ============================================================================
// 1. Index maps
// ============================================================================

struct MatrixCoord {
  int row, col;
  constexpr bool operator==(const MatrixCoord&) const = default;
};

// ---- mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 ---------
//
//   D[16x8] (fp32) += A[16x16] (row) · B[16x8] (col)      per warp, per instruction
//
// A fragment: 4 registers a0..a3, 2 elements each (8 per lane):
//
//            k: 0 1 | 2 3 | 4 5 | 6 7 || 8 9 | ... | 14 15
//   rows 0-7 :  a0 of lanes 4g+t, t = column pair (k = 2t, 2t+1)  || a2 (k = 8+2t, 9+2t)
//   rows 8-15:  a1                                                 || a3
//
//   register r, half h  ->  row = g + 8·(r & 1), k = 2t + h + 8·(r >> 1)
CONVLAB_HOST_DEVICE constexpr MatrixCoord mma_a_coord(int lane, int reg, int half) {
  return {lane / 4 + 8 * (reg & 1), 2 * (lane % 4) + half + 8 * (reg >> 1)};
}

// B fragment: 2 registers b0, b1 (4 elements per lane); column n = g, and
//   register r, half h  ->  k = 2t + h + 8·r, n = g            (returned as {k, n})
CONVLAB_HOST_DEVICE constexpr MatrixCoord mma_b_coord(int lane, int reg, int half) {
  return {2 * (lane % 4) + half + 8 * reg, lane / 4};
}

// C/D fragment: 4 fp32 registers c0..c3:
//   c0, c1: row g,     columns 2t, 2t+1
//   c2, c3: row g + 8, columns 2t, 2t+1
//   index i  ->  row = g + 8·(i >> 1), n = 2t + (i & 1)
CONVLAB_HOST_DEVICE constexpr MatrixCoord mma_c_coord(int lane, int i) { return {lane / 4 + 8 * (i >> 1), 2 * (lane % 4) + (i & 1)}; }

// ---- ldmatrix.sync.aligned.m8n8.{x2,x4}[.trans].shared.b16 -------------------
//
// Loads four (.x4) or two (.x2) 8x8 matrices of 16-bit elements. Lane 8·m + r
// supplies the shared address of row r of matrix m (8 contiguous elements, 16
// bytes, 16-byte aligned). Every lane receives one register per matrix:
// register m of lane 4·r + w holds
//   without .trans: row r, elements 2w and 2w+1 of matrix m
//   with    .trans: elements (2w, r) and (2w+1, r) of matrix m — the transpose.
//
// convlab loads a 16x16 tile with one x4, matrices ordered
//   m0 = rows 0-7 / cols 0-7,  m1 = rows 8-15 / cols 0-7,
//   m2 = rows 0-7 / cols 8-15, m3 = rows 8-15 / cols 8-15,
// so lane l supplies the address of tile row (l % 16), starting at column 8·(l / 16).
//
// Without .trans on a row-major A[m][k] tile, register m of each lane is
// exactly mma fragment register a_m (see mma_a_coord).
// With .trans on a row-major B[k][n] tile (16 k x 16 n), registers 0, 1 are
// b0, b1 for the n columns 0-7 and registers 2, 3 are b0, b1 for columns 8-15
// (see mma_b_coord): the transpose is what turns "B stored k-major" into the
// "col" operand the mma wants.
CONVLAB_HOST_DEVICE constexpr MatrixCoord ldmatrix_x4_row_address(int lane) { return {lane % 16, 8 * (lane / 16)}; }

// The instruction itself, for any address map (.x1, .x2 or .x4, without
// .trans): register `reg`, half `half`, of `lane` is element
// 2·(lane % 4) + half of the 8-element row whose address lane 8·reg + lane / 4
// supplied. An .x2 reads the addresses of lanes 0-15 only, an .x1 of 0-7.
struct LdmatrixSource {
  int lane;     // the lane that supplied the row's address
  int element;  // 0..7 within that row
  constexpr bool operator==(const LdmatrixSource&) const = default;
};
CONVLAB_HOST_DEVICE constexpr LdmatrixSource ldmatrix_source(int lane, int reg, int half) {
  return {8 * reg + lane / 4, 2 * (lane % 4) + half};
}

// Where (in the 16x16 tile) the element in register `reg`, half `half`, of
// `lane` came from, given the addresses above. The model of the instruction
// the host test checks the mma maps against.
CONVLAB_HOST_DEVICE constexpr MatrixCoord ldmatrix_x4_source(int lane, int reg, int half, bool trans) {
  const int r = lane / 4, w = lane % 4;                  // destination row r, word w of matrix `reg`
  const int src_row = trans ? 2 * w + half : r;          // row within the 8x8 matrix it came from
  const int src_col = trans ? r : 2 * w + half;          // column within that matrix
  const MatrixCoord row_start = ldmatrix_x4_row_address(8 * reg + src_row);  // that row's supplier
  return {row_start.row, row_start.col + src_col};
}

// ---- the XOR swizzle of a shared-memory tile -----------------------------------
//
// A tile of kRows x (kRowChunks · 16 bytes), row-major, is stored in 16-byte
// chunks. ldmatrix reads 8 rows at the same logical chunk column; with a
// plain layout whose rows are a multiple of 128 bytes long, those 8 chunks sit
// in the same 4 banks (an 8-way conflict). Shared memory has 32 banks of 4
// bytes = 8 "bank groups" of 16 bytes, so we permute the chunks inside every
// 128-byte line by XOR-ing the chunk's position in the line with a 3-bit
// phase taken from higher address bits:
//
//   linear chunk   L = row · kRowChunks + chunk
//   phase          p = (L >> S) & 7,      S = log2(max(8, kRowChunks))
//   stored at      L ^ p                  (only the low 3 bits change: same line)
//
// For rows of ≥ 128 bytes the phase is row % 8: eight consecutive rows read
// eight different bank groups. For 64-byte rows (kRowChunks = 4) two rows
// share a line and the phase is (row / 2) % 8; rows r..r+7 (r even) then hit
// bank group (4·(r%2) + chunk) ^ ((r/2) % 8), again all different. It is CUTLASS's
// Swizzle<3,4,3> generalised to wide rows. XOR with a value that does not
// depend on the low bits is its own inverse: a bijection on every line.
template <int kRowChunks> struct ChunkSwizzle {
  static_assert(kRowChunks >= 4 && (kRowChunks & (kRowChunks - 1)) == 0,
                "rows of a power of two of 16-byte chunks, at least 64 bytes (4 rows of fewer would share a phase)");
  static constexpr int kShift = kRowChunks >= 8 ? __builtin_ctz(kRowChunks) : 3;

  // Stored chunk index (in 16-byte units from the tile's start) of (row, chunk).
  static CONVLAB_HOST_DEVICE constexpr int chunk_index(int row, int chunk) {
    const int linear = row * kRowChunks + chunk;
    return linear ^ ((linear >> kShift) & 7);
  }
  // The same, in bytes.
  static CONVLAB_HOST_DEVICE constexpr int byte_offset(int row, int chunk) { return 16 * chunk_index(row, chunk); }
  // Rows whose phase pattern repeats: moving by a multiple of this many rows
  // moves the stored offset by exactly rows · row bytes (no re-swizzle needed).
  static constexpr int kPhasePeriodRows = kRowChunks >= 8 ? 8 : 8 * 8 / kRowChunks;
};

// ---- block rasterisation: tiles in groups of kGroupM block rows -----------------
//
// Blocks are launched in order of blockIdx.x. Walking the C tiles row by row,
// the blocks resident at one moment would need a few rows of A but all of B;
// walking them in column-major order inside bands of kGroupM tile rows makes
// them share both, so more of A and B is found in L2:
//
//   tile order for 4 x 3 tiles and kGroupM = 2:   0 2 4
//                                                  1 3 5
//                                                  6 8 10
//                                                  7 9 11
struct TileCoord {
  int m, n;  // tile row, tile column
  constexpr bool operator==(const TileCoord&) const = default;
};
CONVLAB_HOST_DEVICE constexpr TileCoord grouped_tile(int index, int tiles_m, int tiles_n, int group_m) {
  const int tiles_per_group = group_m * tiles_n;
  const int group = index / tiles_per_group;
  const int first_m = group * group_m;
  const int rows_in_group = tiles_m - first_m < group_m ? tiles_m - first_m : group_m;  // the last band may be short
  const int in_group = index % tiles_per_group;
  return {first_m + in_group % rows_in_group, in_group / rows_in_group};
}

// ============================================================================
// 2. Inline-PTX wrappers (CUDA only)
// ============================================================================
#if defined(__CUDACC__)

// The shared-state-space address of a pointer into shared memory (what
// ldmatrix and cp.async take).
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// D += A · B for one m16n8k16 tile, fp32 accumulators (C and D the same registers).
// Fragments as in mma_a_coord / mma_b_coord / mma_c_coord above; Element is
// __half or __nv_bfloat16, the type of both A and B.
template <class Element>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<Element, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    static_assert(std::is_same_v<Element, __nv_bfloat16>, "mma_m16n8k16: f16 or bf16 inputs");
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// D += A · B for one m16n8k8 tile (A: a0 rows g, a1 rows g + 8, k = 2t, 2t + 1; B: one
// register, k = 2t, 2t + 1 of column g), fp32 accumulators; Element as for m16n8k16.
template <class Element>
__device__ __forceinline__ void mma_m16n8k8(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t b) {
  if constexpr (std::is_same_v<Element, __half>) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(b));
  } else {
    static_assert(std::is_same_v<Element, __nv_bfloat16>, "mma_m16n8k8: f16 or bf16 inputs");
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(b));
  }
}

// One 8x8 b16 matrix transposed across the warp: lane 4·g + t holds elements (g, 2t) and
// (g, 2t + 1) and gets (2t, g) and (2t + 1, g). An accumulator's rows, packed to 16 bits,
// become the B operand of an mma that contracts over them.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t v) {
  uint32_t r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(r) : "r"(v));
  return r;
}

// Four 8x8 b16 matrices from shared memory; lane l passes the address of the
// row it supplies (ldmatrix_x4_row_address). Register m = matrix m, row
// lane / 4, elements 2·(lane % 4) and +1. The "memory" clobber keeps the
// compiler from moving ordinary shared-memory stores past it.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row_address)
               : "memory");
}

// The same, each matrix transposed on the way: register m of lane 4·r + w
// holds elements (2w, r) and (2w+1, r) of matrix m.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row_address)
               : "memory");
}

// Two 8x8 b16 matrices: lanes 0-15 pass row addresses (lane 8·m + r: row r
// of matrix m; the addresses of lanes 16-31 are not read). Register m =
// matrix m, row lane / 4, elements 2·(lane % 4) and +1 (ldmatrix_source).
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], uint32_t row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(row_address)
               : "memory");
}

// One 16-byte asynchronous copy global -> shared that bypasses L1 (.cg).
// Copies src_bytes (16 or 0) and fills the rest of the 16 bytes with zeros:
// with 0 nothing is read, which is how out-of-range chunks become zeros.
// Both addresses must be 16-byte aligned.
__device__ __forceinline__ void cp_async_16(uint32_t shared_dst, const void* global_src, bool in_range) {
  const int src_bytes = in_range ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_dst), "l"(global_src),
               "r"(src_bytes)
               : "memory");
}

// A plain 16-byte store to shared memory at a shared-state-space address
// (used where a tile is filled through registers instead of by cp.async).
__device__ __forceinline__ void st_shared_16(uint32_t shared_dst, const uint32_t (&words)[4]) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(shared_dst), "r"(words[0]), "r"(words[1]),
               "r"(words[2]), "r"(words[3])
               : "memory");
}

// Closes the group of cp.async issued by this thread since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Waits until at most `kPending` of this thread's committed groups are still
// in flight. Other threads' copies become visible only after a barrier.
template <int kPending> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Two fp32 values rounded to a packed pair of Element (low half = first).
template <class Element> __device__ __forceinline__ uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<Element, __half>) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    static_assert(std::is_same_v<Element, __nv_bfloat16>, "pack_pair: f16 or bf16");
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

#endif  // __CUDACC__

}  // namespace convlab::gpu
