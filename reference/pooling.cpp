// reference/pooling.cpp — max pool, global average pool and BlurPool (see
// pooling.hpp).
#include "reference/pooling.hpp"

#include <cstdint>

#include "reference/validate.hpp"

namespace convlab::ref {

namespace {

void check_nhwc(const char* where, int N, int H, int W, int C, const double* x, double* y) {
  detail::require_positive(where, "N", N);
  detail::require_positive(where, "H", H);
  detail::require_positive(where, "W", W);
  detail::require_positive(where, "C", C);
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "y", y);
}

int64_t nhwc_index(int n, int h, int w, int c, int H, int W, int C) {
  return ((int64_t(n) * H + h) * W + w) * C + c;
}

}  // namespace

void maxpool2x2(int N, int H, int W, int C, const double* x, double* y) {
  check_nhwc("maxpool2x2", N, H, W, C, x, y);
  detail::require(H >= 2 && W >= 2, "maxpool2x2",
                  "H and W must be at least 2, got " + std::to_string(H) + "x" + std::to_string(W));
  const int P = H / 2, Q = W / 2;  // floor: an odd last row / column is dropped
  for (int n = 0; n < N; ++n)
    for (int p = 0; p < P; ++p)
      for (int q = 0; q < Q; ++q)
        for (int c = 0; c < C; ++c) {
          double m = x[nhwc_index(n, 2 * p, 2 * q, c, H, W, C)];
          for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) {
              const double v = x[nhwc_index(n, 2 * p + i, 2 * q + j, c, H, W, C)];
              if (v > m) m = v;
            }
          y[nhwc_index(n, p, q, c, P, Q, C)] = m;
        }
}

void global_avgpool(int N, int H, int W, int C, const double* x, double* y) {
  check_nhwc("global_avgpool", N, H, W, C, x, y);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) {
      double sum = 0.0;
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w) sum += x[nhwc_index(n, h, w, c, H, W, C)];
      y[int64_t(n) * C + c] = sum / (double(H) * W);
    }
}

int blurpool_output_size(int extent) {
  detail::require_positive("blurpool_output_size", "extent", extent);
  return (extent - 1) / 2 + 1;  // (extent + 2·pad − 3) / stride + 1 with pad 1, stride 2
}

void blurpool(int N, int H, int W, int C, const double* x, double* y) {
  check_nhwc("blurpool", N, H, W, C, x, y);
  const double binomial[3] = {1.0, 2.0, 1.0};  // B[i][j] = binomial[i]·binomial[j] / 16
  const int P = blurpool_output_size(H), Q = blurpool_output_size(W);
  for (int n = 0; n < N; ++n)
    for (int p = 0; p < P; ++p)
      for (int q = 0; q < Q; ++q)
        for (int c = 0; c < C; ++c) {
          double acc = 0.0;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              const int h = 2 * p + i - 1, w = 2 * q + j - 1;
              if (h < 0 || h >= H || w < 0 || w >= W) continue;  // zero padding
              acc += binomial[i] * binomial[j] / 16.0 * x[nhwc_index(n, h, w, c, H, W, C)];
            }
          y[nhwc_index(n, p, q, c, P, Q, C)] = acc;
        }
}

}  // namespace convlab::ref
