// app/common.cpp — options, variant lookup, tables and formatting for the
// `convlab` commands (declared in app/common.hpp).
#include "app/common.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace convlab::app {

// ---- options ---------------------------------------------------------------------

std::string ParsedArgs::get(const std::string& option, const std::string& fallback) const {
  auto it = values_.find(option);
  return it == values_.end() ? fallback : it->second;
}

int64_t ParsedArgs::get_int(const std::string& option, int64_t fallback, int64_t min, int64_t max) const {
  auto it = values_.find(option);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max)
    throw UsageError(option + " wants an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                     ", got '" + text + "'");
  return v;
}

bool looks_like_option(const std::string& word) {
  // "--x" or "-x" with a letter; "-1" and "-" are values.
  if (word.size() < 2 || word[0] != '-') return false;
  const unsigned char next = static_cast<unsigned char>(word[1]);
  return next == '-' || std::isalpha(next);
}

ParsedArgs parse_args(const std::vector<std::string>& args, const std::vector<OptionSpec>& allowed,
                      const std::string& command) {
  ParsedArgs parsed;
  auto find_spec = [&](const std::string& name) -> const OptionSpec* {
    for (const OptionSpec& s : allowed)
      if (s.name == name) return &s;
    return nullptr;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.size() < 2 || word[0] != '-') {
      parsed.positional.push_back(word);
      continue;
    }
    std::string name = word, value;
    bool inline_value = false;
    if (const std::size_t eq = word.find('='); eq != std::string::npos && word.rfind("--", 0) == 0) {
      name = word.substr(0, eq);
      value = word.substr(eq + 1);
      inline_value = true;
    }
    const OptionSpec* spec = find_spec(name);
    if (!spec) {
      // A `convlab` command, or a program of its own (convlab_tma_stream) named as it is run.
      const std::string program = command.rfind("convlab_", 0) == 0 ? command : "convlab " + command;
      throw UsageError("unknown option '" + name + "' for `" + program + "` (see `" + program + " --help`)");
    }
    if (parsed.has(name)) throw UsageError("option " + name + " given twice");
    if (spec->takes_value && !inline_value) {
      if (i + 1 >= args.size()) throw UsageError("option " + name + " needs a value");
      value = args[++i];
      // `--out --shape` is a forgotten value, not a file named "--shape". A value
      // that really starts with '-' can still be given as --out=-x.
      if (looks_like_option(value))
        throw UsageError("option " + name + " needs a value, got the option '" + value + "' (write " + name +
                         "=VALUE if the value really starts with '-')");
    } else if (!spec->takes_value && inline_value) {
      throw UsageError("option " + name + " takes no value");
    }
    if (spec->takes_value && value.empty()) throw UsageError("option " + name + " needs a value, got an empty one");
    parsed.values_[name] = value;
  }
  return parsed;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

// ---- finding variants ---------------------------------------------------------------

bool lesson_order(const VariantRef& a, const VariantRef& b) {
  const VariantInfo &x = a.info, &y = b.info;
  if (x.lesson != y.lesson) return x.lesson < y.lesson;
  if (x.op != y.op) return x.op < y.op;
  if (x.device != y.device) return x.device == Device::cpu;
  return x.name < y.name;
}

std::vector<VariantRef> all_variants() {
  std::vector<VariantRef> out;
  for (OpHandle* op : all_ops()) {
    const std::vector<VariantInfo> infos = op->variants();
    for (std::size_t i = 0; i < infos.size(); ++i) out.push_back({op, i, infos[i]});
  }
  std::sort(out.begin(), out.end(), lesson_order);
  return out;
}

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu;
  if (text == "gpu") return Device::gpu;
  if (text == "cuda") throw UsageError("the device 'cuda' is now called 'gpu' (e.g. conv2d/gpu/04a_implicit_gemm; docs/renames.md)");
  throw UsageError("unknown device '" + text + "' (expected cpu or gpu)");
}

namespace {

std::string known_ops() {
  std::string names;
  for (const OpHandle* op : all_ops()) names += (names.empty() ? "" : ", ") + op->name();
  return names.empty() ? "none registered" : names;
}

}  // namespace

