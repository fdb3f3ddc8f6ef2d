// reference/tucker.hpp — Tucker-format convolution (TDC, PPoPP 2023) and the
// truncated HOSVD that produces it from a dense kernel.
//
// A dense KRSC kernel W[k, r, s, c] is approximated in Tucker-2 form, the
// spatial modes left alone:
//
//   W[k, r, s, c] ≈ Σ_{j < Rk} Σ_{i < Rc} u_out[k, j] · core[j, r, s, i] · u_in[c, i]
//
//   u_in:  [C, Rc]          input-channel factor (orthonormal columns)
//   core:  [Rk, R, S, Rc]   KRSC core kernel
//   u_out: [K, Rk]          output-channel factor (orthonormal columns)
//
// and the convolution with W becomes three smaller ones (the order of sums
// swapped):
//   z1[n,h,w,i]  = Σ_c x[n,h,w,c] · u_in[c, i]        1x1 conv C → Rc   (GEMM with u_in as the B operand)
//   z2           = conv2d(z1, core)                  R×S conv Rc → Rk, the dense conv's stride and pad
//   y[n,p,q,k]   = Σ_j z2[n,p,q,j] · u_out[k, j]      1x1 conv Rk → K   (u_out IS its KRSC weight [K,1,1,Rk])
// The middle "core conv" is what TDC's GPU kernel optimizes.
//
// Only dense convolutions (groups == 1) are decomposed.
#pragma once

#include "reference/conv2d.hpp"

namespace convlab::ref {

// Truncated HOSVD of the dense kernel w of problem p (KRSC [K, R, S, C]):
//   u_out = the Rk leading left singular vectors of the mode-K unfolding
//           W_(K) [K, R·S·C] (row k = w[k, :, :, :]);
//   u_in  = the Rc leading left singular vectors of the mode-C unfolding
//           W_(C) [C, K·R·S] (row c = every w[·, ·, ·, c]);
//   core[j, r, s, i] = Σ_k Σ_c u_out[k, j] · w[k, r, s, c] · u_in[c, i]
//           (w projected onto both subspaces).
// Singular vectors come from Eigen's JacobiSVD (full U, so Rk may reach K even
// when K > R·S·C). Each vector's sign is fixed so that its entry of largest
// magnitude (the first one, on ties) is positive, which makes the factors
// reproducible across SVD implementations up to ties in singular values.
// At full ranks (Rc == C, Rk == K) both factors are square orthogonal and
// tucker_reconstruct gives back w up to rounding; truncated, it gives w's
// projection, the usual quasi-optimal Tucker approximation.
// Throws std::invalid_argument when !p.valid(), p.groups != 1, a rank is
// outside [1, C] / [1, K], or a buffer is null.
void tucker_hosvd(const ConvShape& p, int rank_c, int rank_k, const double* w, double* u_in, double* core,
                  double* u_out);

// w[k, r, s, c] = Σ_{j,i} u_out[k, j] · core[j, r, s, i] · u_in[c, i]; buffers
// as in tucker_hosvd, w is [K, R, S, C]. Same checks.
void tucker_reconstruct(const ConvShape& p, int rank_c, int rank_k, const double* u_in, const double* core,
                        const double* u_out, double* w);

// The three-stage Tucker convolution described above:
//   x: [N, H, W, C]    NHWC
//   y: [N, P, Q, K]    NHWC, P and Q as in p (the core conv carries stride and pad)
// For any factors it equals conv2d(p, x, tucker_reconstruct(...)) exactly in
// exact arithmetic. Same checks as tucker_hosvd.
void tucker_conv2d(const ConvShape& p, int rank_c, int rank_k, const double* x, const double* u_in,
                   const double* core, const double* u_out, double* y);

}  // namespace convlab::ref
