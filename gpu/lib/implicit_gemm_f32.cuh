// gpu/lib/implicit_gemm_f32.cuh — lesson 04's fp32 implicit-GEMM conv kernel, shared.
//
// The kernel of gpu/conv2d/04a_implicit_gemm.cu (read that file's header
// for the idea), kept in a header so that lesson 07's fused layer
// (gpu/conv_pool/07b_fused.cu) runs the very same main loop. It is
// parameterised by an output policy Out:
//   Out::pixel(cg, m)  which output pixel GEMM row m is (the row order)
//   out.store<kVec>(cg, M, group, acc, m_piece, k_piece)
//                      what to do with the thread's finished 8×8 accumulators
// StoreY (lesson 04) stores them to y; lesson 07's policy pools them first.
#pragma once

#include <climits>
#include <cstdint>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"

namespace convlab::gpu::igemm_f32 {

// ---- tunables (rung 03m's tile shapes before its re-tiling: rung 03l's) ------------------
constexpr int kBlockM = 128, kBlockN = 128, kBlockK = 8;  // block tile of Y, and the reduction slice
constexpr int kWarpM = 64, kWarpN = 32;                   // warp tile of Y
constexpr int kLanesM = 8, kLanesN = 4;                   // a warp's lanes as an 8×4 grid
constexpr int kPiece = 4;                                 // a lane's outputs come in 4×4 pieces (float4 wide)
constexpr int kPad = 4;                                   // floats of padding per As / Bs row
constexpr int kStages = 2;                                // shared-memory buffers
// derived
constexpr int kWarpsM = kBlockM / kWarpM, kWarpsN = kBlockN / kWarpN;  // 2 × 4 warps
constexpr int kThreads = kWarpsM * kWarpsN * 32;                        // 256
constexpr int kRepeatM = kWarpM / (kLanesM * kPiece);                   // 2 pieces down
constexpr int kRepeatN = kWarpN / (kLanesN * kPiece);                   // 2 pieces across
constexpr int kThreadM = kRepeatM * kPiece, kThreadN = kRepeatN * kPiece;  // 8 × 8 outputs per thread
constexpr int kVec = 4;                                   // a loader fetches 4 consecutive reduction indices
constexpr int kOutside = -(1 << 29);                      // ih0 of a row past M: every tap tests "outside"
static_assert(kBlockM % kWarpM == 0 && kBlockN % kWarpN == 0, "warp tiles must tile the block tile");
static_assert(kLanesM * kLanesN == 32, "the lane grid is one warp");
static_assert(kWarpM % (kLanesM * kPiece) == 0 && kWarpN % (kLanesN * kPiece) == 0,
              "the lanes' 4×4 pieces must tile the warp tile");
static_assert(kPiece == 4 && kVec == 4, "fragments, loads and stores are float4s");
static_assert(kBlockM * kBlockK / kVec == kThreads && kBlockN * kBlockK / kVec == kThreads,
              "each thread fetches exactly one float4 of the A tile and one of the B tile per slice");
static_assert(kBlockK / kVec == 2, "a tile row (8 reduction indices) is fetched by 2 threads: row = t / 2");
static_assert(kPad % 4 == 0, "padding must keep every shared row 16-byte aligned for float4 reads");
static_assert((kBlockM + kPad) % 32 == 4 && (kBlockN + kPad) % 32 == 4,
              "row stride ≡ 4 banks: the transposed stores of threads t and t+1 (rows j and j+4) "
              "land 16 banks apart, so a warp's 32 stores hit 32 banks");
static_assert(kStages == 2, "the loop below alternates between exactly two stages");
static_assert(kStages * kBlockK * (kBlockM + kBlockN + 2 * kPad) * sizeof(float) <= 48 * 1024,
              "static shared memory is capped at 48 KiB (and 2 blocks must fit in an SM)");

// Where reduction index j = (r·S + s)·T + t sits: carried from slice to slice
// by additions instead of being divided out every time.
struct TapCursor {
  int r, s, t;

