// cpu/attention/09a_naive.cpp — lesson 09, attention rung 09a: the textbook form, S and P in memory.
//
// Idea: attention written as the formula reads, three steps per (batch, head):
//
//   S = Q·Kᵀ·scale          [Nq, Nk]  scores, with −∞ where the causal mask hides a key
//   P = softmax_rows(S)      [Nq, Nk]  (three-pass safe softmax, in place over S)
//   O = P·V                  [Nq, d]
//
// Cost: the N×N score matrix. It lives in the workspace, B·H·Nq·Nk floats:
// 8 MB at B·H = 8, N = 512, but 4.3 GB at B·H = 64, N = 4096 — O(N²) memory,
// and in bytes moved S is written once and read twice (softmax, then P·V),
// while Q, K, V and O together are only 4·N·d per head. For N ≫ d that
// traffic dwarfs the compulsory bytes. The fused rung (02) removes it.
// Supported: f32, any sizes.
// Run just this: build/convlab run attention/cpu/09a_naive
#include <cmath>

#include "ops/attention.hpp"

namespace convlab {
namespace {

std::size_t workspace_bytes(const AttentionProblem& p) {
  return sizeof(float) * std::size_t(p.B) * p.H * p.Nq * p.Nk;  // S, then P over it: [B, H, Nq, Nk]
}

void run(const AttentionProblem& p, const Args<AttentionProblem>& a) {
  const float* q = static_cast<const float*>(a.q);  // [B, H, Nq, d]
  const float* k = static_cast<const float*>(a.k);  // [B, H, Nk, d]
  const float* v = static_cast<const float*>(a.v);  // [B, H, Nk, d]
  float* o = static_cast<float*>(a.o);              // [B, H, Nq, d]
  float* s = static_cast<float*>(a.workspace);      // [B, H, Nq, Nk]
  const int d = p.d, Nq = p.Nq, Nk = p.Nk;
  const float scale = float(p.scale());
  const int64_t rows = int64_t(p.B) * p.H * Nq;  // every (b, h, i) query row is independent

#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t bh = row / Nq;
    const int i = int(row % Nq);
    const float* qi = q + row * d;
    const float* kh = k + bh * Nk * d;
    const float* vh = v + bh * Nk * d;
    float* si = s + row * Nk;
    float* oi = o + row * d;
    // Step 1: scores. Top-left causal: key j is visible to query i when j <= i.
    for (int j = 0; j < Nk; ++j) {
      if (p.causal && j > i) {
        si[j] = -INFINITY;
        continue;
      }
      float dot = 0.f;
#pragma omp simd reduction(+ : dot)  // lets the compiler reorder the sum into SIMD lanes
      for (int t = 0; t < d; ++t) dot += qi[t] * kh[int64_t(j) * d + t];
      si[j] = dot * scale;
    }
    // Step 2: the three-pass softmax of cpu/softmax/09a_three_pass, in place.
    float m = -INFINITY;
    for (int j = 0; j < Nk; ++j) m = std::fmax(m, si[j]);  // finite: key 0 is always visible
    float l = 0.f;
    for (int j = 0; j < Nk; ++j) l += std::exp(si[j] - m);  // exp(−∞) = 0 for masked keys
    const float inv_l = 1.f / l;
    for (int j = 0; j < Nk; ++j) si[j] = std::exp(si[j] - m) * inv_l;
    // Step 3: O = P·V, keys outer so V is read row by row.
    for (int t = 0; t < d; ++t) oi[t] = 0.f;
    for (int j = 0; j < Nk; ++j) {
      const float pj = si[j];
      for (int t = 0; t < d; ++t) oi[t] += pj * vh[int64_t(j) * d + t];
    }
  }
}

const Register<AttentionProblem> reg{{
    .name = "09a_naive",
    .device = Device::cpu,
    .lesson = 9,
    .supports = f32_only<AttentionProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "S = QK^T and P = softmax(S) materialised (B*H*Nq*Nk floats), then O = PV",
}};

}  // namespace
}  // namespace convlab
