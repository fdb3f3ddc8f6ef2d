// reference/softmax.hpp — the row softmax, the oracle of lesson 09's softmax rungs.
#pragma once

#include <cstdint>

namespace convlab::ref {

// y[i, j] = exp(x[i, j] − m_i) / Σ_t exp(x[i, t] − m_i),  m_i = max_t x[i, t]
//   x, y: [rows, cols] row-major, x == y allowed
// Subtracting the row maximum makes every exponent <= 0, so nothing overflows
// and the largest term is exactly 1: rows of any finite magnitude give finite
// results that sum to 1. A row containing +inf or NaN gives NaN (garbage in);
// −inf entries are masked positions and get probability 0, as long as one
// entry of the row is finite.
// Throws std::invalid_argument when rows < 0, cols <= 0 or a buffer is null.
void softmax_rows(int64_t rows, int cols, const double* x, double* y);

}  // namespace convlab::ref
