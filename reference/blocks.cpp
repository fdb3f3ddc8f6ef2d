// reference/blocks.cpp — the ConvFirst and MBConv blocks (see blocks.hpp).
//
// Both are written with their own plain loops rather than by calling the
// layer references, so that the tests which rebuild each block from conv2d,
// gemm, blurpool and squeeze_excitation compare two independent codes.
#include "reference/blocks.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "reference/validate.hpp"

namespace convlab::ref {

namespace {

int64_t nhwc_index(int n, int h, int w, int c, int H, int W, int C) {
  return ((int64_t(n) * H + h) * W + w) * C + c;
}

// ---- ConvFirst ----------------------------------------------------------------

void check_convfirst(const ConvFirstShape& s, const ConvFirstWeights& wt, const double* x, const double* y) {
  const char* where = "convfirst_block";
  detail::require_positive(where, "N", s.N);
  detail::require_positive(where, "H", s.H);
  detail::require_positive(where, "W", s.W);
  detail::require_positive(where, "in_channels", s.in_channels);
  detail::require_positive(where, "hidden_channels", s.hidden_channels);
  detail::require_positive(where, "out_channels", s.out_channels);
  detail::require_positive(where, "group_width", s.group_width);
  detail::require(s.stride == 1 || s.stride == 2, where, "stride must be 1 or 2, got " + std::to_string(s.stride));
  detail::require(s.in_channels % s.group_width == 0, where,
                  "group width " + std::to_string(s.group_width) + " does not divide in_channels " +
                      std::to_string(s.in_channels));
  detail::require(s.stride == 2 || s.out_channels == s.in_channels, where,
                  "the stride-1 block has an identity shortcut, so out_channels (" + std::to_string(s.out_channels) +
                      ") must equal in_channels (" + std::to_string(s.in_channels) + ")");
  activate(s.activation, 0.0);  // rejects an out-of-range enum value
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "y", y);
  detail::require_buffer(where, "conv_w", wt.conv_w);
  detail::require_buffer(where, "expand_w", wt.expand_w);
  detail::require_buffer(where, "project_w", wt.project_w);
  if (s.has_projection_shortcut()) {
    detail::require_buffer(where, "shortcut_w", wt.shortcut_w);
  } else {
    detail::require(wt.shortcut_w == nullptr && wt.shortcut_b == nullptr, where,
                    "shortcut weights were given but this block's shortcut is the identity "
                    "(stride 1, or stride 2 with out_channels == in_channels)");
  }
}

// t[0..C) = the grouped 3x3 conv (pad 1, stride 1) plus its bias at input
// position (n, h, w). Output channel k belongs to group k / group_width (the
// conv keeps the channel count, so each group has group_width outputs) and
// reads input channels of that group only.
void grouped_conv3x3_at(const ConvFirstShape& s, const ConvFirstWeights& wt, const double* x, int n, int h, int w,
                        double* t) {
  const int C = s.in_channels, G = s.group_width;
  for (int k = 0; k < C; ++k) {
    const int first_channel = (k / G) * G;
    double acc = wt.conv_b ? wt.conv_b[k] : 0.0;
    for (int r = 0; r < 3; ++r)
      for (int q = 0; q < 3; ++q) {
        const int ih = h + r - 1, iw = w + q - 1;
        if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;  // zero padding
        for (int c = 0; c < G; ++c)
          acc += wt.conv_w[((int64_t(k) * 3 + r) * 3 + q) * G + c] *
                 x[nhwc_index(n, ih, iw, first_channel + c, s.H, s.W, C)];
      }
    t[k] = acc;
  }
}

}  // namespace

