// gpu/lib/hopper/wgmma_gemm_layout.hpp — the tunables and shared-memory geometry of
// lesson 03's wgmma + TMA GEMM (gpu/lib/hopper/wgmma_gemm.cuh), in plain C++ so that
// tests/hopper_lib_test.cpp can check on the host that what TMA writes is
// what the wgmma descriptors read, slot by slot and k step by k step.
#pragma once

#include <cstdint>
#include <string>

#include "ops/gemm.hpp"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"

namespace convlab::wgmma_gemm {

// ---- tunables ---------------------------------------------------------------------
constexpr int kBlockM = 128;     // C rows per tile: two consumer warpgroups of 64
constexpr int kBlockN = 256;     // C columns per tile: one m64n256 accumulator per warpgroup
constexpr int kBlockK = 64;      // k per slot: one 128-byte swizzle row of f16/bf16
constexpr int kStages = 4;       // slots in the ring
constexpr int kGroupM = 8;       // tile rows per rasterisation band (L2 reuse)
constexpr int kProducerRegs = 40;    // setmaxnreg of the producer warpgroup (03q, 03r)
constexpr int kConsumerRegs = 232;   // setmaxnreg of each consumer warpgroup

// Fixed by the hardware.
constexpr int kWgmmaM = 64, kWgmmaK = 16;
constexpr int kElemBytes = 2;
constexpr int kAlignElems = 16 / kElemBytes;  // TMA strides: multiples of 16 bytes

// Derived.
constexpr int kConsumers = kBlockM / kWgmmaM;  // 2
constexpr int kConsumerWarps = 4 * kConsumers;  // each consumer warp releases a slot once
constexpr int kAccRegs = kBlockN / 2;           // fp32 accumulators per consumer thread: 128
constexpr int kKSteps = kBlockK / kWgmmaK;      // wgmma per slot and warpgroup: 4
using ATile = gpu::Sw128Tile<kBlockM, kBlockK>;  // [m][k]
using BTile = gpu::Sw128Tile<kBlockK, kBlockN>;  // [k][n]
constexpr int kStageBytes = ATile::kBytes + BTile::kBytes;  // 16 + 32 KB
constexpr int kSwizzleAtomBytes = gpu::hopper::kTmaSwizzleAtomBytes;
constexpr int kSharedBytes =
    kSwizzleAtomBytes + kStages * kStageBytes + gpu::hopper::kPipelineBarrierBytes<kStages>;  // 1024 slack to align

static_assert(kBlockK * kElemBytes == gpu::hopper::kTmaSwizzleBytes,
              "a k tile is one 128-byte swizzle row: the A box is 128 x 64 and each B panel 64 x 64");
static_assert(kBlockN == 256 && kBlockM % kWgmmaM == 0,
              "each consumer warpgroup owns 64 rows x 256 columns: gpu::wgmma_m64n256k16_ss_mn_major_b");
static_assert(kBlockM <= gpu::hopper::kTmaMaxBoxDim && kBlockK <= gpu::hopper::kTmaMaxBoxDim,
              "TMA box dimensions are at most 256");
static_assert(kStageBytes % kSwizzleAtomBytes == 0 && ATile::kBytes % kSwizzleAtomBytes == 0 &&
                  BTile::kPanelBytes % kSwizzleAtomBytes == 0,
              "every box lands on a 1024-byte boundary: TMA's swizzle and the descriptors' base offset 0 agree");
static_assert(kStages >= 2, "the producer fills one slot while the consumers read another");
static_assert(kSharedBytes <= 227 * 1024, "sm_90: at most 227 KB of shared memory per block");
static_assert(gpu::hopper::register_budget_fits(kProducerRegs, kConsumerRegs, kConsumers),
              "the register reallocation must fit the SM's 64 K registers");

// ---- the supported set ---------------------------------------------------------------

// "" when the rungs take p, otherwise why not (their supports() and run() ask it).
inline std::string unsupported_reason(const GemmProblem& p) {
  if (p.dtype != DType::f16 && p.dtype != DType::bf16) return "f16 and bf16 only";
  if (p.K % kAlignElems != 0 || p.N % kAlignElems != 0)
    return "K and N must be multiples of 8: rows of A [M,K] and B [K,N] are TMA strides, multiples of 16 bytes";
  const int64_t tiles = (int64_t(p.M) + kBlockM - 1) / kBlockM * ((int64_t(p.N) + kBlockN - 1) / kBlockN);
  if (tiles > 2147483647) return "more tiles than a grid holds";
  return "";
}

// ---- where a slot's boxes land and where wgmma reads them -----------------------------
//
// Slot s starts at `slot` (a 1024-aligned shared address). The producer's
// copies: the A box (rows m0 .., k columns k0 ..) at slot, B panel p (k rows
// k0 .., columns n0 + 64p ..) at b_box_address(slot, p). Each lands as TMA's
// 128-byte swizzle puts it (gpu::hopper::tma_sw128_box_offset), which is the
// Sw128Tile layout of ATile and BTile. The consumers' descriptors of k16
// step ks: A K-major, rows 64·consumer .. of the A box; B MN-major, its four
// panels LBO = one panel apart.
CONVLAB_HOST_DEVICE constexpr uint32_t b_box_address(uint32_t slot, int panel) {
  return slot + ATile::kBytes + uint32_t(panel) * BTile::kPanelBytes;
}
CONVLAB_HOST_DEVICE constexpr uint64_t a_descriptor(uint32_t slot, int consumer, int ks) {
  return gpu::wgmma_advance(gpu::k_major_descriptor<ATile>(slot, consumer * kWgmmaM, 0),
                            gpu::k_major_step_bytes<ATile>(ks * kWgmmaK));
}
CONVLAB_HOST_DEVICE constexpr uint64_t b_descriptor(uint32_t slot, int ks) {
  return gpu::wgmma_advance(gpu::mn_major_descriptor<BTile>(slot + ATile::kBytes, 0),
                            gpu::mn_major_step_bytes<BTile>(ks * kWgmmaK));
}

}  // namespace convlab::wgmma_gemm
