// reference/attention.cpp — scaled dot-product attention (see attention.hpp).
#include "reference/attention.hpp"

#include <algorithm>
#include <vector>

#include "reference/validate.hpp"

namespace convlab::ref {

void attention(const AttentionShape& s, const double* q, const double* k, const double* v, double* o) {
  const char* where = "attention";
  detail::require_positive(where, "B", s.B);
  detail::require_positive(where, "H", s.H);
  detail::require_positive(where, "Nq", s.Nq);
  detail::require_positive(where, "Nk", s.Nk);
  detail::require_positive(where, "d", s.d);
  detail::require(std::isfinite(s.scale), where,
                  "scale must be set to a finite value (usually AttentionShape::standard_scale() = 1/sqrt(d))");
  detail::require_buffer(where, "q", q);
  detail::require_buffer(where, "k", k);
  detail::require_buffer(where, "v", v);
  detail::require_buffer(where, "o", o);

  const int64_t heads = int64_t(s.B) * s.H;  // (b, h) pairs are independent problems
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < heads; ++bh) {
    const double* qh = q + bh * s.Nq * s.d;
    const double* kh = k + bh * s.Nk * s.d;
    const double* vh = v + bh * s.Nk * s.d;
    double* oh = o + bh * s.Nq * s.d;
    std::vector<double> weight(s.Nk), acc(s.d);
    for (int i = 0; i < s.Nq; ++i) {
      // Top-left causal: query i sees keys 0 … min(i, Nk − 1).
      const int visible = s.causal ? std::min(i + 1, s.Nk) : s.Nk;
      // Pass 1: scores and their maximum.
      double row_max = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < visible; ++j) {
        double dot = 0.0;
        for (int t = 0; t < s.d; ++t) dot += qh[int64_t(i) * s.d + t] * kh[int64_t(j) * s.d + t];
        weight[j] = dot * s.scale;
        if (weight[j] > row_max) row_max = weight[j];
      }
      // Pass 2: unnormalized probabilities and their sum.
      double sum = 0.0;
      for (int j = 0; j < visible; ++j) {
        weight[j] = std::exp(weight[j] - row_max);
        sum += weight[j];
      }
      // Pass 3: o_i = Σ_j p_j · v_j with p_j = weight_j / sum. Keys outer,
      // so V is read row by row (the same sums, in the same order, as a
      // t-outer loop; only faster on the long benchmark rows).
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int j = 0; j < visible; ++j)
        for (int t = 0; t < s.d; ++t) acc[t] += weight[j] * vh[int64_t(j) * s.d + t];
      for (int t = 0; t < s.d; ++t) oh[int64_t(i) * s.d + t] = acc[t] / sum;
    }
  }
}

}  // namespace convlab::ref
