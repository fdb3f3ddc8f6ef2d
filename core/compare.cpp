#include "core/compare.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace convlab {

Tolerance tolerance_for(DType dtype, int64_t depth) {
  const double u_acc = unit_roundoff(DType::f32), u_out = unit_roundoff(dtype);
  const double scale = u_acc * std::sqrt(double(std::max<int64_t>(depth, 1))) + u_out;
  return {kToleranceL2 * scale, kToleranceAbs * scale};
}

std::string element_coordinates(const OutputPlace& place, int64_t index) {
  if (place.name.empty() || place.shape.empty()) return "index " + std::to_string(index);
  std::vector<int64_t> coord(place.shape.size());
  int64_t rest = index;
  for (std::size_t d = place.shape.size(); d-- > 0;) {  // row-major: the last axis varies fastest
    const int64_t extent = std::max<int64_t>(place.shape[d], 1);
    coord[d] = rest % extent;
    rest /= extent;
  }
  std::string text = place.name + "[";
  for (std::size_t d = 0; d < coord.size(); ++d) text += (d ? "," : "") + std::to_string(coord[d]);
  text += "]";
  if (!place.layout.empty()) text += " (" + place.layout + ")";
  return text;
}

CompareResult compare(const std::vector<double>& out, const std::vector<double>& ref, DType dtype, int64_t depth,
                      const OutputPlace& place, const std::vector<double>& magnitude) {
  CompareResult r;
  r.bound = tolerance_for(dtype, depth);
  char buf[256];
  if (out.size() != ref.size()) {
    std::snprintf(buf, sizeof buf, "size mismatch: output has %zu elements, reference %zu", out.size(), ref.size());
    r.message = buf;
    return r;
  }
  if (!magnitude.empty() && magnitude.size() != ref.size())
    throw std::invalid_argument("compare: " + std::to_string(magnitude.size()) + " magnitudes for " +
                                std::to_string(ref.size()) + " outputs");
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) {
      if (r.non_finite++ == 0) r.worst_index = int64_t(i);
      continue;
    }
    const double d = std::abs(out[i] - ref[i]);
    const double m = magnitude.empty() ? std::abs(ref[i]) : std::max(std::abs(ref[i]), magnitude[i]);
    err2 += d * d;
    ref2 += m * m;
    r.max_abs_ref = std::max(r.max_abs_ref, m);
    if (d > r.max_abs_err) {
      r.max_abs_err = d;
      if (r.non_finite == 0) r.worst_index = int64_t(i);
    }
  }
  if (r.non_finite > 0) {
    std::snprintf(buf, sizeof buf, "%lld of %zu outputs are NaN/Inf (first at ", (long long)r.non_finite, out.size());
    r.message = buf + element_coordinates(place, r.worst_index) + "): unwritten or overflowed";
    return r;
  }
  // An all-zero reference is legitimate (e.g. ReLU of negatives): fall back to absolute error.
  r.rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  const double abs_scale = r.max_abs_ref > 0 ? r.max_abs_ref : 1.0;
  const bool l2_ok = r.rel_l2 <= r.bound.rel_l2;
  const bool abs_ok = r.max_abs_err <= r.bound.abs_rel * abs_scale;
  r.ok = l2_ok && abs_ok;
  if (!r.ok) {
    std::snprintf(buf, sizeof buf, "%s: rel L2 %.3g (bound %.3g), max abs err %.3g at ",
                  l2_ok ? "max-abs error too large" : "relative L2 error too large", r.rel_l2, r.bound.rel_l2,
                  r.max_abs_err);
    r.message = buf + element_coordinates(place, r.worst_index);
    std::snprintf(buf, sizeof buf, " (bound %.3g)", r.bound.abs_rel * abs_scale);
    r.message += buf;
  }
  return r;
}

CompareResult compare(const Tensor& out, const std::vector<double>& ref, DType dtype, int64_t depth,
                      const OutputPlace& place, const std::vector<double>& magnitude) {
  return compare(out.to_double(), ref, dtype, depth, place, magnitude);
}

}  // namespace convlab
