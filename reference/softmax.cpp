// reference/softmax.cpp — the row softmax declared in softmax.hpp.
#include "reference/softmax.hpp"

#include <cmath>
#include <string>

#include "reference/validate.hpp"

namespace convlab::ref {

void softmax_rows(int64_t rows, int cols, const double* x, double* y) {
  const char* where = "softmax_rows";
  detail::require(rows >= 0, where, "rows must be non-negative, got " + std::to_string(rows));
  detail::require_positive(where, "cols", cols);
  if (rows == 0) return;
  detail::require_buffer(where, "x", x);
  detail::require_buffer(where, "y", y);
  for (int64_t i = 0; i < rows; ++i) {
    const double* row = x + i * cols;
    double* out = y + i * cols;
    double row_max = row[0];
    for (int j = 1; j < cols; ++j)
      if (row[j] > row_max) row_max = row[j];
    double sum = 0.0;
    for (int j = 0; j < cols; ++j) {
      out[j] = std::exp(row[j] - row_max);  // in (0, 1]; exactly 1 at the max
      sum += out[j];
    }
    for (int j = 0; j < cols; ++j) out[j] /= sum;
  }
}

}  // namespace convlab::ref
