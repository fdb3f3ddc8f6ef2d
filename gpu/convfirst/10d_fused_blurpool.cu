// gpu/convfirst/10d_fused_blurpool.cu — lesson 10, GPU rung d: the stride-2 (BlurPool) ConvFirst block in ONE kernel.
//
// Idea over 10b_fused: the downsampling block fused the same way. A tile of
// OUTPUT pixels depends on x rows 2p−2 .. 2p+2 of its output rows (the conv's
// one-pixel halo plus the blur's, at full resolution); one CTA goes from those
// staged rows to y with every intermediate on the chip:
//
//   stage x[2 rows above .. 2 below the tile's rows] in shared memory    cp.async, once (with Wsc, U/V chunk 0)
//   T  = blurpool(gconv3x3(x) + conv_b)   mma.sync m16n8k16, 81 combos    shared memory [pixels × C], f16/bf16
//   S  = blurpool(x)                      fp32 sums of 9 staged pixels    shared memory [pixels × C], f16/bf16
//   Z  = S·Wsc + bsc + b  (C_out ≠ C)     mma.sync, A = S, B = Wsc        registers, fp32
//   Z  = S + b            (C_out = C)
//   for r in chunks of TH hidden channels: H_r = φ(T·U^r + a_r); Z += H_r·V_r   (gpu/lib/ffn_hidden_loop.cuh)
//   y[tile] = Z                           one rounding, one store
//
// The blurred conv without the full-resolution conv output. Both the conv and
// the blur are linear, so each output pixel's t' is one sum over 81 combos
// (blur tap (i, j) × conv tap (r, s)) of an 8-channel staged x pixel times
// w[k][r][s] scaled by β_i β_j ∈ {1, 2, 4} (β = 1, 2, 1: exact in f16/bf16), the
// 1/16 applied to the fp32 sum. The blur zero-pads the conv OUTPUT, so a combo
// counts only when its blur tap is inside the image (and reads the zero pixel
// when its x pixel is outside); the conv bias enters once, times Σ of the valid
// β_i β_j. With group width 8 a combo's 8 channels are 16 contiguous bytes, one
// ldmatrix row: two combos make one k16 step, 41 steps per group and m-tile
// (the 82nd combo is a zero pixel and a zero B register). Lane l hands ldmatrix
// the staged address of its pixel (row l % 16) for combo 2j + l / 16, or of the
// zero pixel. This does 41 k-steps per output pixel and group where a
// full-resolution conv followed by a blur does about 4 pixels × 5 = 20 plus a
// blur pass, but it needs no full-resolution t in shared memory (which does not
// fit beside the staged rows at W = 56) and no barrier between conv and blur.
// The index arithmetic is gpu/lib/blurpool_s2_indexing.cuh, checked on the host.
//
//   plain loops (ref::convfirst_block)              here, per warp, per pass of ≤ 8 groups:
//     for pixel (n, p, q), k (group g = k / 8):       wreg[grp][tap] ← w (global, L1), 9 words per group
//       t' = Σ_{i,j valid} β_iβ_j/16 ·                acc = Σβ_iβ_j(valid) · conv_b      (per row)
//            (conv_b[k] + Σ_{r,s,c} w·x)              for j < 41: a ← ldmatrix.x4(combo address); b ← wreg · β
//                                                                  mma(acc[grp], a, b)
//                                                     T[rows, 8·grp ..] ← round(acc / 16)
//
// Tiles, staging, S, Z's start, the hidden loop and the store are the block's
// (gpu/lib/convfirst_blurpool.cuh, shared with 10f); this file is the conv.
// A CTA owns 128 consecutive output pixels of the flattened N·P·Q index, 8 warps of 16.
//
// ---- the floor (H200 probe: cuBLAS f16 GEMM 760 TFLOP/s, device copy 4.23 TB/s)
// N=128 56x56 C=64 → C_out=128 α=4 f16: 7.60 GMAC = 15.2 GFLOP (conv 24 %,
// FFN 65 %, projection 11 %), min_bytes 77 MB: compute floor 0.020 ms, memory
// floor 0.018 ms. This kernel's tensor-core work is larger: the 81-combo conv
// is 41 k-steps per output pixel and group (2.1 M mma instead of the conv's
// 0.9 M at full resolution), 10.0 G MAC-equivalents in all. The prediction and the
// measurements are in lessons/10-convfirst/NOTES.md.
//
// Tunables: per (C, C_out) an S2Config (warps, rows per warp, hidden chunk, blocks per SM), in the
// block's header; here kPassGroups, the groups whose weights sit in registers at once.
// Supported: f16 and bf16; stride 2; group width 8; C ∈ {16, 32, 64, 128} with C_out ∈ {C, 2·C};
// hidden a multiple of 8; ReLU or SiLU; any N, H, W whose staged rows fit shared memory
// (at C = 64 → 128: W up to about 60; at C = 128 → 256 only a few pixels wide);
// 16-byte-aligned x, U, V, Wsc and y. Everything else is refused by supports().
// Run just this: build/convlab run convfirst/gpu/10d_fused_blurpool --shape N=128,H=56,C=64,C_out=128,stride=2,dtype=f16
#include <cstdint>
#include <type_traits>

#include "gpu/lib/convfirst_blurpool.cuh"

