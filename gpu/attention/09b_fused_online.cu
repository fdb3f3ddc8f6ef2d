// gpu/attention/09b_fused_online.cu — lesson 09, GPU rung 09b: fused attention on CUDA cores, fp32 math.
//
// Idea over cublas: do what cpu/attention/09b_fused_online does, on
// the GPU, and S and P never reach DRAM. A block takes kRowsPerBlock query
// rows of one (b, h); its warps walk the keys in tiles of kKeyTile = 32 that
// the whole block stages in shared memory (K and V converted to fp32), so a
// K/V tile read from DRAM serves kRowsPerBlock queries. For each query row a
// warp keeps the online-softmax state of the CPU rung in registers:
//
//   m, l      running max and sum (every lane holds the same values)
//   o[c]      the unnormalised output, lane owns columns lane + 32·c
//
// and per key tile does three warp-wide steps:
//   scores   lane j computes s_j = scale · q·k_j for key j0 + j (a d-long dot
//            from shared memory: q is a broadcast, k_j a row padded by one
//            float so the 32 lanes hit 32 different banks)
//   softmax  tile max and sum by 5-round shuffle butterflies; α = exp(m − m')
//   P·V      o[c] = α·o[c] + Σ_j p_j · v_j[lane + 32c], p_j broadcast by shuffle
//
// Cost: 2 shared loads per FMA in the score loop and one per FMA in P·V, so
// shared-memory bandwidth, not DRAM and not FMA issue, is the limit: expect a
// few TFLOP/s (≈ 10–20% of the fp32 FMA peak) — but DRAM traffic is O(N·d)
// and the memory O(tile) like the CPU rung. The tensor-core rung 09c is the
// real answer.
// Supported: f32, f16, bf16 (loaded as fp32, output rounded once), d a
// multiple of 32 up to 128, any Nq, Nk, causal or not.
// Run just this: build/convlab run attention/gpu/09b_fused_online --shape B=4,H=16,N=1024,d=64
#include <cstdint>

#include "ops/attention.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/element.cuh"

