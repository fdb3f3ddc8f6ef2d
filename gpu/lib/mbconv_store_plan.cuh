// gpu/lib/mbconv_store_plan.cuh — lesson 11's store plan, the three launches that 11c, 11e, 11h
// and 11i share: pass 1 (the tile kernel's store stage: D and its per-tile channel sums), the SE gate,
// and pass 2 (gate D and project, over the whole batch), the gate and pass 2 launched as
// programmatic dependents of the kernel before each. The rungs differ in pass 1's depthwise, on the
// FMA pipes (11c, 11h) or on the tensor cores (11e, 11i), and in pass 2: mma.sync (11c, 11e) or
// Hopper's wgmma (11h, 11i: gpu/lib/mbconv_project_wgmma.cuh). The mma.sync pass 2 is a stream of
// warp tasks (gpu/lib/mbconv_project_stream.cuh) wherever Wp fits one CTA's shared memory whole
// (stream_tile_fits: C_out ≤ 80 at EfficientNet's hidden sizes), and the persistent GEMM
// (gpu/lib/mbconv_project.cuh) elsewhere (C = 112 @ 14², 7²). kStreamCtaPart (on in 11c, off in
// 11e, so that the GPU tests run both) lets the stream take those shapes too, one column part of
// Wp a CTA, and leaves the persistent GEMM only past hidden 7200.
//
//   workspace  partial [N][tiles][hidden] fp32 | gate16 [N][dbuf_live] | dbuf (dbuf_elems) | Wp padded
//              | counts [N] (kGateTail: the arrivals of each tile group's CTAs)
#pragma once

#include "gpu/lib/mbconv_fused.cuh"
#include "gpu/lib/mbconv_layers.cuh"
#include "gpu/lib/mbconv_project.cuh"
#include "gpu/lib/mbconv_project_stream.cuh"
#include "gpu/lib/mbconv_project_wgmma.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

inline bool store_plan_supported(const MBConvProblem& p) { return p.has_se() && se_gate_fits(p) && fused_support(p); }

struct StorePlanLayout {
  std::size_t partial, gate16, dbuf, wp, counts;  // bytes
  explicit StorePlanLayout(const MBConvProblem& p) {
    // pass 1's tiles: one row of sums each (padded E may take a row less a tile: room for any)
    const int tiles = std::max({choose_tile(p, Stage::store).tiles, choose_tile(p, Stage::store, EPad::columns).tiles,
                                choose_tile(p, Stage::store, EPad::rows).tiles});
    const auto up = [](std::size_t b) { return (b + 255) / 256 * 256; };
    partial = up(std::size_t(p.N) * tiles * p.hidden() * sizeof(float));
    gate16 = up(std::size_t(p.N) * dbuf_live(p.hidden()) * 2);
    dbuf = up(dbuf_elems(p) * 2);
    wp = up(project_workspace_bytes(p));
    counts = up(std::size_t(p.N) * sizeof(unsigned));  // tile groups ≤ N
  }
  std::size_t bytes() const { return partial + gate16 + dbuf + wp + counts; }
};

// The tail's arguments: the SE weights of a, the counts and gate16 in the workspace.
template <class Element>
GateTail<Element> gate_tail_args(const MBConvProblem& p, const Args<MBConvProblem>& a, void* counts, void* gate16) {
  GateTail<Element> g{};
  g.counts = static_cast<unsigned*>(counts);
  g.w1 = static_cast<const Element*>(a.se1_w), g.b1 = static_cast<const Element*>(a.se1_b);
  g.w2 = static_cast<const Element*>(a.se2_w), g.b2 = static_cast<const Element*>(a.se2_b);
  g.vec1 = p.se_channels() % 8 == 0 && aligned_16(a.se1_w), g.vec2 = p.hidden() % 8 == 0 && aligned_16(a.se2_w);
  g.cr = p.se_channels(), g.ld16 = dbuf_live(p.hidden());
  g.inv_pixels = float(1.0 / (double(p.P()) * p.Q())), g.act = p.activation;
  g.gate16 = static_cast<Element*>(gate16);
  return g;
}

