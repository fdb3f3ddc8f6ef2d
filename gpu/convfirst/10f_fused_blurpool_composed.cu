// gpu/convfirst/10f_fused_blurpool_composed.cu — lesson 10, GPU rung f: the stride-2 block with blur∘conv composed.
//
// Idea over 10d_fused_blurpool: compose the two linear maps before running them. The blur
// (β = 1, 2, 1 per axis) after the 3×3 grouped conv is, wherever all nine blur taps of an
// output pixel are inside the image, one 5×5 grouped conv at stride 2:
//
//   W5[k][u][v][c] = Σ_{i + r = u, j + s = v} β_i β_j · w[k][r][s][c]        (u, v in 0..4)
//
// 25 taps of 8 channels: 13 k16 steps per output pixel and group where 10d's 81 combos take
// 41, and no per-step scaling of the weights. The blur zero-pads the conv OUTPUT, so at the
// image's edges (output row 0, column 0, and the last row or column of an odd H or W) some blur
// taps are missing; those pixels subtract them with extra slots (inclusion–exclusion: the
// missing row taps, the missing column taps, the corner added back). The slots and their
// factors are gpu/lib/blurpool_s2_indexing.cuh's, checked against the plain loops on the host.
// A warp runs an edge step only when one of its pixels needs it (a vote): at 56 → 28 about
// 16/28 of the m16 tiles hold a column-0 pixel (3 steps more), a few % a row-0 pixel.
// The shortcut's blur reads nine of the 25 main taps, so S comes out of the same loop: a step
// that holds one runs a second mma on the same A fragment with B = β·I (exact; no S pass).
//
//   plain loops (ref::convfirst_block)              here:
//     for pixel (n, p, q), k:                         once per launch: W5 and the edge slots' weights,
//       t' = Σ_{i,j valid} β_iβ_j/16 ·                  rounded to the element type, in the mma B
//            (conv_b[k] + Σ_{r,s,c} w·x)                fragments' lane order (the workspace)
//                                                     per warp, per pass of ≤ 8 groups:
//                                                       acc = Σβ_iβ_j(valid) · conv_b
//                                                       for step < 13, and the edge steps a pixel needs:
//                                                         a ← ldmatrix.x4(slot's x pixel or the zero pixel)
//                                                         b ← the step's fragment (8 bytes per lane, L1)
//                                                         mma(acc[grp], a, b)
//                                                         mma(acc_s[grp], a, β·I)   (blur taps only)
//                                                       T, S[rows, 8·grp ..] ← round(acc / 16), round(acc_s / 16)
//
// Everything else (tiles of 128 output pixels, the staged x rows, S, Z's start, the hidden
// loop, the store) is the block's, shared with 10d: gpu/lib/convfirst_blurpool.cuh.
//
// ---- cost (N=128 56x56 C=64 → C_out=128 α=4 f16; H200 probe 760 TFLOP/s, 4.23 TB/s)
// Floor as 10d: 15.2 GFLOP, 77 MB: 0.020 ms compute, 0.018 ms memory. The conv's tensor-core
// work falls from 41 to ≈ 13 + 0.6·3 ≈ 15 k16 steps per pixel and group (1.2 G instead of
// 4.2 G MAC-equivalents), its shared-memory reads (one ldmatrix.x4 per step) likewise.
// Rounding: W5 is rounded to the element type once (10d's β-scaled weights were exact); the
// sum stays fp32 and T is rounded once, as before. Measured, with the profile of what is left:
// lessons/10-convfirst/NOTES.md.
//
// Contract: as 10d (gpu/lib/convfirst_blurpool.cuh), plus the workspace: workspace_bytes(p) bytes,
// 8-byte aligned, rewritten by every run. Tunables: S2Config in the block's header; kPassGroups.
// Supported: as 10d (f16, bf16; C ∈ {16, 32, 64, 128}, C_out ∈ {C, 2·C}; staged rows within shared memory).
// Run just this: build/convlab run convfirst/gpu/10f_fused_blurpool_composed --shape N=128,H=56,C=64,C_out=128,stride=2,dtype=f16
#include <cstdint>