namespace convlab {
namespace {

namespace s2 = gpu::blurpool_s2;

// A packed pair of Element times 1, 2 or 4 (exact: a power of two).
template <class Element> __device__ __forceinline__ uint32_t scale_pair(uint32_t pair, int factor) {
  if (factor == 1) return pair;
  if constexpr (std::is_same_v<Element, __half>) {
    const __half2 v = __hmul2(*reinterpret_cast<const __half2*>(&pair), __float2half2_rn(float(factor)));
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __nv_bfloat162 v =
        __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&pair), __float2bfloat162_rn(float(factor)));
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// T = blurpool(gconv3x3(x) + conv_b) as 81 (blur tap, conv tap) combos, from conv_w [C][3][3][8].
struct CombosConv {
  static constexpr bool kMakesS = false;  // the block computes S = blurpool(x) after it
  template <class Cfg, class Element>
  static __device__ void run(const s2::BlurpoolTile& tile, const void* weights, const Element* Bc) {
    constexpr int kPassGroups = Cfg::kGroups < 8 ? Cfg::kGroups : 8;  // groups whose weights sit in registers
    constexpr int kPasses = Cfg::kGroups / kPassGroups;
    static_assert(Cfg::kGroups % kPassGroups == 0, "whole passes of groups");
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const s2::ConvSites<Cfg::kMTiles> sites(tile);
    const uint32_t* w_words = static_cast<const uint32_t*>(weights);  // [C][9][8] as pairs of channels
#pragma unroll 1
    for (int pass = 0; pass < kPasses; ++pass) {
      const int group0 = pass * kPassGroups;
      // B of combo c for group grp, lane (g, t): w[8·grp + g][tap(c)][2t, 2t+1] · β(c): one word of KRSC w.
      uint32_t wreg[kPassGroups][9];
      float acc[Cfg::kMTiles][kPassGroups][4];
#pragma unroll
      for (int grp = 0; grp < kPassGroups; ++grp) {
        const int k = (group0 + grp) * s2::kGroupWidth + g;
#pragma unroll
        for (int tap = 0; tap < 9; ++tap) wreg[grp][tap] = __ldg(w_words + (k * 72 + tap * 8 + 2 * t) / 2);
      }
      sites.start(acc, Bc, group0);
      // TUTORIAL: the plain order is "for blur tap: for conv tap: acc += β·w·x"; here two
      // (blur, conv) combos share one k16 step, the combo index is a compile-time constant
      // of the unrolled loop, and only the pixel's masks and address are run-time values.
#pragma unroll
      for (int j = 0; j < s2::kComboSteps; ++j) {
        constexpr int kNone = s2::kCombos;  // the 82nd combo: zero
        const int c_lo = 2 * j, c_hi = 2 * j + 1;
        const uint32_t off_lo = tile.offset(s2::combo_row_offset(c_lo), s2::combo_col_offset(c_lo));
        const uint32_t off_hi =
            c_hi < kNone ? tile.offset(s2::combo_row_offset(c_hi), s2::combo_col_offset(c_hi)) : 0u;
        uint32_t a_addr[Cfg::kMTiles];
#pragma unroll
        for (int mi = 0; mi < Cfg::kMTiles; ++mi) {
          const s2::PixelSite& st = sites.a_site[mi];
          const bool valid_lo = s2::combo_valid(c_lo, st.row_mask, st.col_mask);
          const bool valid_hi = c_hi < kNone && s2::combo_valid(c_hi, st.row_mask, st.col_mask);
          const bool valid = sites.upper ? valid_hi : valid_lo;
          a_addr[mi] = valid ? st.centre + (sites.upper ? off_hi : off_lo) : tile.zero_pixel;
        }
#pragma unroll
        for (int grp = 0; grp < kPassGroups; ++grp) {
          uint32_t b[2];
          b[0] = scale_pair<Element>(wreg[grp][s2::combo_tap(c_lo)], s2::combo_scale(c_lo));
          b[1] = c_hi < kNone ? scale_pair<Element>(wreg[grp][s2::combo_tap(c_hi)], s2::combo_scale(c_hi)) : 0u;
          uint32_t a[Cfg::kMTiles][4];
#pragma unroll
          for (int mi = 0; mi < Cfg::kMTiles; ++mi) gpu::ldmatrix_x4(a[mi], a_addr[mi] + (group0 + grp) * 16);
#pragma unroll
          for (int mi = 0; mi < Cfg::kMTiles; ++mi) gpu::mma_m16n8k16<Element>(acc[mi][grp], a[mi], b);
        }
      }
      // acc[mi][grp] / 16: rows g and g+8 of m-tile mi, channels 8·grp + 2t, +1 → T.
#pragma unroll
      for (int mi = 0; mi < Cfg::kMTiles; ++mi)
#pragma unroll
        for (int grp = 0; grp < kPassGroups; ++grp)
          s2::store_blurred<Cfg, Element>(tile.t_base, tile.warp_row0 + mi * s2::kMmaM + g, group0 + grp, t, acc[mi][grp]);
    }
  }
};

bool supports(const ConvFirstProblem& p) { return s2::supports_block(p); }

void run(const ConvFirstProblem& p, const Args<ConvFirstProblem>& a) {
  constexpr const char* kName = "convfirst/gpu/10d_fused_blurpool";
  s2::check_block_alignment(p, a, kName);
  gpu::visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    const bool launched = s2::with_config(p, [&](auto cfg) {
      s2::launch_block<decltype(cfg), Element, CombosConv>(p, a, a.conv_w, kName);
      return true;
    });
    if (!launched) throw Unsupported(std::string(kName) + ": C must be 16, 32, 64 or 128 and C_out C or 2·C");
  });
}

const Register<ConvFirstProblem> reg{{
    .name = "10d_fused_blurpool",
    .device = Device::gpu,
    .lesson = 10,
    .supports = supports,
    .run = run,
    .idea = "stride-2 block in one kernel: staged x rows, blurpool∘gconv as 81 (blur, conv) combos on mma.sync "
            "into T, blurred shortcut S (projection on mma.sync starts Z), the shared hidden-chunk loop; one store",
}};

}  // namespace
}  // namespace convlab