// kDependentLaunch: the gate and pass 2 each launched as a programmatic dependent of the kernel
// before it (gpu/lib/hopper/dependent_launch.cuh): the gate is scheduled into pass 1's last wave
// and waits for its sums there; pass 2 on wgmma (11h, 11i) fetches its Wp while the gate runs. Wp's padded copy,
// where one is needed, is made before pass 1, so nothing pass 2 reads before its wait is written
// by a kernel still running. kStreamCtaPart: the mma.sync pass 2 may stream with one column part
// of Wp a CTA where the whole Wp does not fit (StreamTile::cta_part), else the persistent GEMM there.
// kPadE (11c): pass 1's E rows padded with zero columns (launch_stage), so that no depthwise
// window tests its columns, at the shapes where that pays (pad_e_pays); both pass-1 kernels are
// compiled, the choice is made per shape. kStreamThree (11c): the stream at three CTAs an SM where
// stream_three_pays (launch_project_stream). kPadRows (with kPadE): where E is padded, its rows too
// where that keeps the tile (pad_rows_fit), so that no depthwise item tests its rows. kPartMajor
// (no rung yet): pass 1's split tiles in part-major CTA order (split_place), so that an SM's two
// CTAs make parts of unequal length rather than two long or two short ones. kGateTail (no rung
// yet): the gate made by the last CTA of each tile group of pass 1 (mbconv_store_gate_kernel)
// where gate_tail_pays, not by a kernel between the passes; pass 2 is then pass 1's dependent.
template <bool kTensorDw, bool kWgmmaProject = false, bool kDependentLaunch = true, bool kStreamCtaPart = false,
          bool kPadE = false, bool kStreamThree = false, bool kPadRows = false, bool kPartMajor = false,
          bool kGateTail = false>
void run_store_plan(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const bool pad = kPadE && !kTensorDw && pad_e_pays(p, 2 * sm_count());
  const bool pad_rows = kPadRows && pad && pad_rows_fit(p, 2 * sm_count());
  const Tile t = choose_tile(p, Stage::store, pad_rows ? EPad::rows : pad ? EPad::columns : EPad::none);
  const StorePlanLayout l(p);
  unsigned char* base = static_cast<unsigned char*>(a.workspace);
  float* partial = reinterpret_cast<float*>(base);
  void* gate16 = base + l.partial;
  void* dbuf = base + l.partial + l.gate16;
  visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    const ProjectWeights<E> w = project_weights<E>(p, a, base + l.partial + l.gate16 + l.dbuf);
    // Pass 1, with the gate in its tail (kTail: false where it does not pay, nothing launched) or without.
    const auto pass1 = [&](auto tail_tag) {
      constexpr bool kTail = decltype(tail_tag)::value;
      const GateTail<E> args = kTail ? gate_tail_args<E>(p, a, base + l.bytes() - l.counts, gate16) : GateTail<E>{};
      const GateTail<E>* g = kTail ? &args : nullptr;
      if constexpr (kPadE && kPadRows && !kTensorDw) {
        if (pad_rows) return launch_stage<E, Stage::store, false, true, true, kPartMajor, kTail>(p, a, nullptr, partial, dbuf, g);
        else if (pad) return launch_stage<E, Stage::store, false, true, false, kPartMajor, kTail>(p, a, nullptr, partial, dbuf, g);
        else return launch_stage<E, Stage::store, false, false, false, kPartMajor, kTail>(p, a, nullptr, partial, dbuf, g);
      } else if constexpr (kPadE && !kTensorDw) {
        if (pad) return launch_stage<E, Stage::store, false, true, false, kPartMajor, kTail>(p, a, nullptr, partial, dbuf, g);
        else return launch_stage<E, Stage::store, false, false, false, kPartMajor, kTail>(p, a, nullptr, partial, dbuf, g);
      } else {
        return launch_stage<E, Stage::store, kTensorDw, false, false, kPartMajor, kTail>(p, a, nullptr, partial, dbuf, g);
      }
    };
    bool tail = false;
    if constexpr (kGateTail) tail = pass1(std::true_type{});
    if (!tail) {
      pass1(std::false_type{});
      se_gate<E, kDependentLaunch>(p, t.tiles, partial, a.se1_w, a.se1_b, a.se2_w, a.se2_b, nullptr, gate16,
                                   dbuf_live(p.hidden()));
    }
    if constexpr (kWgmmaProject)
      launch_project_wgmma<E>(p, a, dbuf, gate16, w, kDependentLaunch);
    else if (stream_tile_fits(stream_tile_for(p, w.ldw, kStreamCtaPart)))
      launch_project_stream<E, kStreamCtaPart, kStreamThree>(p, a, dbuf, gate16, w, kDependentLaunch);
    else
      launch_project<E>(p, a, dbuf, gate16, w, kDependentLaunch);
  });
}

}  // namespace convlab::gpu::mbconv
