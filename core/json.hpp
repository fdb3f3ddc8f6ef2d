// core/json.hpp — the one small JSON reader, string quoter and number writer
// convlab uses: the probe cache (core/probe.cpp), the programs' --json output
// (app/, analysis/), the benchmarks' context (bench/), and the files analysis/
// reads (the probe's JSON, data/accuracy.json).
// Not a general-purpose library: no streaming, no \u surrogate pairs beyond
// the Basic Multilingual Plane; numbers are doubles.
#pragma once

#include <string>
#include <vector>

namespace convlab::json {

struct Value {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  double number = 0;
  std::string text;                // Kind::string
  std::vector<Value> items;        // Kind::array
  std::vector<std::string> keys;   // Kind::object: keys[i] names values[i]
  std::vector<Value> values;

  // The member named `key` of an object, or nullptr (also for non-objects).
  const Value* find(const std::string& key) const;
  bool is_number() const { return kind == Kind::number; }
  bool is_string() const { return kind == Kind::string; }
};

// Throws std::runtime_error("json: <what> at offset N") on malformed input.
Value parse(const std::string& text);
// Reads and parses a file; throws std::runtime_error naming the file.
Value parse_file(const std::string& path);

// `s` as a JSON string literal, quotes included.
std::string quote(const std::string& s);

// `value` as a JSON number: printf's %g with `significant_digits`. JSON has no
// NaN or infinity, so a value that is not finite is written null.
std::string number(double value, int significant_digits = 6);

}  // namespace convlab::json
