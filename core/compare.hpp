// core/compare.hpp — the one tolerance model and the one comparison.
//
// A variant's output is accepted when
//   relative L2 error  ‖out − ref‖₂ / ‖ref‖₂  ≤ c_l2  · (u_acc · √depth + u_out)
//   max-abs error      max |out − ref|         ≤ c_abs · (u_acc · √depth + u_out) · max|ref|
// depth is the length of the reduction behind each output (K of a GEMM, T·R·S
// of a conv); √depth is how rounding error grows in a sum of `depth` terms whose
// roundings are independent. u_acc is the unit roundoff of the accumulator —
// fp32, the narrowest any variant may accumulate in — and u_out that of the
// stored output (the problem's dtype). The inputs add no term: the reference
// reads the very same rounded values the variant reads. So an fp16 problem may
// carry one fp16 rounding of its result but not an fp16 accumulation, and an
// fp32 problem computed through fp16 or TF32 fails.
// c_l2 and c_abs are fixed here, once, for every variant; never tuned per
// kernel. NaN or Inf anywhere fails.
//
// An affine epilogue y = acc·s + b rounds at the size of its terms, not of its
// result: where acc·s and b nearly cancel, a correct fp32 answer is off by
// u·|acc·s| however small y is. An op with such an epilogue gives compare() a
// magnitude per output (|acc·s| + |b|, worked out by its reference), and the
// bounds are taken relative to m_i = max(|ref_i|, magnitude_i) in place of
// |ref_i|. On ordinary data m and |ref| are of one size, so a wrong answer
// still fails; only an output that cancels gets the room its terms need.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace convlab {

struct Tolerance {
  double rel_l2;   // bound on ‖out − ref‖ / ‖ref‖
  double abs_rel;  // bound on max|out − ref| / max|ref|
};

inline constexpr double kToleranceL2 = 8.0;
inline constexpr double kToleranceAbs = 32.0;

Tolerance tolerance_for(DType dtype, int64_t reduction_depth);

struct CompareResult {
  bool ok = false;
  double rel_l2 = 0, max_abs_err = 0;
  double max_abs_ref = 0;  // max m_i: max |ref_i|, or the larger magnitude where one is given
  Tolerance bound{};
  int64_t non_finite = 0;  // NaN/Inf elements (unwritten outputs are NaN)
  int64_t worst_index = -1;
  std::string message;     // one line, says why it failed; rel L2 only where it means something
  bool has_rel_l2() const { return non_finite == 0 && !message.starts_with("size mismatch"); }
};

// Where an output element sits, for messages: the tensor's name, shape and
// layout ("y", {N, P, Q, K}, "NHWC"). Empty name: flat indices only.
struct OutputPlace {
  std::string name;
  Shape shape;
  std::string layout;
};

// "y[0,55,0,0]": flat row-major index `index` of a tensor of `shape`, as coordinates.
std::string element_coordinates(const OutputPlace& place, int64_t index);

// `magnitude`: empty, or one non-negative size per output (see above).
CompareResult compare(const std::vector<double>& out, const std::vector<double>& ref, DType dtype,
                      int64_t reduction_depth, const OutputPlace& place = {},
                      const std::vector<double>& magnitude = {});
CompareResult compare(const Tensor& out, const std::vector<double>& ref, DType dtype, int64_t reduction_depth,
                      const OutputPlace& place = {}, const std::vector<double>& magnitude = {});

}  // namespace convlab