#include "gpu/lib/convfirst_blurpool.cuh"

namespace convlab {
namespace {

namespace s2 = gpu::blurpool_s2;

// One word of the workspace per thread: channels 2t, 2t + 1 of output channel 8·group + g in
// slot 2·step + half, Σ_{r,s} slot_factor · w in fp32, rounded once.
template <class Element>
__global__ void compose_weights_kernel(const Element* __restrict__ w, uint32_t* __restrict__ words, int C) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= s2::composed_words(C)) return;
  const int half = int(idx % 2), lane = int(idx / 2 % 32);
  const int step = int(idx / 64 % s2::kComposedSteps), group = int(idx / (64 * s2::kComposedSteps));
  const int slot = 2 * step + half, k = group * s2::kGroupWidth + lane / 4, c = 2 * (lane % 4);
  float sum[2] = {0.0f, 0.0f};
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s) {
      const int factor = s2::slot_factor(slot, r, s);
      if (factor == 0) continue;
      const Element* tap = w + (int64_t(k) * 9 + r * 3 + s) * s2::kGroupWidth + c;
      sum[0] += float(factor) * gpu::to_float(tap[0]);
      sum[1] += float(factor) * gpu::to_float(tap[1]);
    }
  words[idx] = gpu::pack_pair<Element>(sum[0], sum[1]);
}

// T = blurpool(gconv3x3(x) + conv_b) from the composed slots (weights: the workspace's fragments).
// S = blurpool(x) is made in the same loop: the blur's nine taps are main slots (u, v in 1..3), so
// a step that holds one runs a second mma on the same A fragment with B = β·I (exact; fp32 sums).
struct ComposedConv {
  static constexpr bool kMakesS = true;
  template <class Cfg, class Element>
  static __device__ void run(const s2::BlurpoolTile& tile, const void* weights, const Element* Bc) {
    constexpr int kPassGroups = Cfg::kGroups < 8 ? Cfg::kGroups : 8;  // accumulators of ≤ 8 groups at once
    constexpr int kPasses = Cfg::kGroups / kPassGroups;
    static_assert(Cfg::kGroups % kPassGroups == 0, "whole passes of groups");
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const s2::ConvSites<Cfg::kMTiles> sites(tile);
    const uint2* frags = static_cast<const uint2*>(weights);  // s2::composed_word order, one uint2 per lane and step
    // B = β·I for the shortcut's blur: lane (g, t) holds rows 2t, 2t + 1 of column g (mma_b layout), one word
    // per factor β ∈ {1, 2, 4}; the odd slot's half of a step uses the same words.
    uint32_t diag[3];
#pragma unroll
    for (int f = 0; f < 3; ++f)
      diag[f] = gpu::pack_pair<Element>(2 * t == g ? float(1 << f) : 0.0f, 2 * t + 1 == g ? float(1 << f) : 0.0f);
    const auto diag_word = [&](int factor) { return factor == 0 ? 0u : diag[factor == 1 ? 0 : factor == 2 ? 1 : 2]; };
#pragma unroll 1
    for (int pass = 0; pass < kPasses; ++pass) {
      const int group0 = pass * kPassGroups;
      float acc[Cfg::kMTiles][kPassGroups][4];
      float acc_s[Cfg::kMTiles][kPassGroups][4] = {};  // S, no bias
      sites.start(acc, Bc, group0);
      // TUTORIAL: step j's two slots are compile-time constants of the unrolled loop (their x
      // offsets and the mask bits they test); only the pixel's masks and address are run-time
      // values. Steps past kMainSteps are the edge terms: skipped unless a pixel of the warp needs one.
#pragma unroll
      for (int j = 0; j < s2::kComposedSteps; ++j) {
        const int k_lo = 2 * j, k_hi = 2 * j + 1;
        const uint32_t off_lo = tile.offset(s2::slot_row_offset(k_lo), s2::slot_col_offset(k_lo));
        const uint32_t off_hi = tile.offset(s2::slot_row_offset(k_hi), s2::slot_col_offset(k_hi));
        uint32_t a_addr[Cfg::kMTiles];
        bool any = false;
#pragma unroll
        for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
          const s2::PixelSite& st = sites.a_site[mi];
          const bool valid = sites.upper ? s2::slot_valid(k_hi, st.row_mask, st.col_mask)
                                         : s2::slot_valid(k_lo, st.row_mask, st.col_mask);
          a_addr[mi] = valid ? st.centre + (sites.upper ? off_hi : off_lo) : tile.zero_pixel;
          any = any || valid;
        }
        if (j >= s2::kMainSteps && !__any_sync(0xffffffffu, any)) continue;  // warp-uniform
#pragma unroll
        for (int grp = 0; grp < kPassGroups; ++grp) {
          const uint2 w = __ldg(frags + s2::composed_word(group0 + grp, j, lane, 0) / 2);
          const uint32_t b[2] = {w.x, w.y};
          uint32_t a[Cfg::kMTiles][4];
#pragma unroll
          for (int mi = 0; mi < Cfg::kMTiles; ++mi) gpu::ldmatrix_x4(a[mi], a_addr[mi] + (group0 + grp) * 16);
#pragma unroll
          for (int mi = 0; mi < Cfg::kMTiles; ++mi) gpu::mma_m16n8k16<Element>(acc[mi][grp], a[mi], b);
          if (s2::shortcut_factor(2 * j) != 0 || s2::shortcut_factor(2 * j + 1) != 0) {  // folded: j is unrolled
            const uint32_t bs[2] = {diag_word(s2::shortcut_factor(2 * j)), diag_word(s2::shortcut_factor(2 * j + 1))};
#pragma unroll
            for (int mi = 0; mi < Cfg::kMTiles; ++mi) gpu::mma_m16n8k16<Element>(acc_s[mi][grp], a[mi], bs);
          }
        }
      }
#pragma unroll
      for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
        for (int grp = 0; grp < kPassGroups; ++grp) {
          const int row = tile.warp_row0 + mi * s2::kMmaM + g;
          s2::store_blurred<Cfg, Element>(tile.t_base, row, group0 + grp, t, acc[mi][grp]);
          s2::store_blurred<Cfg, Element>(tile.s_base, row, group0 + grp, t, acc_s[mi][grp]);
        }
    }
  }
};

