// reference/pooling.hpp — spatial reductions on NHWC activations: 2x2 max
// pooling, global average pooling, and BlurPool (anti-aliased stride-2
// downsampling, Zhang 2019, "Making Convolutional Networks Shift-Invariant
// Again").
#pragma once

namespace convlab::ref {

// ---- 2x2 max pool, stride 2 --------------------------------------------------
//   x: [N, H, W, C]            NHWC
//   y: [N, H/2, W/2, C]        NHWC, integer division
// y[n,p,q,c] = max of x[n, 2p+i, 2q+j, c] over i, j ∈ {0, 1}.
// Odd H or W: floor. The last row (and/or column) has no partner and is
// dropped, exactly as PyTorch's MaxPool2d(2) with ceil_mode=False; no padding.
// Throws std::invalid_argument unless N, C > 0 and H, W >= 2.
void maxpool2x2(int N, int H, int W, int C, const double* x, double* y);

// ---- global average pool -------------------------------------------------------
//   x: [N, H, W, C]   NHWC
//   y: [N, C]         y[n,c] = (1 / (H·W)) · Σ_{h,w} x[n,h,w,c]
void global_avgpool(int N, int H, int W, int C, const double* x, double* y);

// ---- BlurPool: depthwise binomial blur, stride 2 -------------------------------
// Every channel is convolved with the fixed 3x3 binomial filter
//
//            1 [1 2 1]
//   B  =  ---- [2 4 2]   = ([1,2,1] ⊗ [1,2,1]) / 16,
//           16 [1 2 1]
//
// sampled at stride 2 with ZERO padding 1 (a depthwise conv2d with R = S = 3,
// stride 2, pad 1 and this filter on every channel):
//   y[n,p,q,c] = Σ_{i,j ∈ 0..2} B[i][j] · x[n, 2p+i−1, 2q+j−1, c]   (0 outside x)
//   x: [N, H, W, C]                    NHWC
//   y: [N, (H−1)/2 + 1, (W−1)/2 + 1, C] NHWC, i.e. ceil(H/2) × ceil(W/2)
// Output (p, q) is centred on input (2p, 2q). Zero padding is a choice: Zhang's
// reference implementation pads by reflection. With zeros, the border outputs
// see part of the filter fall off the image and are attenuated: a constant
// image c comes out as c in the interior, 12/16·c on an edge, 9/16·c in a
// corner. The top row and left column of outputs are always such edges; the
// bottom row (right column) only when H (W) is odd, since for even H the last
// centre 2p = H − 2 keeps all three taps inside. Every blurpool in convlab
// (ConvFirst's stride-2 block included) uses this zero-padded definition.
// Throws std::invalid_argument unless N, H, W, C > 0.
int blurpool_output_size(int extent);  // (extent − 1)/2 + 1; throws unless extent > 0
void blurpool(int N, int H, int W, int C, const double* x, double* y);

}  // namespace convlab::ref
