// analysis/report.hpp — the waterline of a network as text: a per-kernel
// table for people and JSON for notebooks. Both print the same numbers:
// per kernel its type, shapes, OPs, bytes, operational intensity, whether it
// is above the machine's op:byte waterline, and its attainable time (Eq. 11);
// then the totals: N, bytes, ideal time N/R, T_min (Eq. 12), C_max (Eq. 13),
// the mediant intensity (Eq. 29) with its roofline estimate, and the gap
// between the two estimates. Below that, the two sweeps lesson 13's notebook
// draws: efficiency against the machine's op:byte ratio (Figure 4) and conv
// intensity against channels (Figure 2(e)).
//
// Every JSON document names the machine it was computed for in the same
// "machine" object (name, description, peak_ops_per_s, bandwidth_bytes_per_s,
// op_byte) and has a "kind": "waterline", "opbyte_sweep" or
// "intensity_vs_channels".
#pragma once

#include <string>
#include <vector>

#include "analysis/waterline.hpp"

namespace convlab::analysis {

// `measured`, when given, is the efficiency gap of one measured latency of
// the whole batch (efficiency_gap(), Eq. 1, 3, 7-9): both forms then add it
// after the totals, with T_min / t_a, the share of the attainable speed that
// the measured run reached.
std::string waterline_table(const WaterlineReport& report, const EfficiencyGap* measured = nullptr);
std::string waterline_json(const WaterlineReport& report, const EfficiencyGap* measured = nullptr);

// Convenience: waterline(network, machine, batch, dtype) then the text.
std::string waterline_table(const Network& network, const Machine& machine, int batch = 128,
                            DType dtype = DType::f16);
std::string waterline_json(const Network& network, const Machine& machine, int batch = 128,
                           DType dtype = DType::f16);

// ---- Figure 4: C_max and the mediant roofline estimate against op:byte ---------------
// `network` is rebuilt at `batch` and dtype_size(dtype) bytes per element, then
// efficiency_vs_opbyte() runs over `op_byte_ratios`. The curve does not depend
// on any machine; `machine` only marks where that machine's R/B falls on it
// (its op:byte, C_max and mediant estimate are printed as well).
std::string opbyte_sweep_table(const Network& network, const std::vector<double>& op_byte_ratios,
                               const Machine& machine, int batch = 128, DType dtype = DType::f16);
std::string opbyte_sweep_json(const Network& network, const std::vector<double>& op_byte_ratios,
                              const Machine& machine, int batch = 128, DType dtype = DType::f16);

// ---- Figure 2(e): conv operational intensity against channels --------------------------
// One series per kind: dense 3x3 (K = C), grouped 3x3 for each group width in
// `group_widths` (K = C), depthwise 3x3, pointwise with K = expansion · C; each
// point from conv_intensity_vs_channels() over N·56·56 pixels with
// dtype_size(dtype) bytes per element. `machine`'s op:byte for `dtype` is the
// waterline drawn across the plot. In the JSON each series carries its
// "group_width" T: the given T for grouped, 1 for depthwise, 0 where T = C
// (dense and pointwise). Throws std::invalid_argument when a channel count is
// not a multiple of a group width.
struct IntensitySweepSpec {
  std::vector<int> channels;
  std::vector<int> group_widths{8};
  int pointwise_expansion = 4;
  int batch = 128;  // N; H = W = 56
  DType dtype = DType::f16;
};
std::string intensity_vs_channels_table(const IntensitySweepSpec& spec, const Machine& machine);
std::string intensity_vs_channels_json(const IntensitySweepSpec& spec, const Machine& machine);

}  // namespace convlab::analysis
