// core/json.cpp — a recursive-descent JSON reader: one function per grammar
// rule (value, object, array, string, number), each consuming from a cursor
// into the text and throwing with the offset on the first error.
#include "core/json.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace convlab::json {

const Value* Value::find(const std::string& key) const {
  if (kind != Kind::object) return nullptr;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &values[i];
  return nullptr;
}

namespace {

class Reader {
 public:
  explicit Reader(const std::string& text) : text_(text) {}

  Value document() {
    Value v = value();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("json: " + what + " at offset " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of input");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "', found " + printable(text_[pos_]));
    ++pos_;
  }
  bool consume_word(const char* word) {
    const std::string w(word);
    if (text_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  // Arrays and objects nest by recursion, one C++ frame per level: a limit
  // keeps a hostile file ("[[[[...") from overflowing the stack.
  struct Nest {
    explicit Nest(Reader& r) : r_(r) {
      if (++r_.depth_ > kMaxDepth) r_.fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ~Nest() { --r_.depth_; }
    Reader& r_;
  };

  Value value() {
    const char c = peek();
    Value v;
    if (c == '{') {
      const Nest nest(*this);
      return object();
    }
    if (c == '[') {
      const Nest nest(*this);
      return array();
    }
    if (c == '"') {
      v.kind = Value::Kind::string;
      v.text = string();
      return v;
    }
    if (consume_word("true")) { v.kind = Value::Kind::boolean; v.boolean = true; return v; }
    if (consume_word("false")) { v.kind = Value::Kind::boolean; v.boolean = false; return v; }
    if (consume_word("null")) return v;
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail("unexpected character " + printable(c));
  }

  Value object() {
    Value v;
    v.kind = Value::Kind::object;
    expect('{');
    if (peek() == '}') { ++pos_; return v; }
    for (;;) {
      if (peek() != '"') fail("expected a key string");
      v.keys.push_back(string());
      expect(':');
      v.values.push_back(value());
      if (peek() == ',') { ++pos_; continue; }
      expect('}');
      return v;
    }
  }

  Value array() {
    Value v;
    v.kind = Value::Kind::array;
    expect('[');
    if (peek() == ']') { ++pos_; return v; }
    for (;;) {
      v.items.push_back(value());
      if (peek() == ',') { ++pos_; continue; }
      expect(']');
      return v;
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') { out += c; continue; }
      if (pos_ >= text_.size()) break;
      const char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (pos_ + 4 > text_.size()) fail("short \\u escape");
          for (int i = 0; i < 4; ++i)
            if (!std::isxdigit(static_cast<unsigned char>(text_[pos_ + i]))) fail("bad \\u escape (4 hex digits expected)");
          const unsigned code = unsigned(std::strtoul(text_.substr(pos_, 4).c_str(), nullptr, 16));
          pos_ += 4;
          // UTF-8 encoding of one BMP code point.
          if (code < 0x80) {
            out += char(code);
          } else if (code < 0x800) {
            out += char(0xC0 | (code >> 6));
            out += char(0x80 | (code & 0x3F));
          } else {
            out += char(0xE0 | (code >> 12));
            out += char(0x80 | ((code >> 6) & 0x3F));
            out += char(0x80 | (code & 0x3F));
          }
          break;
        }
        default: fail("bad escape");
      }
    }
    fail("unterminated string");
  }

  Value number() {
    const char* begin = text_.c_str() + pos_;
    char* end = nullptr;
    const double d = std::strtod(begin, &end);
    if (end == begin) fail("bad number");
    pos_ += std::size_t(end - begin);
    Value v;
    v.kind = Value::Kind::number;
    v.number = d;
    return v;
  }

  // A character for an error message: itself in quotes when printable, else its byte value.
  static std::string printable(char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) return std::string("'") + c + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02X", unsigned(u));
    return buf;
  }

  static constexpr int kMaxDepth = 256;  // convlab's own files nest 4 deep
  const std::string& text_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Value parse(const std::string& text) { return Reader(text).document(); }

Value parse_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error(path + ": is a directory, not a JSON file");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open '" + path + "' (" + std::strerror(errno) + ")");
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return parse(buffer.str());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

std::string number(double value, int significant_digits) {
  if (!std::isfinite(value)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", significant_digits, value);
  return buf;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace convlab::json
