#include "core/spec.hpp"

#include <cstdlib>

namespace convlab {

KeyValues::KeyValues(const std::string& text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw SpecError("malformed shape item '" + item + "' (expected key=value, e.g. N=8,H=56)");
    const std::string key = item.substr(0, eq);
    if (values_.count(key))
      throw SpecError("key '" + key + "' given twice in '" + text + "' (each key at most once)");
    values_[key] = item.substr(eq + 1);
    pos = end + 1;
  }
}

int KeyValues::get_int(const std::string& key, int fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  const long v = std::strtol(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0' || v < -(1L << 30) || v > (1L << 30))
    throw SpecError("'" + key + "=" + it->second + "' is not an integer");
  return static_cast<int>(v);
}

std::string KeyValues::get(const std::string& key, const std::string& fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

void KeyValues::require_only(const std::set<std::string>& allowed, const std::string& what) const {
  for (const auto& [k, v] : values_) {
    if (allowed.count(k)) continue;
    if (allowed.empty()) throw SpecError("unknown key '" + k + "' for " + what + " (it takes no keys)");
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw SpecError("unknown key '" + k + "' for " + what + " (valid: " + list + ")");
  }
}

}  // namespace convlab