  __device__ static TapCursor at(int j, int S, int T) {  // the one division, at the start
    const int tap = j / T;
    return {tap / S, tap % S, j % T};
  }
  // Plain form: *this = at(j + by).  For T ≥ by the loop runs at most once.
  __device__ void advance(int by, int S, int T) {
    t += by;
    while (t >= T) {
      t -= T;
      if (++s == S) {
        s = 0;
        ++r;
      }
    }
  }
};

// One thread's share of a slice, between the global fetch and the shared store.
struct SliceInFlight {
  float4 a;  // A[m][j..j+3],  m = row0 + a_row, j = k0 + a_col
  float4 b;  // B[j..j+3][k] = w[g·Kg + k][j..j+3],  k = col0 + b_row
};

// Kernel contract:
//   x [N,H,W,C] NHWC, w [K,R,S,T] KRSC, y [N,P,Q,K] NHWC, fp32; 1-D blocks of
//   256 threads; grid (ceil(Kg/128), ceil(M/128), groups). Block (bx, by, g)
//   owns the 128×128 tile of group g's Y at (by·128, bx·128), i.e. outputs
//   y[m, g·Kg + k] for m in by·128 + [0,128), k in bx·128 + [0,128); warps
//   and lanes split it as rung 03l does (8×8 outputs per thread).
//   kVectorized = true requires T % 4 == 0, Kg % 4 == 0 and 16-byte aligned
//   x, w, y; false requires nothing.
//
//         reduction j →  (r,s,t) in KRSC order               Kg →
//        ┌──────────────────────────┐               ┌──────────────┐
//      m │ A tile 128×8: thread t     │    · B tile  │ 8×128: thread t fetches
//      ↓ │ fetches row t/2,           │      j ↓     │ w row col0+t/2, j..j+3
//        │ j = k0 + (t%2)·4 ..+3      │              └──────────────┘
//        │ from x through the view    │   both stored transposed: As[k][m], Bs[k][n]
//        └──────────────────────────┘
//
//   Out says which output pixel GEMM row m is (Out::pixel) and what happens
//   to the finished accumulators (out.store): StoreY below writes them to y.
//
//   Edge duties: A elements in the padding, past RST or in rows past M are
//   fetched as 0; B elements in columns past Kg or past RST as 0, so a partial
//   last slice adds zeros. Every thread fetches and meets every barrier;
//   outputs past M or Kg are not stored (the Out policy's duty).
template <bool kVectorized, class Out>
__global__ void __launch_bounds__(kThreads, 2)
    implicit_gemm_f32(ConvGeometry cg, int M, const float* __restrict__ x, const float* __restrict__ w, Out out) {
  __shared__ __align__(16) float As[kStages][kBlockK][kBlockM + kPad];  // As[stage][j][m]: A transposed
  __shared__ __align__(16) float Bs[kStages][kBlockK][kBlockN + kPad];  // Bs[stage][j][k]: w transposed

  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int group = blockIdx.z;
  const int row0 = blockIdx.y * kBlockM, col0 = blockIdx.x * kBlockN;
  const int warp_row = (warp / kWarpsN) * kWarpM, warp_col = (warp % kWarpsN) * kWarpN;
  const int lane_row = (lane / kLanesN) * kPiece, lane_col = (lane % kLanesN) * kPiece;
  const int a_row = t / (kBlockK / kVec), a_col = (t % (kBlockK / kVec)) * kVec;  // my float4 of the A tile
  const int b_row = t / (kBlockK / kVec), b_col = a_col;                           // my float4 of the B tile
  const int depth = cg.R * cg.S * cg.T;  // RST

  // ---- the view, set up once per thread ------------------------------------------
  // TUTORIAL: plain form of one A element, as lesson 02's im2col computes it:
  //
  //   n = m / (P·Q);  p = m / Q % P;  q = m % Q;           tap = j / T;  r = tap / S;  s = tap % S;  t = j % T
  //   ih = p·stride + r − pad;  iw = q·stride + s − pad
  //   A[m, j] = (0 ≤ ih < H && 0 ≤ iw < W) ? x[((n·H + ih)·W + iw)·C + g·T + t] : 0
  //
  // The m half never changes for this thread: decode it here. The j half is the cursor.
  int ih0 = kOutside, iw0 = 0;  // input row / column of tap (0, 0); kOutside: row past M
  const float* image = x;       // x[n, 0, 0, g·T]
  {
    const int m = row0 + a_row;
    if (m < M) {
      const OutputPixel px = Out::pixel(cg, m);  // lesson 04: pixel_order; lesson 07: window_order
      ih0 = px.p * cg.stride - cg.pad;
      iw0 = px.q * cg.stride - cg.pad;
      image = x + int64_t(px.n) * cg.H * cg.W * cg.C + group * cg.T;
    }
  }
  TapCursor a_tap = TapCursor::at(a_col, cg.S, cg.T);  // for j = k0 + a_col; k0 = 0 now

  const int k_out = col0 + b_row;                                         // my column of B (row of w)
  const float* w_row = w + int64_t(group * cg.K_per_group + k_out) * depth;  // used only when k_out < Kg
  const bool w_row_in = k_out < cg.K_per_group;

  // A[m][j..j+3] through the view; `a_tap` is j's (r, s, t).
  const auto fetch_a = [&](int j) -> float4 {
    if constexpr (kVectorized) {
      // T % 4 == 0 and j % 4 == 0: the 4 values share one tap and are 4 consecutive channels.
      const int ih = ih0 + a_tap.r, iw = iw0 + a_tap.s;
      const bool in = a_tap.r < cg.R && unsigned(ih) < unsigned(cg.H) && unsigned(iw) < unsigned(cg.W);
      return in ? *reinterpret_cast<const float4*>(image + (ih * cg.W + iw) * cg.C + a_tap.t)
                : make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
      float v[kVec];
      TapCursor c = a_tap;
#pragma unroll
      for (int e = 0; e < kVec; ++e, c.advance(1, cg.S, cg.T)) {
        const int ih = ih0 + c.r, iw = iw0 + c.s;
        const bool in = c.r < cg.R && unsigned(ih) < unsigned(cg.H) && unsigned(iw) < unsigned(cg.W);
        v[e] = in ? image[(ih * cg.W + iw) * cg.C + c.t] : 0.f;
      }
      return make_float4(v[0], v[1], v[2], v[3]);
    }
  };
  // B[j..j+3][k_out] = w[g·Kg + k_out][j..j+3]: a plain row of w.
  const auto fetch_b = [&](int j) -> float4 {
    if constexpr (kVectorized) {  // depth % 4 == 0: all four inside or none
      return (w_row_in && j < depth) ? *reinterpret_cast<const float4*>(w_row + j) : make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
      return make_float4(w_row_in && j + 0 < depth ? w_row[j + 0] : 0.f, w_row_in && j + 1 < depth ? w_row[j + 1] : 0.f,
                         w_row_in && j + 2 < depth ? w_row[j + 2] : 0.f, w_row_in && j + 3 < depth ? w_row[j + 3] : 0.f);
    }
  };
  // Fetches slice k0 and moves the cursor on to slice k0 + kBlockK. Slices are fetched in order, once each.
  const auto fetch = [&](int k0) {
    const SliceInFlight s{fetch_a(k0 + a_col), fetch_b(k0 + b_col)};
    a_tap.advance(kBlockK, cg.S, cg.T);
    return s;
  };
  const auto store = [&](int stage, const SliceInFlight& s) {
    As[stage][a_col + 0][a_row] = s.a.x;  // both operands are transposed on their way into shared memory
    As[stage][a_col + 1][a_row] = s.a.y;
    As[stage][a_col + 2][a_row] = s.a.z;
    As[stage][a_col + 3][a_row] = s.a.w;
    Bs[stage][b_col + 0][b_row] = s.b.x;
    Bs[stage][b_col + 1][b_row] = s.b.y;
    Bs[stage][b_col + 2][b_row] = s.b.z;
    Bs[stage][b_col + 3][b_row] = s.b.w;
  };
  // Fragments of k-step kk, exactly rung 03m's.
  float a[2][kThreadM], b[2][kThreadN];
  const auto read_fragments = [&](int stage, int kk, float* a_frag, float* b_frag) {
#pragma unroll
    for (int i = 0; i < kRepeatM; ++i)
      *reinterpret_cast<float4*>(&a_frag[i * kPiece]) =
          *reinterpret_cast<const float4*>(&As[stage][kk][warp_row + i * kLanesM * kPiece + lane_row]);
#pragma unroll
    for (int j = 0; j < kRepeatN; ++j)
      *reinterpret_cast<float4*>(&b_frag[j * kPiece]) =
          *reinterpret_cast<const float4*>(&Bs[stage][kk][warp_col + j * kLanesN * kPiece + lane_col]);
  };

  float acc[kThreadM][kThreadN] = {};

  store(0, fetch(0));  // prologue: slice 0 into stage 0
  __syncthreads();

  // The main loop is rung 03m's, line for line (see there for why one barrier suffices).
  int stage = 0;
  for (int k0 = 0; k0 < depth; k0 += kBlockK, stage ^= 1) {
    const bool has_next = k0 + kBlockK < depth;  // the same for every thread: no divergence
    SliceInFlight next{};
    if (has_next) next = fetch(k0 + kBlockK);  // issued now, consumed after the math

    read_fragments(stage, 0, a[0], b[0]);
#pragma unroll
    for (int kk = 0; kk < kBlockK; ++kk) {
      if (kk + 1 < kBlockK) read_fragments(stage, kk + 1, a[(kk + 1) % 2], b[(kk + 1) % 2]);
#pragma unroll
      for (int i = 0; i < kThreadM; ++i)
#pragma unroll
        for (int j = 0; j < kThreadN; ++j) acc[i][j] += a[kk % 2][i] * b[kk % 2][j];
    }

    if (has_next) store(stage ^ 1, next);
    __syncthreads();
  }

  // The thread's 8×8 outputs are 2×2 pieces of 4×4: rows m_piece[i] + 0..3, columns k_piece[j] + 0..3.
  int m_piece[kRepeatM], k_piece[kRepeatN];
#pragma unroll
  for (int i = 0; i < kRepeatM; ++i) m_piece[i] = row0 + warp_row + i * kLanesM * kPiece + lane_row;
#pragma unroll
  for (int j = 0; j < kRepeatN; ++j) k_piece[j] = col0 + warp_col + j * kLanesN * kPiece + lane_col;
  out.template store<kVectorized>(cg, M, group, acc, m_piece, k_piece);
}

// ---- the plain output: lesson 04's --------------------------------------------------
// Rows in pixel order; Y[m][k] → y[m·K + g·Kg + k]: rows of Y are whole rows of y, Kg of its K columns.
struct StoreY {
  float* y;  // [N, P, Q, K] NHWC