void convfirst_block(const ConvFirstShape& s, const ConvFirstWeights& wt, const double* x, double* y) {
  check_convfirst(s, wt, x, y);
  const int C = s.in_channels, Hd = s.hidden_channels, Co = s.out_channels, P = s.P(), Q = s.Q();
  const double binomial[3] = {1.0, 2.0, 1.0};  // BlurPool filter: binomial[i]·binomial[j] / 16

#pragma omp parallel for collapse(2) schedule(static)
  for (int n = 0; n < s.N; ++n)
    for (int p = 0; p < P; ++p) {
      std::vector<double> conv_out(C), at_pixel(C), shortcut_in(C), hidden(Hd);
      for (int q = 0; q < Q; ++q) {
        // 1. The conv output feeding this output pixel (at_pixel) and the
        //    block input feeding its shortcut (shortcut_in).
        if (s.stride == 1) {
          grouped_conv3x3_at(s, wt, x, n, p, q, at_pixel.data());
          for (int c = 0; c < C; ++c) shortcut_in[c] = x[nhwc_index(n, p, q, c, s.H, s.W, C)];
        } else {
          // BlurPool of the conv output: the 3x3 binomial window centred on
          // (2p, 2q), zero where the window leaves the image. The conv is
          // re-evaluated at each of the 9 positions; a fused kernel would
          // share them between neighbouring outputs.
          for (int c = 0; c < C; ++c) at_pixel[c] = shortcut_in[c] = 0.0;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              const int h = 2 * p + i - 1, w = 2 * q + j - 1;
              if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
              const double tap = binomial[i] * binomial[j] / 16.0;
              grouped_conv3x3_at(s, wt, x, n, h, w, conv_out.data());
              for (int c = 0; c < C; ++c) {
                at_pixel[c] += tap * conv_out[c];
                shortcut_in[c] += tap * x[nhwc_index(n, h, w, c, s.H, s.W, C)];
              }
            }
        }
        // 2. FFN layer 1: hidden = φ(at_pixel·U + a).
        for (int j = 0; j < Hd; ++j) {
          double acc = wt.expand_b ? wt.expand_b[j] : 0.0;
          for (int c = 0; c < C; ++c) acc += at_pixel[c] * wt.expand_w[int64_t(c) * Hd + j];
          hidden[j] = activate(s.activation, acc);
        }
        // 3. FFN layer 2 plus the shortcut (identity or 1x1 projection).
        for (int o = 0; o < Co; ++o) {
          double acc = wt.project_b ? wt.project_b[o] : 0.0;
          for (int j = 0; j < Hd; ++j) acc += hidden[j] * wt.project_w[int64_t(j) * Co + o];
          if (s.has_projection_shortcut()) {
            acc += wt.shortcut_b ? wt.shortcut_b[o] : 0.0;
            for (int c = 0; c < C; ++c) acc += shortcut_in[c] * wt.shortcut_w[int64_t(c) * Co + o];
          } else {
            acc += shortcut_in[o];  // Cout == C here
          }
          y[nhwc_index(n, p, q, o, P, Q, Co)] = acc;
        }
      }
    }
}

// ---- MBConv ---------------------------------------------------------------------

void mbconv_block(const MBConvShape& s, const MBConvWeights& wt, const double* x, double* y) {
  const char* where = "mbconv_block";
  detail::require_positive(where, "N", s.N);
  detail::require_positive(where, "H", s.H);
  detail::require_positive(where, "W", s.W);
  detail::require_positive(where, "in_channels", s.in_channels);
  detail::require_positive(where, "hidden_channels", s.hidden_channels);
  detail::require_positive(where, "out_channels", s.out_channels);
  detail::require(s.se_channels >= 0, where, "se_channels must be 0 (no SE) or positive, got " +
                                                 std::to_string(s.se_channels));
  detail::require(s.stride == 1 || s.stride == 2, where, "stride must be 1 or 2, got " + std::to_string(s.stride));
  detail::require(s.kernel_size == 3 || s.kernel_size == 5, where,
                  "kernel_size must be 3 or 5, got " + std::to_string(s.kernel_size));
  detail::require(wt.expand_w != nullptr || s.hidden_channels == s.in_channels, where,
                  "without an expand layer (expand_w == nullptr) hidden_channels (" +
                      std::to_string(s.hidden_channels) + ") must equal in_channels (" +
                      std::to_string(s.in_channels) + ")");
  activate(s.activation, 0.0);  // reject out-of-range enum values
  activate(s.se_activation, 0.0);
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "y", y);
  detail::require_buffer(where, "depthwise_w", wt.depthwise_w);
  if (s.has_se()) {
    detail::require_buffer(where, "se_reduce_w", wt.se_reduce_w);
    detail::require_buffer(where, "se_expand_w", wt.se_expand_w);
  } else {
    detail::require(wt.se_reduce_w == nullptr && wt.se_reduce_b == nullptr && wt.se_expand_w == nullptr &&
                        wt.se_expand_b == nullptr,
                    where, "SE weights were given but se_channels is 0 (no squeeze-excitation)");
  }
  detail::require_buffer(where, "project_w", wt.project_w);

  const int C = s.in_channels, Hd = s.hidden_channels, Cr = s.se_channels, Co = s.out_channels;
  const int P = s.P(), Q = s.Q(), K = s.kernel_size, pad = s.pad();
  // Images are independent (the SE pools each one alone): one per thread.
