// analysis/report.hpp — the waterline of a network as text: a per-kernel
// table for people and JSON for notebooks. Both print the same numbers:
// per kernel its type, shapes, OPs, bytes, operational intensity, whether it
// is above the machine's op:byte waterline, and its attainable time (Eq. 11);
// then the totals: N, bytes, ideal time N/R, T_min (Eq. 12), C_max (Eq. 13),
// the mediant intensity (Eq. 29) with its roofline estimate, and the gap
// between the two estimates.
#pragma once

#include <string>

#include "analysis/waterline.hpp"

namespace convlab::analysis {

std::string waterline_table(const WaterlineReport& report);
std::string waterline_json(const WaterlineReport& report);

// Convenience: waterline(network, machine, batch, dtype) then the text.
std::string waterline_table(const Network& network, const Machine& machine, int batch = 128,
                            DType dtype = DType::f16);
std::string waterline_json(const Network& network, const Machine& machine, int batch = 128,
                           DType dtype = DType::f16);

}  // namespace convlab::analysis
