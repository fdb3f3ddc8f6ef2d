// gpu/common/conv_geometry.cuh — a ConvProblem's sizes as plain ints a kernel can take.
//
// ConvProblem's member functions are host code; a kernel gets this flat copy,
// with the derived sizes (P, Q, T, K per group) computed once on the host.
#pragma once

#include "core/problems.hpp"

namespace convlab::gpu {

struct ConvGeometry {
  int N, H, W, C;         // input  x [N, H, W, C]          NHWC
  int K, R, S;            // weights w [K, R, S, T]          KRSC
  int P, Q;               // output y [N, P, Q, K]          NHWC
  int stride, pad, groups;
  int T;                  // input channels per group  (C / groups)
  int K_per_group;        // output channels per group (K / groups)
};

inline ConvGeometry geometry_of(const ConvProblem& p) {
  return {p.N, p.H, p.W, p.C, p.K, p.R, p.S, p.P(), p.Q(), p.stride, p.pad, p.groups, p.T(), p.K_per_group()};
}

}  // namespace convlab::gpu