#pragma omp parallel for schedule(dynamic)
  for (int n = 0; n < s.N; ++n) {
    // 1. Expand: e = φ(x·We + be) over this image, [H, W, hidden].
    std::vector<double> expanded(size_t(s.H) * s.W * Hd);
    for (int h = 0; h < s.H; ++h)
      for (int w = 0; w < s.W; ++w)
        for (int j = 0; j < Hd; ++j) {
          const double* xp = x + nhwc_index(n, h, w, 0, s.H, s.W, C);
          double value;
          if (wt.expand_w == nullptr) {
            value = xp[j];  // no expand layer: hidden == C
          } else {
            double acc = wt.expand_b ? wt.expand_b[j] : 0.0;
            for (int c = 0; c < C; ++c) acc += xp[c] * wt.expand_w[int64_t(c) * Hd + j];
            value = activate(s.activation, acc);
          }
          expanded[nhwc_index(0, h, w, j, s.H, s.W, Hd)] = value;
        }
    // 2. Depthwise KxK, pad K/2, stride s: d = φ(dw(e) + bd), [P, Q, hidden].
    std::vector<double> depthwise(size_t(P) * Q * Hd);
    for (int p = 0; p < P; ++p)
      for (int q = 0; q < Q; ++q)
        for (int j = 0; j < Hd; ++j) {
          double acc = wt.depthwise_b ? wt.depthwise_b[j] : 0.0;
          for (int r = 0; r < K; ++r)
            for (int t = 0; t < K; ++t) {
              const int h = p * s.stride + r - pad, w = q * s.stride + t - pad;
              if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;  // zero padding
              acc += wt.depthwise_w[(int64_t(j) * K + r) * K + t] * expanded[nhwc_index(0, h, w, j, s.H, s.W, Hd)];
            }
          depthwise[nhwc_index(0, p, q, j, P, Q, Hd)] = activate(s.activation, acc);
        }
    // 3. Squeeze-excitation on the hidden channels: one gate per channel
    //    (all ones without SE).
    std::vector<double> mean(Hd, 0.0), reduced(Cr), gate(Hd, 1.0);
    for (int j = 0; j < Hd && s.has_se(); ++j) {
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q) mean[j] += depthwise[nhwc_index(0, p, q, j, P, Q, Hd)];
      mean[j] /= double(P) * Q;
    }
    for (int r = 0; r < Cr; ++r) {
      double acc = wt.se_reduce_b ? wt.se_reduce_b[r] : 0.0;
      for (int j = 0; j < Hd; ++j) acc += mean[j] * wt.se_reduce_w[int64_t(j) * Cr + r];
      reduced[r] = activate(s.se_activation, acc);
    }
    for (int j = 0; j < Hd && s.has_se(); ++j) {
      double acc = wt.se_expand_b ? wt.se_expand_b[j] : 0.0;
      for (int r = 0; r < Cr; ++r) acc += reduced[r] * wt.se_expand_w[int64_t(r) * Hd + j];
      gate[j] = sigmoid(acc);
    }
    // 4. Project (gated hidden · Wp + bp, no activation) and the residual.
    for (int p = 0; p < P; ++p)
      for (int q = 0; q < Q; ++q)
        for (int o = 0; o < Co; ++o) {
          double acc = wt.project_b ? wt.project_b[o] : 0.0;
          for (int j = 0; j < Hd; ++j)
            acc += depthwise[nhwc_index(0, p, q, j, P, Q, Hd)] * gate[j] * wt.project_w[int64_t(j) * Co + o];
          if (s.has_residual()) acc += x[nhwc_index(n, p, q, o, s.H, s.W, C)];
          y[nhwc_index(n, p, q, o, P, Q, Co)] = acc;
        }
  }
}

}  // namespace convlab::ref
