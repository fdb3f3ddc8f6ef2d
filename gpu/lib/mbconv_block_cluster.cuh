// gpu/lib/mbconv_block_cluster.cuh — lesson 11's 11k: the store plan's three launches (pass 1,
// the SE gate, pass 2) as one kernel, where every CTA of a tile group fits one thread-block cluster.
//
// Why: the SE gate of an image needs the channel sums of all of that image's D, so the store plan
// ends pass 1 with a kernel boundary (the whole batch's D written), runs the gate kernel, and starts
// pass 2 after another boundary. But an image's sums come from only its own CTAs: one image's
// tiles·splits (two CTAs at C = 80 @ 14²), or one tile of several small images × splits (7²).
// Where those CTAs form one cluster, a cluster barrier is all the dependency needs, and each
// cluster goes on as soon as its own images are done, not when the batch is:
//
//   plain loop (per cluster = one tile group, all of its images' CTAs):
//     every CTA: pass 1 on its tile and chunks (tile_body, Stage::store: D -> dbuf, sums -> partial)
//     cluster barrier                       D and the sums of the group's images written
//     CTA r: the gates of images r, r + ctas, ... -> gate16 (se_gate_image)
//     cluster barrier                       the gates written
//     CTA r: pass 2's stream tasks (stream_task) over the group's rows, its range of Wp's columns
//
// D goes through dbuf as in 11c (written once, read once; the read is mostly an L2 hit, since the
// cluster reads what it wrote moments before), the gate is computed where the sums are, and the
// two launches and their drains are gone. Reads of what other CTAs of the kernel wrote (dbuf,
// partial, gate16) go through L2 (ld.global.cg) after a barrier with release/acquire semantics at
// cluster scope, never through the read-only path; the group's gates are then copied into shared
// memory, where every chunk of pass 2 reads them.
//
// Cost: pass 1 as 11c's (the tile's splits capped so the group is one cluster); the gate's
// 2·hidden·Cr MACs an image once, on one CTA of its cluster; pass 2 as the stream, Wp staged once
// per CTA (its column range). The gate's and pass 2's latency (chains of L2 round trips) is paid
// by every cluster after its own pass 1, so once a wave of pass 1, with the cluster's other CTAs
// waiting at the barriers and their SM slots held (why 11k measures slower than 11c: lesson 11's
// NOTES.md, wave-3g). Shared memory after pass 1: ClusterFinish (mbconv_tile.hpp), within pass 1's
// limit, so two CTAs an SM stay resident where pass 1 had two.
// Contract: as 11c (store_plan_supported); the cluster form where cluster_plan (below) allows it,
// elsewhere 11k runs 11c's launches.
// Tunables: kClusterMax (portable cluster size) and kStreamMaxNT, in mbconv_tile.hpp.
// Run: build/convlab run mbconv/gpu/11k_fused_block_cluster --shape N=128,H=14,C=80,dtype=f16
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "gpu/lib/check.cuh"
#include "gpu/lib/hopper/cluster.cuh"
#include "gpu/lib/mbconv_fused.cuh"
#include "gpu/lib/mbconv_layers.cuh"
#include "gpu/lib/mbconv_project_stream.cuh"
#include "gpu/lib/mbconv_store_plan.cuh"
#include "ops/mbconv.hpp"

