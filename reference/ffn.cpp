// reference/ffn.cpp — fully connected layer and Eq. 30's FFN (see ffn.hpp).
#include "reference/ffn.hpp"

#include <vector>

#include "reference/validate.hpp"

namespace convlab::ref {

void linear(int64_t rows, int in, int out, const double* x, const double* w, const double* bias, double* y) {
  const char* where = "linear";
  detail::require(rows >= 0, where, "rows must be non-negative, got " + std::to_string(rows));
  detail::require_positive(where, "in", in);
  detail::require_positive(where, "out", out);
  if (rows == 0) return;
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "w", w);
  detail::require_buffer(where, "y", y);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i)
    for (int j = 0; j < out; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int t = 0; t < in; ++t) acc += x[i * in + t] * w[int64_t(t) * out + j];
      y[i * out + j] = acc;
    }
}

void ffn(const FfnShape& s, const double* x, const double* u, const double* a, const double* v, const double* b,
         double* z) {
  const char* where = "ffn";
  detail::require(s.P >= 0, where, "P must be non-negative, got " + std::to_string(s.P));
  detail::require_positive(where, "in_channels", s.in_channels);
  detail::require_positive(where, "hidden_channels", s.hidden_channels);
  detail::require_positive(where, "out_channels", s.out_channels);
  activate(s.activation, 0.0);  // rejects an out-of-range enum value
  if (s.P == 0) return;
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "u", u);
  detail::require_buffer(where, "v", v);
  detail::require_buffer(where, "z", z);
  // Layer 1: Y = φ(X·U + a), the hidden tensor [P, αC].
  std::vector<double> hidden(size_t(s.P) * s.hidden_channels);
  linear(s.P, s.in_channels, s.hidden_channels, x, u, a, hidden.data());
  activate(s.activation, int64_t(hidden.size()), hidden.data(), hidden.data());
  // Layer 2: Z = Y·V + b.
  linear(s.P, s.hidden_channels, s.out_channels, hidden.data(), v, b, z);
}

}  // namespace convlab::ref