  __device__ static OutputPixel pixel(const ConvGeometry& cg, int m) { return pixel_order(cg, m); }

  template <bool kVectorized>
  __device__ void store(const ConvGeometry& cg, int M, int group, const float (&acc)[kThreadM][kThreadN],
                        const int (&m_piece)[kRepeatM], const int (&k_piece)[kRepeatN]) const {
    float* y_group = y + group * cg.K_per_group;
#pragma unroll
    for (int i = 0; i < kThreadM; ++i) {
      const int m = m_piece[i / kPiece] + i % kPiece;
      if (m >= M) continue;
      float* y_row = y_group + int64_t(m) * cg.K;
#pragma unroll
      for (int j = 0; j < kThreadN; j += kPiece) {
        const int k = k_piece[j / kPiece];
        if constexpr (kVectorized) {  // Kg % 4 == 0: all four inside or none; K % 4 == 0: aligned
          if (k < cg.K_per_group)
            *reinterpret_cast<float4*>(y_row + k) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        } else {
#pragma unroll
          for (int e = 0; e < kPiece; ++e)
            if (k + e < cg.K_per_group) y_row[k + e] = acc[i][j + e];
        }
      }
    }
  }
};

// Launches the kernel for M GEMM rows (rows in Out's order) on `stream` (default: the
// default stream; bench/tdc_oracle.cu passes its own, to capture the launch in a graph).
// vectorized requires T % 4 == 0, Kg % 4 == 0 and 16-byte aligned x, w and outputs.
template <class Out>
void launch(const ConvGeometry& cg, int M, const float* x, const float* w, Out out, bool vectorized,
            cudaStream_t stream = 0) {
  const dim3 grid(unsigned(ceil_div(cg.K_per_group, kBlockN)), unsigned(ceil_div(M, kBlockM)), unsigned(cg.groups));
  if (vectorized)
    implicit_gemm_f32<true, Out><<<grid, kThreads, 0, stream>>>(cg, M, x, w, out);
  else
    implicit_gemm_f32<false, Out><<<grid, kThreads, 0, stream>>>(cg, M, x, w, out);
  check_launch("implicit_gemm_f32");
}

// The limits of launch(): int indexing and the grid's 16-bit y and z.
inline bool fits(int64_t M, const ConvProblem& p) {
  return M <= INT_MAX && ceil_div<int64_t>(M, kBlockM) <= kMaxGridYZ && int64_t(p.H) * p.W * p.C <= INT_MAX &&
         p.groups <= kMaxGridYZ;
}

}  // namespace convlab::gpu::igemm_f32
