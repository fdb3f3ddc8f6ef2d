// app/common.hpp — what the commands share: command-line options, finding
// variants by name, aligned tables that print as rows arrive, number
// formatting (JSON strings are json::quote, core/json.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/harness.hpp"

namespace convlab::app {

// A mistake in the command line: main prints it and exits with status 2.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// ---- options ---------------------------------------------------------------------

struct OptionSpec {
  std::string name;  // "--shape"
  bool takes_value;  // --shape SPEC (or --shape=SPEC); false for a flag
};

class ParsedArgs {
 public:
  std::vector<std::string> positional;
  bool has(const std::string& option) const { return values_.count(option) != 0; }
  std::string get(const std::string& option, const std::string& fallback = "") const;
  // An integer in [min, max]; UsageError otherwise.
  int64_t get_int(const std::string& option, int64_t fallback, int64_t min, int64_t max) const;
  std::map<std::string, std::string> values_;
};

// Splits `args` into positional words and the options `allowed` names (`command`: a convlab
// command's name, or a whole program's, "convlab_tma_stream", for the messages);
// UsageError on an unknown option, a missing or empty value, a value that is
// itself an option (`--out --shape`), or a repeated option.
ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<OptionSpec>& allowed,
                      const std::string& command);

std::vector<std::string> split(const std::string& text, char separator);

// "--shape", "-h": a word the option parser takes for an option, never for an option's value.
bool looks_like_option(const std::string& word);

// ---- finding variants ---------------------------------------------------------------

struct VariantRef {
  OpHandle* op = nullptr;
  std::size_t index = 0;  // in op->variants()
  VariantInfo info;
};

// Every registered variant, sorted by lesson, op, device, name.
std::vector<VariantRef> all_variants();

// The lesson order of variants: lesson, then op name, then device (cpu first), then name.
bool lesson_order(const VariantRef& a, const VariantRef& b);

// What `convlab run TARGET` names: "op/device/name" (one variant), "op/device"
// or "op" (all of them, in lesson order). UsageError, pointing at `convlab
// list`, when nothing matches.
struct Target {
  OpHandle* op = nullptr;
  std::vector<VariantRef> variants;
  bool single = false;     // a full variant id was given
  bool device_given = false;
  Device device = Device::cpu;
};
Target resolve_target(const std::string& text);

// The shape `convlab run` (without --shape) and the tour use for `v`: the
// first entry of its op's tour table for its device that `v` supports (so
// each lesson's rungs run on that lesson's own shape), else the first entry
// (the row then says unsupported); "" when the op has no tour shape there.
std::string tour_shape_for(const VariantRef& v);

Device parse_device(const std::string& text);  // "cpu" | "gpu"; UsageError otherwise ("cuda": renamed)

// "no CUDA device visible" (and why, when this build has no CUDA at all).
std::string no_gpu_reason();

// ---- formatting ------------------------------------------------------------------------

std::string format_fixed(double value, int decimals);  // "12.35"; "-" when not finite or negative
std::string format_ms(double ms);                      // 3 significant digits at least
std::string format_rate(double value);                 // GFLOP/s or GB/s
std::string format_percent(double fraction_percent);   // "43.1%"
std::string format_sci(double value);                  // "1.2e-07"
std::string format_bytes(double bytes);                // "0 B", "4.5 KiB", "1.2 MiB"

// ---- tables ----------------------------------------------------------------------------

// Aligned columns printed row by row, so a long run shows progress. Widths are
// fixed up front (header, or a width the caller knows, such as its longest id);
// a longer cell pushes its row out rather than truncating.
class StreamingTable {
 public:
  struct Column {
    std::string header;
    int width = 0;              // at least the header's width
    bool right_aligned = false;
  };
  StreamingTable(std::ostream& out, std::vector<Column> columns);
  void print_header();
  // Cells for the first cells.size() columns, then `trailing` after them (a
  // reason that replaces the remaining columns).
  void print_row(const std::vector<std::string>& cells, const std::string& trailing = "");
  void print_note(const std::string& text);  // an indented line under the last row
  void print_break();                        // a blank line

 private:
  std::ostream& out_;
  std::vector<Column> columns_;
};

}  // namespace convlab::app