namespace convlab::gpu::mbconv {

// What the finish reads beyond pass 1's arguments.
template <class Element> struct ClusterArgs {
  ClusterFinish f;
  const Element *w1, *b1, *w2, *b2;  // the SE's FCs
  bool vec1, vec2;                   // their rows in 16-byte pieces (se_gate)
  int cr;
  float inv_pixels;
  FfnActivation act;
  Element* gate16;                   // [N][d_live]
  const Element* wp;                 // rows of f.st.ldw (project_weights)
};

// Grid (tiles·splits, groups), clusters (tiles·splits, 1, 1): blockIdx.x is the CTA's rank in its
// cluster, blockIdx.y its tile group. kThreads threads; max(t.bytes, c.f.bytes) of shared memory.
template <class Element, int K, int kStride, bool kRelu>
__global__ void __launch_bounds__(kThreads, 2) mbconv_block_cluster_kernel(
    Tile t, const Element* __restrict__ x, const Element* __restrict__ we, const Element* __restrict__ be,
    const Element* __restrict__ dw, const Element* __restrict__ bd, const Element* __restrict__ bp,
    Element* __restrict__ y, float* partial, Element* dbuf, ClusterArgs<Element> c) {
  tile_body<Element, Stage::store, K, kStride, kRelu, false>(t, x, we, be, dw, bd, nullptr, c.wp, bp, y, partial, dbuf);
  __syncthreads();  // pass 1 is done with shared memory

  extern __shared__ __align__(16) unsigned char shared[];
  const ClusterFinish& f = c.f;
  const StreamTile& st = f.st;
  const int rank = int(blockIdx.x), warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int row_group = rank / f.col_groups, row_groups = f.ctas / f.col_groups;
  const int cta_col0 = cluster_range_col0(f, rank), col_end = min(st.c_out, cta_col0 + 8 * f.group_n8);

  // This CTA's range of Wp and its bp, which no kernel writes: copies in flight across the
  // barrier and the gate. Rows in stream order, zeros past the range and past hidden.
  Element* wb = reinterpret_cast<Element*>(shared);
  const int units = st.cols / 8;
  for (int i = int(threadIdx.x); i < st.chunks * kChunk * units; i += kThreads) {
    const int r = i / units, u = i - r * units, j = stream_staged_row(r), col = cta_col0 + 8 * u;
    const bool in = j < st.hidden && col < col_end;
    cp_async_16(shared_address(wb + r * st.ldb + 8 * u), in ? c.wp + std::ptrdiff_t(j) * st.ldw + col : c.wp, in);
  }
  cp_async_commit();
  Element* bs = reinterpret_cast<Element*>(shared + st.wb_bytes);
  for (int i = int(threadIdx.x); i < st.cols; i += kThreads)
    bs[i] = cta_col0 + i < col_end ? bp[cta_col0 + i] : from_float<Element>(0.0f);

  hopper::cluster_sync();  // D and the channel sums of the group's images, from every CTA of the cluster

  const int n0 = int(blockIdx.y) * t.images, images = min(t.images, t.N - n0);
  float* se = reinterpret_cast<float*>(shared + f.se_off);
  for (int i = rank; i < images; i += f.ctas)  // the scratch is reused image after image: se_gate_image's barriers
    se_gate_image<Element, kThreads, true>(n0 + i, st.hidden, c.cr, t.tiles, c.inv_pixels, c.act, partial, c.w1, c.b1,
                                           c.w2, c.b2, c.vec1, c.vec2, nullptr, c.gate16, st.d_live, se);
  hopper::cluster_sync();  // the gates of the group's images

  // The group's gates into shared memory (each chunk of a task reads them: a shared load, not an
  // L2 round trip), then the staged Wp, bp and gates for every warp.
  Element* gs = reinterpret_cast<Element*>(shared + f.gate_off);
  const int gate_pieces = images * st.d_live / 8;  // d_live: a multiple of 8
  for (int i = int(threadIdx.x); i < gate_pieces; i += kThreads)
    reinterpret_cast<uint4*>(gs)[i] = __ldcg(reinterpret_cast<const uint4*>(c.gate16 + std::ptrdiff_t(n0) * st.d_live) + i);
  cp_async_wait<0>();
  __syncthreads();

  // Pass 2 over the group's rows [m_begin, m_end): tasks (row tile, sub-part of the range), row
  // group row_group's warps taking every row_groups-th task.
  StreamTile rows = st;
  const int m_begin = n0 * st.pq;
  rows.m = (n0 + images) * st.pq;
  const int tile0 = m_begin / 16, tiles = (rows.m + 15) / 16 - tile0, tasks = tiles * st.parts;
  const uint32_t b_lane = shared_address(wb) + uint32_t(((lane % 16) * st.ldb + 8 * (lane / 16)) * 2);
  const uint32_t b_step = 16u * uint32_t(st.ldb) * 2;
  const std::ptrdiff_t chunk_step = std::ptrdiff_t(st.pq) * kChunk;
  for (int task = row_group * kWarps + warp; task < tasks; task += row_groups * kWarps) {
    const ClusterTask k = cluster_task(f, rank, tile0, task);
    stream_task<Element, kStreamMaxNT, true>(rows, k.n_live, k.tile, k.s0, k.col0, k.col_end, m_begin, n0, b_lane,
                                             b_step, chunk_step, bs, dbuf, gs, x, y);
  }
}

// The tile and finish 11k launches for `kernel`, and whether the cluster form applies: every CTA
// of a tile group in one cluster (cluster_splits), the finish within pass 1's shared-memory class
// (two CTAs an SM where pass 1 had two), and the tile's rows of sums those of the workspace.
struct ClusterPlan {
  Tile t;
  ClusterFinish f;
  bool ok = false;
};
template <class Kernel>
ClusterPlan cluster_plan(const MBConvProblem& p, const Args<MBConvProblem>& a, Kernel kernel, const char* name,
                         const void* dbuf, int ldw) {
  ClusterPlan c;
  c.t = stage_tile<Stage::store>(p, a, kernel, name, dbuf);
  cluster_splits(c.t);
  const std::size_t limit = c.t.bytes <= kSharedTwoCtas ? kSharedTwoCtas : kMaxShared;
  c.f = cluster_finish_for(p, c.t, ldw, limit);
  c.ok = c.f.fits && c.t.tiles == choose_tile(p, Stage::store).tiles;
  return c;
}

// 11k: the block as one cluster kernel where cluster_plan says it applies, else 11c's store plan.
// Workspace: StorePlanLayout (the same as 11c's).
inline void run_block_cluster(const MBConvProblem& p, const Args<MBConvProblem>& a) {
  const StorePlanLayout l(p);
  unsigned char* base = static_cast<unsigned char*>(a.workspace);
  float* partial = reinterpret_cast<float*>(base);
  void* gate16 = base + l.partial;
  void* dbuf = base + l.partial + l.gate16;
  bool done = false;
  visit_dtype<__half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using E = typename decltype(tag)::type;
    const auto go = [&](auto kernel, const char* name) {
      const int ldw = (p.C_out + 7) / 8 * 8;  // project_weights' row stride, padded copy or not
      ClusterPlan c = cluster_plan(p, a, kernel, name, dbuf, ldw);
      if (!c.ok) return;
      const ProjectWeights<E> w = project_weights<E>(p, a, base + l.partial + l.gate16 + l.dbuf);
      const std::size_t bytes = std::max(c.t.bytes, c.f.bytes);
      allow_dynamic_shared(kernel, bytes, name);
      ClusterArgs<E> args{};
      args.f = c.f;
      args.f.st.pairs = c.t.pairs;
      args.w1 = static_cast<const E*>(a.se1_w), args.b1 = static_cast<const E*>(a.se1_b);
      args.w2 = static_cast<const E*>(a.se2_w), args.b2 = static_cast<const E*>(a.se2_b);
      args.vec1 = p.se_channels() % 8 == 0 && aligned_16(a.se1_w), args.vec2 = p.hidden() % 8 == 0 && aligned_16(a.se2_w);
      args.cr = p.se_channels(), args.inv_pixels = float(1.0 / (double(p.P()) * p.Q())), args.act = p.activation;
      args.gate16 = static_cast<E*>(gate16), args.wp = w.wp;
      hopper::ClusterLaunch launcher(unsigned(c.f.ctas), dim3(kThreads), bytes);
      launcher.max_active_clusters(kernel, name);  // refuses what cannot run
      launcher.launch(dim3(unsigned(c.t.tiles * c.t.splits), unsigned(c.t.groups)), kernel,
                      (std::string("launching ") + name).c_str(), c.t, static_cast<const E*>(a.x),
                      static_cast<const E*>(a.expand_w), static_cast<const E*>(a.expand_b),
                      static_cast<const E*>(a.dw_w), static_cast<const E*>(a.dw_b),
                      static_cast<const E*>(a.project_b), static_cast<E*>(a.y), partial, static_cast<E*>(dbuf), args);
      done = true;
    };
    const auto with = [&](auto relu) {
      constexpr bool kRelu = decltype(relu)::value;
      if (p.kernel == 3 && p.stride == 1) go(mbconv_block_cluster_kernel<E, 3, 1, kRelu>, "mbconv_block_cluster_kernel<k=3,s=1>");
      else if (p.kernel == 3) go(mbconv_block_cluster_kernel<E, 3, 2, kRelu>, "mbconv_block_cluster_kernel<k=3,s=2>");
      else if (p.stride == 1) go(mbconv_block_cluster_kernel<E, 5, 1, kRelu>, "mbconv_block_cluster_kernel<k=5,s=1>");
      else go(mbconv_block_cluster_kernel<E, 5, 2, kRelu>, "mbconv_block_cluster_kernel<k=5,s=2>");
    };
    if (p.activation == MBConvActivation::relu) with(std::true_type{});
    else with(std::false_type{});
  });
  if (!done) run_store_plan<false, false, true, true>(p, a);
}

}  // namespace convlab::gpu::mbconv
