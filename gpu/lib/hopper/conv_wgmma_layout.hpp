// gpu/lib/hopper/conv_wgmma_layout.hpp — the tunables, supported set and
// shared-memory geometry of lesson 04's wgmma + TMA-im2col implicit GEMM
// (gpu/conv2d/04c_implicit_gemm_wgmma.cu), in plain C++ so that
// tests/hopper_lib_test.cpp checks on the host that the im2col and filter
// boxes land where the wgmma descriptors read them, and that the im2col walk
// of every box visits the output pixels of its GEMM rows.
#pragma once

#include <cstdint>
#include <string>

#include "ops/conv2d.hpp"
#include "gpu/lib/wgmma.cuh"
#include "gpu/lib/hopper/mbarrier.cuh"
#include "gpu/lib/hopper/tma.cuh"
#include "gpu/lib/hopper/tma_im2col.cuh"
#include "gpu/lib/hopper/warp_specialization.cuh"

namespace convlab::conv_wgmma {

// ---- tunables ---------------------------------------------------------------------
constexpr int kBlockM = 128;        // output pixels per tile: two consumer warpgroups of 64
constexpr int kBlockN = 128;        // output channels per tile: one m64n128 accumulator per warpgroup
constexpr int kBlockK = 64;         // input channels per slot (one tap): one 128-byte swizzle row
constexpr int kStages = 6;          // slots in the ring (32 KB each)
constexpr int kGroupM = 8;          // tile rows per rasterisation band (K > 128 only)
constexpr int kProducerRegs = 40;   // setmaxnreg of the producer warpgroup
constexpr int kConsumerRegs = 232;  // setmaxnreg of each consumer warpgroup

// Fixed by the hardware.
constexpr int kWgmmaM = 64, kWgmmaK = 16;
constexpr int kElemBytes = 2;

// Derived.
constexpr int kConsumers = kBlockM / kWgmmaM;   // 2
constexpr int kConsumerWarps = 4 * kConsumers;  // each consumer warp releases a slot once
constexpr int kAccRegs = kBlockN / 2;           // fp32 accumulators per consumer thread: 64
constexpr int kKSteps = kBlockK / kWgmmaK;      // wgmma per slot and warpgroup: 4
constexpr int kThreads = (1 + kConsumers) * gpu::hopper::kWarpgroupThreads;
using ATile = gpu::Sw128Tile<kBlockM, kBlockK>;  // [pixel][channel]: the im2col box
using BTile = gpu::Sw128Tile<kBlockN, kBlockK>;  // [output channel][channel]: the filter box (K-major B)
constexpr int kStageBytes = ATile::kBytes + BTile::kBytes;  // 16 + 16 KB
constexpr int kSharedBytes =
    gpu::hopper::kTmaSwizzleAtomBytes + kStages * kStageBytes + gpu::hopper::kPipelineBarrierBytes<kStages>;

static_assert(kBlockK * kElemBytes == gpu::hopper::kTmaSwizzleBytes,
              "a slot holds one 128-byte swizzle row of channels per pixel and per output channel");
static_assert(kBlockN == 128 && kBlockM % kWgmmaM == 0,
              "each consumer warpgroup owns 64 pixels x 128 output channels: gpu::wgmma_m64n128k16_ss");
static_assert(kBlockM <= gpu::hopper::kTmaMaxBoxDim && kBlockN <= gpu::hopper::kTmaMaxBoxDim,
              "TMA boxes hold at most 256 rows");
static_assert(kStageBytes % gpu::hopper::kTmaSwizzleAtomBytes == 0 && ATile::kBytes % gpu::hopper::kTmaSwizzleAtomBytes == 0,
              "every box lands on a 1024-byte boundary (swizzle atoms, descriptor base offset 0)");
static_assert(kStages >= 2, "the producer fills one slot while the consumers read another");
static_assert(kSharedBytes <= 227 * 1024, "sm_90: at most 227 KB of shared memory per block");
static_assert(gpu::hopper::register_budget_fits(kProducerRegs, kConsumerRegs, kConsumers),
              "the register reallocation must fit the SM's 64 K registers");

// ---- the two maps of a problem -------------------------------------------------------
inline gpu::hopper::Im2colNhwc x_map_of(const ConvProblem& p, uint64_t x) {
  return {.base = x, .N = p.N, .H = p.H, .W = p.W, .C = p.C, .R = p.R, .S = p.S, .stride = p.stride,
          .pad = p.pad, .elem_bytes = kElemBytes, .pixels = kBlockM, .channels = kBlockK};
}
inline gpu::hopper::KrscFilterTile w_map_of(const ConvProblem& p, uint64_t w) {
  return {.base = w, .K = p.K, .RS = p.R * p.S, .C = p.C, .elem_bytes = kElemBytes, .rows = kBlockN,
          .channels = kBlockK};
}

// ---- the supported set ---------------------------------------------------------------
// "" when the rung takes p (alignment of the buffers is checked by run()).
inline std::string unsupported_reason(const ConvProblem& p) {
  if (p.dtype != DType::f16 && p.dtype != DType::bf16) return "f16 and bf16 only";
  if (p.groups != 1) return "dense convolutions only (groups = 1)";
  const int64_t M = int64_t(p.N) * p.P() * p.Q();
  if (M + kBlockM > 2147483647 || int64_t(p.K) * p.R * p.S * p.C >= (int64_t(1) << 31))
    return "N·P·Q and K·R·S·C must stay below 2^31";
  const int64_t tiles = (M + kBlockM - 1) / kBlockM * ((p.K + kBlockN - 1) / kBlockN);
  if (tiles > 2147483647) return "more tiles than a grid holds";
  // The encoders' own rules (alignment of a base address aside: 16 is always given here).
  if (const std::string why = gpu::hopper::tma_im2col_unsupported_reason(x_map_of(p, 0)); !why.empty()) return why;
  if (const std::string why = gpu::hopper::tma_filter_unsupported_reason(w_map_of(p, 0)); !why.empty()) return why;
  return "";
}

// ---- k iterations, slots and descriptors ----------------------------------------------
//
// The GEMM's reduction j = (r·S + s)·C + c is walked tap by tap: item kt of a
// tile is tap rs = kt / c_blocks, channels 64·(kt % c_blocks) ..; its slot
// holds the im2col box (128 pixels x 64 channels, TMA's 128-byte swizzle) and
// then the filter box (128 output channels x 64 channels). Channels past C
// are zeros in both boxes (TMA fills them), so a part-filled last channel
// block adds 0·0.
struct KIter {
  int r, s, rs, c0;
};
CONVLAB_HOST_DEVICE constexpr KIter k_iter(int kt, int c_blocks, int S) {
  const int rs = kt / c_blocks;
  return {rs / S, rs % S, rs, (kt % c_blocks) * kBlockK};
}
CONVLAB_HOST_DEVICE constexpr uint32_t b_box_address(uint32_t slot) { return slot + ATile::kBytes; }
CONVLAB_HOST_DEVICE constexpr uint64_t a_descriptor(uint32_t slot, int consumer, int ks) {
  return gpu::wgmma_advance(gpu::k_major_descriptor<ATile>(slot, consumer * kWgmmaM, 0),
                            gpu::k_major_step_bytes<ATile>(ks * kWgmmaK));
}
CONVLAB_HOST_DEVICE constexpr uint64_t b_descriptor(uint32_t slot, int ks) {
  return gpu::wgmma_advance(gpu::k_major_descriptor<BTile>(b_box_address(slot), 0, 0),
                            gpu::k_major_step_bytes<BTile>(ks * kWgmmaK));
}

// The first filter origin of GEMM row m0: output pixel (n, p, q) -> (w0, h0, n).
struct Origin {
  int n, h, w;
};
CONVLAB_HOST_DEVICE constexpr Origin origin_of(int m0, int P, int Q, int stride, int pad) {
  const int q = m0 % Q, pq = m0 / Q;
  return {pq / P, (pq % P) * stride - pad, q * stride - pad};
}

}  // namespace convlab::conv_wgmma
