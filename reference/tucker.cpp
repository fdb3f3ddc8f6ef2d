// reference/tucker.cpp — truncated HOSVD of a conv kernel and the three-stage
// Tucker convolution (see tucker.hpp).
#include "reference/tucker.hpp"

#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/conv2d.hpp"
#include "reference/validate.hpp"

namespace convlab::ref {

namespace {

void check_tucker(const char* where, const ConvShape& p, int rank_c, int rank_k) {
  detail::require(p.valid(), where, p.invalid_reason());
  detail::require(p.groups == 1, where,
                  "only dense convolutions (groups == 1) have a Tucker form here, got groups = " +
                      std::to_string(p.groups));
  detail::require(rank_c >= 1 && rank_c <= p.C, where,
                  "rank_c must be in [1, C = " + std::to_string(p.C) + "], got " + std::to_string(rank_c));
  detail::require(rank_k >= 1 && rank_k <= p.K, where,
                  "rank_k must be in [1, K = " + std::to_string(p.K) + "], got " + std::to_string(rank_k));
}

// The `rank` leading left singular vectors of `unfolding`, written row-major
// into factor[rows, rank], each with its largest-magnitude entry positive.
void leading_left_singular_vectors(const Eigen::MatrixXd& unfolding, int rank, double* factor) {
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(unfolding, Eigen::ComputeFullU);
  const Eigen::MatrixXd& U = svd.matrixU();  // columns sorted by decreasing singular value
  const int64_t rows = unfolding.rows();
  for (int j = 0; j < rank; ++j) {
    int64_t largest = 0;
    for (int64_t i = 1; i < rows; ++i)
      if (std::abs(U(i, j)) > std::abs(U(largest, j))) largest = i;
    const double sign = U(largest, j) < 0.0 ? -1.0 : 1.0;
    for (int64_t i = 0; i < rows; ++i) factor[i * rank + j] = sign * U(i, j);
  }
}

}  // namespace

void tucker_hosvd(const ConvShape& p, int rank_c, int rank_k, const double* w, double* u_in, double* core,
                  double* u_out) {
  const char* where = "tucker_hosvd";
  check_tucker(where, p, rank_c, rank_k);
  detail::require_buffer(where, "w", w);
  detail::require_buffer(where, "u_in", u_in);
  detail::require_buffer(where, "core", core);
  detail::require_buffer(where, "u_out", u_out);
  const int K = p.K, C = p.C;
  const int64_t RS = int64_t(p.R) * p.S;

  // Mode-K unfolding [K, R·S·C]: row k is output channel k's whole filter,
  // which in KRSC is already contiguous.
  Eigen::MatrixXd unfold_k(K, RS * C);
  for (int k = 0; k < K; ++k)
    for (int64_t rsc = 0; rsc < RS * C; ++rsc) unfold_k(k, rsc) = w[k * RS * C + rsc];
  // Mode-C unfolding [C, K·R·S]: row c gathers input channel c's weight from
  // every (k, r, s).
  Eigen::MatrixXd unfold_c(C, K * RS);
  for (int c = 0; c < C; ++c)
    for (int64_t krs = 0; krs < K * RS; ++krs) unfold_c(c, krs) = w[krs * C + c];

  leading_left_singular_vectors(unfold_k, rank_k, u_out);
  leading_left_singular_vectors(unfold_c, rank_c, u_in);

  // core = w ×_K u_outᵀ ×_C u_inᵀ, one mode at a time.
  // Step 1, contract C: partial[k, rs, i] = Σ_c w[k, rs, c] · u_in[c, i].
  std::vector<double> partial(size_t(K) * RS * rank_c);
  for (int k = 0; k < K; ++k)
    for (int64_t rs = 0; rs < RS; ++rs)
      for (int i = 0; i < rank_c; ++i) {
        double acc = 0.0;
        for (int c = 0; c < C; ++c) acc += w[(k * RS + rs) * C + c] * u_in[int64_t(c) * rank_c + i];
        partial[(k * RS + rs) * rank_c + i] = acc;
      }
  // Step 2, contract K: core[j, rs, i] = Σ_k u_out[k, j] · partial[k, rs, i].
  for (int j = 0; j < rank_k; ++j)
    for (int64_t rs = 0; rs < RS; ++rs)
      for (int i = 0; i < rank_c; ++i) {
        double acc = 0.0;
        for (int k = 0; k < K; ++k) acc += u_out[int64_t(k) * rank_k + j] * partial[(k * RS + rs) * rank_c + i];
        core[(j * RS + rs) * rank_c + i] = acc;
      }
}

void tucker_reconstruct(const ConvShape& p, int rank_c, int rank_k, const double* u_in, const double* core,
                        const double* u_out, double* w) {
  const char* where = "tucker_reconstruct";
  check_tucker(where, p, rank_c, rank_k);
  detail::require_buffer(where, "u_in", u_in);
  detail::require_buffer(where, "core", core);
  detail::require_buffer(where, "u_out", u_out);
  detail::require_buffer(where, "w", w);
  const int64_t RS = int64_t(p.R) * p.S;
  for (int k = 0; k < p.K; ++k)
    for (int64_t rs = 0; rs < RS; ++rs)
      for (int c = 0; c < p.C; ++c) {
        double acc = 0.0;
        for (int j = 0; j < rank_k; ++j)
          for (int i = 0; i < rank_c; ++i)
            acc += u_out[int64_t(k) * rank_k + j] * core[(j * RS + rs) * rank_c + i] * u_in[int64_t(c) * rank_c + i];
        w[(k * RS + rs) * p.C + c] = acc;
      }
}

void tucker_conv2d(const ConvShape& p, int rank_c, int rank_k, const double* x, const double* u_in,
                   const double* core, const double* u_out, double* y) {
  const char* where = "tucker_conv2d";
  check_tucker(where, p, rank_c, rank_k);
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "u_in", u_in);
  detail::require_buffer(where, "core", core);
  detail::require_buffer(where, "u_out", u_out);
  detail::require_buffer(where, "y", y);

  // Stage 1: 1x1 conv C → Rc at every input pixel.
  const int64_t in_pixels = int64_t(p.N) * p.H * p.W;
  std::vector<double> z1(size_t(in_pixels) * rank_c);
  for (int64_t px = 0; px < in_pixels; ++px)
    for (int i = 0; i < rank_c; ++i) {
      double acc = 0.0;
      for (int c = 0; c < p.C; ++c) acc += x[px * p.C + c] * u_in[int64_t(c) * rank_c + i];
      z1[px * rank_c + i] = acc;
    }

  // Stage 2: the core conv, Rc → Rk with the dense conv's R, S, stride, pad.
  ConvShape core_problem = p;
  core_problem.C = rank_c;
  core_problem.K = rank_k;
  core_problem.groups = 1;
  const int64_t out_pixels = int64_t(p.N) * p.P() * p.Q();
  std::vector<double> z2(size_t(out_pixels) * rank_k);
  conv2d(core_problem, z1.data(), core, z2.data());

  // Stage 3: 1x1 conv Rk → K at every output pixel.
  for (int64_t px = 0; px < out_pixels; ++px)
    for (int k = 0; k < p.K; ++k) {
      double acc = 0.0;
      for (int j = 0; j < rank_k; ++j) acc += z2[px * rank_k + j] * u_out[int64_t(k) * rank_k + j];
      y[px * p.K + k] = acc;
    }
}

}  // namespace convlab::ref
