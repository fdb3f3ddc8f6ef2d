// reference/squeeze_excitation.cpp — squeeze-and-excitation (see
// squeeze_excitation.hpp).
#include "reference/squeeze_excitation.hpp"

#include <cstdint>
#include <vector>

#include "reference/validate.hpp"

namespace convlab::ref {

void squeeze_excitation(const SqueezeExcitationShape& s, const SqueezeExcitationWeights& wt, const double* x,
                        double* y) {
  const char* where = "squeeze_excitation";
  detail::require_positive(where, "N", s.N);
  detail::require_positive(where, "H", s.H);
  detail::require_positive(where, "W", s.W);
  detail::require_positive(where, "channels", s.channels);
  detail::require_positive(where, "reduced_channels", s.reduced_channels);
  activate(s.activation, 0.0);  // rejects an out-of-range enum value
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "y", y);
  detail::require_buffer(where, "w_reduce", wt.w_reduce);
  detail::require_buffer(where, "w_expand", wt.w_expand);

  const int C = s.channels, Cr = s.reduced_channels;
  const int64_t pixels = int64_t(s.H) * s.W;
  std::vector<double> mean(C), reduced(Cr), gate(C);
  for (int n = 0; n < s.N; ++n) {
    const double* xn = x + n * pixels * C;
    double* yn = y + n * pixels * C;
    // Squeeze: per-channel mean over the image.
    for (int c = 0; c < C; ++c) {
      double sum = 0.0;
      for (int64_t p = 0; p < pixels; ++p) sum += xn[p * C + c];
      mean[c] = sum / double(pixels);
    }
    // FC C → Cr, then ψ.
    for (int r = 0; r < Cr; ++r) {
      double acc = wt.b_reduce ? wt.b_reduce[r] : 0.0;
      for (int c = 0; c < C; ++c) acc += mean[c] * wt.w_reduce[int64_t(c) * Cr + r];
      reduced[r] = activate(s.activation, acc);
    }
    // FC Cr → C, then the sigmoid gate.
    for (int c = 0; c < C; ++c) {
      double acc = wt.b_expand ? wt.b_expand[c] : 0.0;
      for (int r = 0; r < Cr; ++r) acc += reduced[r] * wt.w_expand[int64_t(r) * C + c];
      gate[c] = sigmoid(acc);
    }
    // Excite: scale every pixel's channels (safe in place: mean is already taken).
    for (int64_t p = 0; p < pixels; ++p)
      for (int c = 0; c < C; ++c) yn[p * C + c] = xn[p * C + c] * gate[c];
  }
}

}  // namespace convlab::ref