namespace convlab {
namespace {

// ---- tunables ----------------------------------------------------------------
constexpr int kWarps = 8;
constexpr int kRowsPerWarp = 2;                       // query rows a warp carries through the key loop
constexpr int kRowsPerBlock = kWarps * kRowsPerWarp;  // 16 queries share each staged K/V tile
constexpr int kKeyTile = 32;                          // one key per lane in the score step
constexpr int kMaxD = 128;
constexpr int kMaxChunks = kMaxD / 32;                // o[] registers per row per lane
constexpr int kThreads = 32 * kWarps;
static_assert(kKeyTile == 32, "the score step gives each lane one key of the tile");

// Shared floats for head dimension d: q rows [kRowsPerBlock][d], K tile
// [kKeyTile][d + 1] (padded: lane j reads row j at the same column), V tile [kKeyTile][d].
constexpr std::size_t shared_floats(int d) { return std::size_t(kRowsPerBlock) * d + kKeyTile * (d + 1) + kKeyTile * d; }
static_assert(shared_floats(kMaxD) * 4 <= 48 * 1024, "fits the default 48 KB of shared memory: no opt-in");

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Contract: grid (ceil(Nq / kRowsPerBlock), B·H), kThreads threads,
// shared_floats(d)·4 bytes of dynamic shared memory. Block (x, bh) owns query
// rows x·kRowsPerBlock + [0, kRowsPerBlock) of head bh; warp w owns rows
// w·kRowsPerWarp + [0, kRowsPerWarp) of those. Edges: rows ≥ Nq compute on
// zeros and store nothing; keys ≥ Nk are staged as zeros and masked to −∞.
template <class Element>
__global__ void __launch_bounds__(kThreads)
    fused_f32_kernel(int Nq, int Nk, int d, bool causal, float scale, const Element* __restrict__ q,
                     const Element* __restrict__ k, const Element* __restrict__ v, Element* __restrict__ o) {
  extern __shared__ float smem[];
  float* q_s = smem;                                   // [kRowsPerBlock][d]
  float* k_s = q_s + kRowsPerBlock * d;                // [kKeyTile][d + 1]
  float* v_s = k_s + kKeyTile * (d + 1);               // [kKeyTile][d]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t bh = blockIdx.y;
  const int q0 = blockIdx.x * kRowsPerBlock;
  const Element* qh = q + bh * Nq * d;
  const Element* kh = k + bh * Nk * d;
  const Element* vh = v + bh * Nk * d;
  const int chunks = d / 32;

  for (int e = threadIdx.x; e < kRowsPerBlock * d; e += kThreads) {
    const int r = e / d, t = e % d;
    q_s[e] = q0 + r < Nq ? gpu::to_float(qh[int64_t(q0 + r) * d + t]) : 0.f;
  }

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kMaxChunks];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.f;
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c) acc[r][c] = 0.f;
  }

  // Top-left causal: the block's last query sees keys up to itself.
  const int key_end = causal ? min(Nk, q0 + kRowsPerBlock) : Nk;
  for (int j0 = 0; j0 < key_end; j0 += kKeyTile) {
    __syncthreads();  // the previous tile is no longer read (and, first time, q_s is written)
    for (int e = threadIdx.x; e < kKeyTile * d; e += kThreads) {
      const int j = e / d, t = e % d;
      const bool in = j0 + j < Nk;
      k_s[j * (d + 1) + t] = in ? gpu::to_float(kh[int64_t(j0 + j) * d + t]) : 0.f;
      v_s[j * d + t] = in ? gpu::to_float(vh[int64_t(j0 + j) * d + t]) : 0.f;  // zeros: 0·p stays finite
    }
    __syncthreads();

#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = warp * kRowsPerWarp + r;
      const int i = q0 + row;
      // Scores: lane ↔ key j0 + lane.
      const int j = j0 + lane;
      float s = -INFINITY;
      if (j < Nk && !(causal && j > i)) {
        const float* qr = q_s + row * d;
        const float* kr = k_s + lane * (d + 1);
        float dot = 0.f;
        for (int t = 0; t < d; ++t) dot += qr[t] * kr[t];
        s = dot * scale;
      }
      const float m_tile = warp_max(s);
      if (m_tile == -INFINITY) continue;  // the whole tile is masked for this row (uniform across the warp)
      // The rescale (cpu/attention/09b_fused_online.cpp): α = exp(m − m'), 0 on the first tile.
      const float m_new = fmaxf(m[r], m_tile);
      const float alpha = expf(m[r] - m_new);
      const float p = expf(s - m_new);  // 0 for masked keys
      l[r] = alpha * l[r] + warp_sum(p);
      m[r] = m_new;
#pragma unroll
      for (int c = 0; c < kMaxChunks; ++c) acc[r][c] *= alpha;
      // P·V: lane owns output columns lane + 32c; p_jj comes from lane jj.
      for (int jj = 0; jj < kKeyTile; ++jj) {
        const float pj = __shfl_sync(0xffffffffu, p, jj);
        const float* vr = v_s + jj * d + lane;
#pragma unroll
        for (int c = 0; c < kMaxChunks; ++c)
          if (c < chunks) acc[r][c] += pj * vr[32 * c];
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int i = q0 + warp * kRowsPerWarp + r;
    if (i >= Nq) continue;
    const float inv_l = 1.f / l[r];  // l ≥ 1: key 0 is visible to every row and the max term is exp(0)
    Element* out = o + (bh * Nq + i) * d;
#pragma unroll
    for (int c = 0; c < kMaxChunks; ++c)
      if (c < chunks) out[lane + 32 * c] = gpu::from_float<Element>(acc[r][c] * inv_l);
  }
}

bool supports(const AttentionProblem& p) {
  return p.d % 32 == 0 && p.d <= kMaxD && int64_t(p.B) * p.H <= gpu::kMaxGridYZ &&
         gpu::ceil_div<int64_t>(p.Nq, kRowsPerBlock) <= gpu::kMaxGridX;
}

void run(const AttentionProblem& p, const Args<AttentionProblem>& a) {
  gpu::visit_dtype<float, __half, __nv_bfloat16>(p.dtype, [&](auto tag) {
    using Element = typename decltype(tag)::type;
    const dim3 grid(unsigned(gpu::ceil_div(p.Nq, kRowsPerBlock)), unsigned(p.B * p.H));
    fused_f32_kernel<Element><<<grid, kThreads, shared_floats(p.d) * sizeof(float)>>>(
        p.Nq, p.Nk, p.d, p.causal, float(p.scale()), static_cast<const Element*>(a.q),
        static_cast<const Element*>(a.k), static_cast<const Element*>(a.v), static_cast<Element*>(a.o));
    gpu::check_launch("fused_f32_kernel");
  });
}

const Register<AttentionProblem> reg{{
    .name = "09b_fused_online",
    .device = Device::gpu,
    .lesson = 9,
    .supports = supports,
    .run = run,
    .idea = "online softmax per query row (one warp), 32-key K/V tiles in shared memory, fp32 FMA; no S in DRAM",
}};

}  // namespace
}  // namespace convlab
