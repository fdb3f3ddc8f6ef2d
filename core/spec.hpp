// core/spec.hpp — shape specifications as text: "N=8,H=56,W=56,C=64,dtype=f16".
//
// Every operation parses and prints its problems in this one form, so that a
// shape in `convlab run --shape`, in a test failure and in a benchmark log can
// be pasted from one place to another.
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace convlab {

struct SpecError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

class KeyValues {
 public:
  KeyValues() = default;
  explicit KeyValues(const std::string& text);  // "a=1,b=2"; throws SpecError on malformed text
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  int get_int(const std::string& key, int fallback) const;
  std::string get(const std::string& key, const std::string& fallback) const;
  // Throws SpecError naming the first key not in `allowed`, and listing the allowed ones.
  void require_only(const std::set<std::string>& allowed, const std::string& what) const;
  const std::map<std::string, std::string>& values() const { return values_; }
 private:
  std::map<std::string, std::string> values_;
};

}  // namespace convlab