Target resolve_target(const std::string& text) {
  const std::vector<std::string> parts = split(text, '/');
  if (parts.size() > 3 || std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); }))
    throw UsageError("'" + text + "' is not OP, OP/DEVICE or OP/DEVICE/NAME (e.g. conv2d/cpu/01b_openmp; see `convlab list`)");
  Target t;
  t.op = find_op(parts[0]);
  if (!t.op) throw UsageError("unknown operation '" + parts[0] + "' (known: " + known_ops() + "; see `convlab list`)");
  if (parts.size() >= 2) {
    t.device_given = true;
    t.device = parse_device(parts[1]);
  }
  const std::vector<VariantInfo> infos = t.op->variants();
  for (std::size_t i = 0; i < infos.size(); ++i) {
    if (t.device_given && infos[i].device != t.device) continue;
    if (parts.size() == 3 && infos[i].name != parts[2]) continue;
    t.variants.push_back({t.op, i, infos[i]});
  }
  std::sort(t.variants.begin(), t.variants.end(), lesson_order);
  t.single = parts.size() == 3;
  if (!t.variants.empty()) return t;

  const std::string where = parts[0] + "/" + (t.device_given ? device_name(t.device) : "");
  if (parts.size() == 2) throw UsageError(where + " has no variants in this build (see `convlab list`)");
  std::string names;
  for (const VariantInfo& v : infos)
    if (v.device == t.device) names += (names.empty() ? "" : ", ") + v.name;
  throw UsageError("unknown variant '" + text + "' (" + where + " has " + (names.empty() ? "none" : names) +
                   "; see `convlab list`)");
}

std::string tour_shape_for(const VariantRef& v) {
  const std::vector<std::string> tour = v.op->shapes(ShapeTable::tour, v.info.device);
  for (const std::string& spec : tour)
    if (v.op->unsupported_reason(v.index, spec).empty()) return spec;
  return tour.empty() ? "" : tour.front();
}

std::string no_gpu_reason() {
  return cuda_compiled() ? "no CUDA device visible" : "no CUDA device (this convlab was built without CUDA)";
}

// ---- formatting ------------------------------------------------------------------------

std::string format_fixed(double value, int decimals) {
  if (!std::isfinite(value) || value < 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string format_ms(double ms) {
  if (!std::isfinite(ms) || ms <= 0) return "-";
  return format_fixed(ms, ms >= 100 ? 1 : ms >= 10 ? 2 : ms >= 1 ? 3 : 4);
}

std::string format_rate(double value) {
  if (!std::isfinite(value) || value <= 0) return "-";
  return format_fixed(value, value >= 100 ? 0 : value >= 10 ? 1 : 2);
}

std::string format_percent(double percent) {
  if (!std::isfinite(percent) || percent <= 0) return "-";
  return format_fixed(percent, percent >= 10 ? 0 : 1) + "%";
}

std::string format_sci(double value) {
  if (!std::isfinite(value) || value < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", value);
  return buf;
}

std::string format_bytes(double bytes) {
  if (!std::isfinite(bytes) || bytes < 0) return "-";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? format_fixed(bytes, 0) + " B" : format_fixed(bytes, 1) + " " + units[u];
}

// ---- tables ----------------------------------------------------------------------------

StreamingTable::StreamingTable(std::ostream& out, std::vector<Column> columns) : out_(out), columns_(std::move(columns)) {
  for (Column& c : columns_) c.width = std::max<int>(c.width, int(c.header.size()));
}

void StreamingTable::print_header() {
  std::vector<std::string> headers;
  for (const Column& c : columns_) headers.push_back(c.header);
  print_row(headers);
}

void StreamingTable::print_row(const std::vector<std::string>& cells, const std::string& trailing) {
  std::string line;
  for (std::size_t i = 0; i < cells.size() && i < columns_.size(); ++i) {
    const Column& c = columns_[i];
    const bool last = i + 1 == columns_.size() && trailing.empty();
    const std::size_t pad = cells[i].size() < std::size_t(c.width) ? c.width - cells[i].size() : 0;
    if (i) line += "  ";
    if (c.right_aligned) line += std::string(pad, ' ') + cells[i];
    else line += cells[i] + (last ? "" : std::string(pad, ' '));
  }
  if (!trailing.empty()) line += "  " + trailing;
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out_ << line << std::endl;
}

void StreamingTable::print_note(const std::string& text) { out_ << "      -> " << text << std::endl; }

void StreamingTable::print_break() { out_ << std::endl; }

}  // namespace convlab::app
