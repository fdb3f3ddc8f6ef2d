// cpu/attention/09b_fused_online.cpp — lesson 09, attention rung 09b: fused, blocked over keys.
//
// Idea over 09a_naive: never hold a whole score row. Walk the keys in blocks of
// kKeyBlock and apply the online-softmax identity (cpu/softmax/09b_online) to
// the OUTPUT row as well as to the sum. For one query row keep
//
//   m  running max of the scores seen so far
//   l  Σ exp(s_j − m) over the keys seen so far
//   o  Σ exp(s_j − m) · v_j over the keys seen so far   (a d-vector, unnormalised)
//
// A new block of scores s_j with block maximum m_b: m' = max(m, m_b),
// α = exp(m − m'), and
//
//   l ← α·l + Σ_j exp(s_j − m'),     o ← α·o + Σ_j exp(s_j − m')·v_j.
//
// Both stay "relative to the current max", so after the last block
// o / l = Σ_j softmax_j · v_j exactly as in the three-pass form, with every
// exponent ≤ 0. Memory: the block's scores (kQueryBlock × kKeyBlock) and the
// block's o accumulators (kQueryBlock × d), per thread — independent of N.
// Queries go in blocks of kQueryBlock so each key block (K and V rows, from
// the cache) serves that many queries before it is dropped.
// Causal: a query block [q0, q0 + kQueryBlock) needs keys < q0 + kQueryBlock
// only; later key blocks are skipped entirely (half the work at Nq == Nk).
//
// Cost: one exp per score as before, plus d multiplies per row per block for
// the rescale; bytes: Q, K, V read (K, V once per query block), O written once.
// Supported: f32, any sizes.
// Run just this: build/convlab run attention/cpu/09b_fused_online
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "ops/attention.hpp"

namespace convlab {
namespace {

// ---- tunables ----------------------------------------------------------------
constexpr int kQueryBlock = 32;  // query rows sharing one pass over a key block
constexpr int kKeyBlock = 64;    // keys per block: scores of one block stay in L1
static_assert(kQueryBlock * kKeyBlock * 4 <= 16 * 1024, "the block's scores should sit in L1 next to K and V rows");

// Per-thread scratch, in floats: scores [kQueryBlock][kKeyBlock], output
// accumulators [kQueryBlock][d], running max and sum [kQueryBlock] each.
std::size_t scratch_floats(int d) { return std::size_t(kQueryBlock) * (kKeyBlock + d + 2); }

std::size_t workspace_bytes(const AttentionProblem& p) {
  return sizeof(float) * scratch_floats(p.d) * std::size_t(omp_get_max_threads());  // O(tile), not O(N)
}

void run(const AttentionProblem& p, const Args<AttentionProblem>& a) {
  const float* q = static_cast<const float*>(a.q);  // [B, H, Nq, d]
  const float* k = static_cast<const float*>(a.k);  // [B, H, Nk, d]
  const float* v = static_cast<const float*>(a.v);  // [B, H, Nk, d]
  float* o = static_cast<float*>(a.o);              // [B, H, Nq, d]
  const int d = p.d, Nq = p.Nq, Nk = p.Nk;
  const float scale = float(p.scale());
  const int q_blocks = (Nq + kQueryBlock - 1) / kQueryBlock;
  const int64_t tasks = int64_t(p.B) * p.H * q_blocks;
  const int max_threads = omp_get_max_threads();

#pragma omp parallel num_threads(max_threads)
  {
    float* scratch = static_cast<float*>(a.workspace) + scratch_floats(d) * omp_get_thread_num();
    float* s_blk = scratch;                                // [kQueryBlock][kKeyBlock]
    float* o_acc = s_blk + kQueryBlock * kKeyBlock;        // [kQueryBlock][d]
    float* m_run = o_acc + std::size_t(kQueryBlock) * d;   // [kQueryBlock]
    float* l_run = m_run + kQueryBlock;                    // [kQueryBlock]

#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t bh = task / q_blocks;
      const int q0 = int(task % q_blocks) * kQueryBlock;
      const int rows = std::min(kQueryBlock, Nq - q0);
      const float* qb = q + (bh * Nq + q0) * d;
      const float* kh = k + bh * Nk * d;
      const float* vh = v + bh * Nk * d;
      for (int r = 0; r < rows; ++r) {
        m_run[r] = -INFINITY;
        l_run[r] = 0.f;
        std::fill(o_acc + r * d, o_acc + (r + 1) * d, 0.f);
      }
      // Top-left causal: the block's last query q0 + rows − 1 sees keys up to itself.
      const int key_end = p.causal ? std::min(Nk, q0 + rows) : Nk;
      for (int j0 = 0; j0 < key_end; j0 += kKeyBlock) {
        const int cols = std::min(kKeyBlock, key_end - j0);
        for (int r = 0; r < rows; ++r) {
          const int i = q0 + r;
          const float* qi = qb + int64_t(r) * d;
          float* sr = s_blk + r * kKeyBlock;
          // Scores of this block, masked ones −∞; their maximum.
          float m_blk = -INFINITY;
          for (int c = 0; c < cols; ++c) {
            const int j = j0 + c;
            float dot = 0.f;
            if (p.causal && j > i) {
              sr[c] = -INFINITY;
              continue;
            }
            const float* kj = kh + int64_t(j) * d;
#pragma omp simd reduction(+ : dot)  // lets the compiler reorder the sum into SIMD lanes
            for (int t = 0; t < d; ++t) dot += qi[t] * kj[t];
            sr[c] = dot * scale;
            m_blk = std::fmax(m_blk, sr[c]);
          }
          if (m_blk == -INFINITY) continue;  // every key of this block is masked for row i
          // The rescale: m' = max(m, m_blk), α = exp(m − m') (0 on the first block: m = −∞).
          const float m_new = std::fmax(m_run[r], m_blk);
          const float alpha = std::exp(m_run[r] - m_new);
          float* orow = o_acc + int64_t(r) * d;
          float l_blk = 0.f;
          for (int t = 0; t < d; ++t) orow[t] *= alpha;
          for (int c = 0; c < cols; ++c) {
            const float pc = std::exp(sr[c] - m_new);  // 0 for masked keys
            if (pc == 0.f) continue;
            l_blk += pc;
            const float* vj = vh + int64_t(j0 + c) * d;
            for (int t = 0; t < d; ++t) orow[t] += pc * vj[t];
          }
          l_run[r] = alpha * l_run[r] + l_blk;
          m_run[r] = m_new;
        }
      }
      // Normalise once at the end: o = (Σ p̃_j v_j) / (Σ p̃_j).
      for (int r = 0; r < rows; ++r) {
        const float inv_l = 1.f / l_run[r];
        float* out = o + (bh * Nq + q0 + r) * d;
        for (int t = 0; t < d; ++t) out[t] = o_acc[int64_t(r) * d + t] * inv_l;
      }
    }
  }
}

const Register<AttentionProblem> reg{{
    .name = "09b_fused_online",
    .device = Device::cpu,
    .lesson = 9,
    .supports = f32_only<AttentionProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "blocks of 64 keys, running max/sum, output rescaled per block; O(tile) memory",
}};

}  // namespace
}  // namespace convlab
