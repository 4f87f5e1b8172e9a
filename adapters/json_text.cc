#include "adapters/json_text.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace egress::adapters {
namespace {

using Byte = unsigned char;

// Reads JSON left to right; every method advances `p` past what it accepted.
class Scanner {
 public:
  explicit Scanner(std::string_view text)
      : p_(reinterpret_cast<const Byte*>(text.data())), end_(p_ + text.size()) {}

  bool Text() {
    if (p_ < end_ && *p_ == 0xEF) {  // a byte order mark, or nothing valid
      if (end_ - p_ < 3 || p_[1] != 0xBB || p_[2] != 0xBF) {
        return false;
      }
      p_ += 3;
    }
    std::vector<Byte> open;  // '{' / '[' of the containers entered, innermost last
    for (;;) {
      // A value is due.
      SkipSpace();
      if (p_ == end_) {
        return false;
      }
      const Byte c = *p_;
      if (c == '{' || c == '[') {
        ++p_;
        SkipSpace();
        if (p_ < end_ && *p_ == (c == '{' ? '}' : ']')) {
          ++p_;
        } else {
          open.push_back(c);
          if (c == '{' && !Key()) {
            return false;
          }
          continue;
        }
      } else if (!Scalar()) {
        return false;
      }
      // After a value: close containers, or a comma and the next member.
      for (;;) {
        SkipSpace();
        if (open.empty()) {
          return p_ == end_;
        }
        if (p_ == end_) {
          return false;
        }
        if (*p_ == ',') {
          ++p_;
          if (open.back() == '{' && !Key()) {
            return false;
          }
          break;
        }
        if (*p_ != (open.back() == '{' ? '}' : ']')) {
          return false;
        }
        ++p_;
        open.pop_back();
      }
    }
  }

 private:
  void SkipSpace() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) {
      ++p_;
    }
  }

  // `"name" :` of an object member.
  bool Key() {
    SkipSpace();
    if (p_ == end_ || *p_ != '"' || !String()) {
      return false;
    }
    SkipSpace();
    if (p_ == end_ || *p_ != ':') {
      return false;
    }
    ++p_;
    return true;
  }

  bool Scalar() {
    switch (*p_) {
      case '"':
        return String();
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        return Number();
    }
  }

  bool Literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() ||
        std::string_view(reinterpret_cast<const char*>(p_), word.size()) != word) {
      return false;
    }
    p_ += word.size();
    return true;
  }

  bool Digits() {
    const Byte* start = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      ++p_;
    }
    return p_ != start;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, finite as a double.
  bool Number() {
    const Byte* start = p_;
    if (*p_ == '-') {
      ++p_;
    }
    if (p_ == end_ || *p_ < '0' || *p_ > '9') {
      return false;
    }
    if (*p_ == '0') {
      ++p_;
    } else {
      Digits();
    }
    bool integer = true;
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      integer = false;
      if (!Digits()) {
        return false;
      }
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      integer = false;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) {
        ++p_;
      }
      if (!Digits()) {
        return false;
      }
    }
    const size_t length = static_cast<size_t>(p_ - start);
    if (integer && length <= 18) {
      return true;  // fits an int64_t
    }
    // A fraction, an exponent or a long integer is read as a double, which must be finite.
    const std::string token(reinterpret_cast<const char*>(start), length);
    return std::isfinite(std::strtod(token.c_str(), nullptr));
  }

  // Four hex digits of a \u escape.
  bool Hex4(unsigned& value) {
    if (end_ - p_ < 4) {
      return false;
    }
    value = 0;
    for (int i = 0; i < 4; ++i) {
      const Byte c = *p_++;
      unsigned digit;
      if (c >= '0' && c <= '9') {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return false;
      }
      value = value * 16 + digit;
    }
    return true;
  }

  bool Escape() {
    if (p_ == end_) {
      return false;
    }
    switch (*p_++) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        return true;
      case 'u': {
        unsigned unit = 0;
        if (!Hex4(unit)) {
          return false;
        }
        if (unit >= 0xDC00 && unit <= 0xDFFF) {
          return false;  // a low surrogate alone
        }
        if (unit >= 0xD800 && unit <= 0xDBFF) {  // must be followed by a low surrogate
          unsigned low = 0;
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') {
            return false;
          }
          p_ += 2;
          return Hex4(low) && low >= 0xDC00 && low <= 0xDFFF;
        }
        return true;
      }
      default:
        return false;
    }
  }

  // One UTF-8 sequence of 2 to 4 bytes (Unicode Table 3-7: no overlongs, no surrogates).
  bool Utf8() {
    const Byte c = *p_;
    int more;
    Byte low = 0x80, high = 0xBF;  // bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      more = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      more = 2;
      low = c == 0xE0 ? 0xA0 : 0x80;
      high = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
      more = 3;
      low = c == 0xF0 ? 0x90 : 0x80;
      high = c == 0xF4 ? 0x8F : 0xBF;
    } else {
      return false;
    }
    if (end_ - p_ <= more || p_[1] < low || p_[1] > high) {
      return false;
    }
    for (int i = 2; i <= more; ++i) {
      if (p_[i] < 0x80 || p_[i] > 0xBF) {
        return false;
      }
    }
    p_ += more + 1;
    return true;
  }

  bool String() {
    ++p_;  // the opening quote
    while (p_ < end_) {
      const Byte c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c == '\\') {
        ++p_;
        if (!Escape()) {
          return false;
        }
      } else if (c < 0x20) {
        return false;
      } else if (c < 0x80) {
        ++p_;
      } else if (!Utf8()) {
        return false;
      }
    }
    return false;
  }

  const Byte* p_;
  const Byte* end_;
};

}  // namespace

bool IsJsonText(std::string_view text) { return Scanner(text).Text(); }

}  // namespace egress::adapters
