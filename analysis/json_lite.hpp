// analysis/json_lite.hpp — the JSON reader and quoter now live in
// core/json.hpp (one for the whole project). This header only keeps the old
// name `analysis::json` working for files that still include it; new code
// includes core/json.hpp and says `json::` (inside convlab) directly.
#pragma once

#include "core/json.hpp"

namespace convlab::analysis {
namespace json = convlab::json;
}  // namespace convlab::analysis
