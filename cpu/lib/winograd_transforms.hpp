// cpu/lib/winograd_transforms.hpp — the matrices of Winograd's minimal
// filtering algorithms F(2,3) and F(4,3) (lesson 05), written once.
//
// F(m, 3) computes m outputs of a 3-tap correlation from α = m + 2 inputs:
//
//   y = Aᵀ [ (G g) ⊙ (Bᵀ d) ]        d: α inputs, g: 3 taps, y: m outputs
//
// and the 2-D F(m×m, 3×3) nests it: Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A.
// The element-wise product has α multiplies per 1-D tile (α² per 2-D tile)
// where direct correlation has 3·m (9·m²).
//
// Derivation (lessons/05-winograd/README.md): Toom–Cook interpolation. The
// product of the polynomials g(x) (degree 2) and d(x) (degree m−1) has degree
// m + 1, so it is fixed by its values at α = m + 2 points. F(2,3) evaluates
// at 0, 1, −1 and ∞ (the leading coefficient); F(4,3) at 0, ±1, ±2, ∞. Bᵀ
// and G evaluate, the element-wise product multiplies the evaluations, Aᵀ
// interpolates — transposed, because correlation is the transpose of
// polynomial multiplication. Bᵀ and Aᵀ are integer; G carries the
// interpolation's denominators, kept here as integer numerators over one
// common denominator so tests can check the algorithm exactly in integers
// (tests/lesson05_winograd_test.cpp), and the float kernels use num/den.
//
// Header-only, registers nothing. Used by cpu/conv2d/05a_winograd_f2x2_3x3.cpp,
// 05b_winograd_f4x4_3x3.cpp (through winograd_cpu.hpp) and the lesson 05 tests;
// the GPU kernels (gpu/lib/winograd.cuh) spell F(2x2,3x3) out by hand.
#pragma once

namespace convlab::winograd {

template <int M> struct Transform;  // F(M, 3): M outputs per 1-D tile

// F(2,3): points 0, 1, −1, ∞.
template <> struct Transform<2> {
  static constexpr int m = 2, r = 3, alpha = 4;
  static constexpr int BT[alpha][alpha] = {
      {1, 0, -1, 0},
      {0, 1, 1, 0},
      {0, -1, 1, 0},
      {0, 1, 0, -1},
  };
  static constexpr int G_den = 2;  // G = G_num / G_den
  static constexpr int G_num[alpha][r] = {
      {2, 0, 0},
      {1, 1, 1},
      {1, -1, 1},
      {0, 0, 2},
  };
  static constexpr int AT[m][alpha] = {
      {1, 1, 1, 0},
      {0, 1, -1, -1},
  };
};

// F(4,3): points 0, 1, −1, 2, −2, ∞.
template <> struct Transform<4> {
  static constexpr int m = 4, r = 3, alpha = 6;
  static constexpr int BT[alpha][alpha] = {
      {4, 0, -5, 0, 1, 0},
      {0, -4, -4, 1, 1, 0},
      {0, 4, -4, -1, 1, 0},
      {0, -2, -1, 2, 1, 0},
      {0, 2, -1, -2, 1, 0},
      {0, 4, 0, -5, 0, 1},
  };
  static constexpr int G_den = 24;  // rows: 1/4; −1/6 ×3; −1/6, 1/6, −1/6; 1/24, 1/12, 1/6; ...
  static constexpr int G_num[alpha][r] = {
      {6, 0, 0},
      {-4, -4, -4},
      {-4, 4, -4},
      {1, 2, 4},
      {1, -2, 4},
      {0, 0, 24},
  };
  static constexpr int AT[m][alpha] = {
      {1, 1, 1, 1, 1, 0},
      {0, 1, -1, 2, -2, 0},
      {0, 1, 1, 4, 4, 0},
      {0, 1, -1, 8, -8, 1},
  };
};

// G's entries as the float kernels use them (rounded once: 1/6 is not a binary fraction).
template <int M> constexpr float g_entry(int i, int j) {
  return float(Transform<M>::G_num[i][j]) / float(Transform<M>::G_den);
}

}  // namespace convlab::winograd