std::size_t workspace_bytes(const ConvFirstProblem& p) { return std::size_t(s2::composed_words(p.C)) * 4; }

bool supports(const ConvFirstProblem& p) { return s2::supports_block(p); }

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a) {
  constexpr const char* kName = "convfirst/gpu/10f_fused_blurpool_composed";
  s2::check_block_alignment(p, a, kName);
  if (a.workspace == nullptr || reinterpret_cast<uintptr_t>(a.workspace) % 8 != 0)
    throw Unsupported(std::string(kName) + ": needs its 8-byte-aligned workspace");
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    const bool launched = s2::with_config(p, [&](auto cfg) {
      const int64_t words = s2::composed_words(p.C);
      constexpr int kThreads = 256;
      compose_weights_kernel<Element><<<int(gpu::ceil_div(words, int64_t(kThreads))), kThreads>>>(
          static_cast<const Element*>(a.conv_w), static_cast<uint32_t*>(a.workspace), p.C);
      gpu::check_launch("compose_weights_kernel");
      s2::launch_block<decltype(cfg), Element, ComposedConv>(p, a, a.workspace, kName);
      return true;
    });
    if (!launched) throw Unsupported(std::string(kName) + ": C must be 16, 32, 64 or 128 and C_out C or 2·C");
  });
}

const Register<ConvFirstProblem> reg{{
    .name = "10f_fused_blurpool_composed",
    .device = Device::gpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "10d with blur∘conv composed into one 5×5 stride-2 kernel (25 taps, 13 mma steps instead of 41) "
            "and inclusion–exclusion slots for the blur's zero padding at the image's edges",
}};

}  // namespace
}  // namespace convlab
