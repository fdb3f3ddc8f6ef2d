#include "core/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace convlab {

Tolerance tolerance_for(DType dtype, int64_t depth) {
  const double u_acc = unit_roundoff(DType::f32), u_out = unit_roundoff(dtype);
  const double scale = u_acc * std::sqrt(double(std::max<int64_t>(depth, 1))) + u_out;
  return {kToleranceL2 * scale, kToleranceAbs * scale};
}

CompareResult compare(const std::vector<double>& out, const std::vector<double>& ref, DType dtype, int64_t depth) {
  CompareResult r;
  r.bound = tolerance_for(dtype, depth);
  char buf[256];
  if (out.size() != ref.size()) {
    std::snprintf(buf, sizeof buf, "size mismatch: output has %zu elements, reference %zu", out.size(), ref.size());
    r.message = buf;
    return r;
  }
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) {
      if (r.non_finite++ == 0) r.worst_index = int64_t(i);
      continue;
    }
    const double d = std::abs(out[i] - ref[i]);
    err2 += d * d;
    ref2 += ref[i] * ref[i];
    r.max_abs_ref = std::max(r.max_abs_ref, std::abs(ref[i]));
    if (d > r.max_abs_err) {
      r.max_abs_err = d;
      if (r.non_finite == 0) r.worst_index = int64_t(i);
    }
  }
  if (r.non_finite > 0) {
    std::snprintf(buf, sizeof buf, "%lld of %zu outputs are NaN/Inf (first at index %lld): unwritten or overflowed",
                  (long long)r.non_finite, out.size(), (long long)r.worst_index);
    r.message = buf;
    return r;
  }
  // An all-zero reference is legitimate (e.g. ReLU of negatives): fall back to absolute error.
  r.rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  const double abs_scale = r.max_abs_ref > 0 ? r.max_abs_ref : 1.0;
  const bool l2_ok = r.rel_l2 <= r.bound.rel_l2;
  const bool abs_ok = r.max_abs_err <= r.bound.abs_rel * abs_scale;
  r.ok = l2_ok && abs_ok;
  if (!r.ok) {
    std::snprintf(buf, sizeof buf, "%s: rel L2 %.3g (bound %.3g), max abs err %.3g at index %lld (bound %.3g)",
                  l2_ok ? "max-abs error too large" : "relative L2 error too large", r.rel_l2, r.bound.rel_l2,
                  r.max_abs_err, (long long)r.worst_index, r.bound.abs_rel * abs_scale);
    r.message = buf;
  }
  return r;
}

CompareResult compare(const Tensor& out, const std::vector<double>& ref, DType dtype, int64_t depth) {
  return compare(out.to_double(), ref, dtype, depth);
}

}  // namespace convlab
