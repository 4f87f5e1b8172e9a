#include "adapters/json_reader.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "dispatcher/base/utf8.h"

namespace egress::adapters {
namespace {

// Bytes that stand for themselves inside a string: printable ASCII but the quote and backslash.
constexpr std::array<bool, 256> kPlainInString = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) {
    plain[c] = c != '"' && c != '\\';
  }
  return plain;
}();

// Appends code point `cp` as UTF-8.
void AppendUtf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

unsigned HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return static_cast<unsigned>(c - '0');
  }
  if (c >= 'a' && c <= 'f') {
    return static_cast<unsigned>(c - 'a' + 10);
  }
  return static_cast<unsigned>(c - 'A' + 10);
}

unsigned Hex4Value(const char* p) {
  return HexValue(p[0]) << 12 | HexValue(p[1]) << 8 | HexValue(p[2]) << 4 | HexValue(p[3]);
}

// Decodes the body of a string already checked (between its quotes) into `out`.
void DecodeChecked(std::string_view s, std::string& out) {
  out.clear();
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    const char e = s[++i];
    switch (e) {
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        unsigned cp = Hex4Value(s.data() + i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate; the check saw its low half
          const unsigned low = Hex4Value(s.data() + i + 3);
          i += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        AppendUtf8(out, cp);
        break;
      }
      default:  // '"', '\\', '/'
        out.push_back(e);
        break;
    }
  }
}

}  // namespace

JsonReader::JsonReader(std::string_view text)
    : p_(reinterpret_cast<const Byte*>(text.data())), end_(p_ + text.size()) {}

bool JsonReader::Fail() {
  failed_ = true;
  p_ = end_;
  return false;
}

bool JsonReader::SkipByteOrderMark() {
  if (p_ < end_ && *p_ == 0xEF) {  // a byte order mark, or nothing valid
    if (end_ - p_ < 3 || p_[1] != 0xBB || p_[2] != 0xBF) {
      return Fail();
    }
    p_ += 3;
  }
  return !failed_;
}

char JsonReader::Peek() {
  SkipSpace();
  return p_ < end_ ? static_cast<char>(*p_) : 0;
}

bool JsonReader::EnterObject() {
  if (Peek() != '{') {
    return Fail();
  }
  ++p_;
  entered_.push_back('{');
  return true;
}

bool JsonReader::EnterArray() {
  if (Peek() != '[') {
    return Fail();
  }
  ++p_;
  entered_.push_back('[');
  return true;
}

bool JsonReader::NextKey(std::string& key) { return Advance('{', '}') && (Key(&key) || Fail()); }

bool JsonReader::NextElement() { return Advance('[', ']'); }

bool JsonReader::Advance(char open, char close) {
  if (failed_ || entered_.empty()) {
    return Fail();
  }
  char& state = entered_.back();
  SkipSpace();
  if (p_ < end_ && *p_ == close && (state == open || state == close)) {
    ++p_;
    entered_.pop_back();
    return false;
  }
  if (state == close) {
    if (p_ == end_ || *p_ != ',') {
      return Fail();
    }
    ++p_;
  } else if (state != open) {
    return Fail();
  }
  state = close;
  return true;
}

bool JsonReader::ReadString(std::string& out) {
  if (Peek() != '"') {
    return Fail();
  }
  return String(&out) || Fail();
}

bool JsonReader::SkipValue(std::string_view* span, bool* spaced, size_t* depth) {
  SkipSpace();
  const Byte* start = p_;
  spaced_ = false;
  skipping_.clear();
  size_t deepest = 0;
  for (;;) {
    // A value is due.
    SkipSpace();
    if (p_ == end_) {
      return Fail();
    }
    const Byte c = *p_;
    if (c == '{' || c == '[') {
      ++p_;
      deepest = std::max(deepest, skipping_.size() + 1);
      SkipSpace();
      if (p_ < end_ && *p_ == (c == '{' ? '}' : ']')) {
        ++p_;
      } else {
        skipping_.push_back(c);
        if (c == '{' && !Key(nullptr)) {
          return Fail();
        }
        continue;
      }
    } else if (!Scalar()) {
      return Fail();
    }
    // After a value: close containers, or a comma and the next member.
    for (;;) {
      if (skipping_.empty()) {
        if (span != nullptr) {
          *span = std::string_view(reinterpret_cast<const char*>(start),
                                   static_cast<size_t>(p_ - start));
        }
        if (spaced != nullptr) {
          *spaced = spaced_;
        }
        if (depth != nullptr) {
          *depth = deepest;
        }
        return true;
      }
      SkipSpace();
      if (p_ == end_) {
        return Fail();
      }
      if (*p_ == ',') {
        ++p_;
        if (skipping_.back() == '{' && !Key(nullptr)) {
          return Fail();
        }
        break;
      }
      if (*p_ != (skipping_.back() == '{' ? '}' : ']')) {
        return Fail();
      }
      ++p_;
      skipping_.pop_back();
    }
  }
}

bool JsonReader::AtEnd() {
  SkipSpace();
  return !failed_ && p_ == end_;
}

void JsonReader::SkipSpace() {
  const Byte* start = p_;
  while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) {
    ++p_;
  }
  spaced_ = spaced_ || p_ != start;
}

// `"name" :` of an object member.
bool JsonReader::Key(std::string* key) {
  SkipSpace();
  if (p_ == end_ || *p_ != '"' || !String(key)) {
    return false;
  }
  SkipSpace();
  if (p_ == end_ || *p_ != ':') {
    return false;
  }
  ++p_;
  return true;
}

bool JsonReader::Scalar() {
  switch (*p_) {
    case '"':
      return String(nullptr);
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

bool JsonReader::Literal(std::string_view word) {
  if (static_cast<size_t>(end_ - p_) < word.size() ||
      std::string_view(reinterpret_cast<const char*>(p_), word.size()) != word) {
    return false;
  }
  p_ += word.size();
  return true;
}

bool JsonReader::Digits() {
  const Byte* start = p_;
  while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
    ++p_;
  }
  return p_ != start;
}

// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, finite as a double.
bool JsonReader::Number() {
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
bool JsonReader::Hex4(unsigned& value) {
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

bool JsonReader::Escape() {
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

// One UTF-8 sequence of 2 to 4 bytes (RFC 3629: no overlongs, no surrogates).
bool JsonReader::Utf8() {
  const size_t n = Utf8SequenceAt(
      std::string_view(reinterpret_cast<const char*>(p_), static_cast<size_t>(end_ - p_)), 0);
  if (n < 2) {
    return false;  // 1 would be ASCII, which the caller handles before asking
  }
  p_ += n;
  return true;
}

// A string from its opening quote; its decoded value into `out` when given.
bool JsonReader::String(std::string* out) {
  ++p_;  // the opening quote
  const Byte* start = p_;
  bool escaped = false;
  while (p_ < end_) {
    while (p_ < end_ && kPlainInString[*p_]) {
      ++p_;
    }
    if (p_ == end_) {
      break;
    }
    const Byte c = *p_;
    if (c == '"') {
      if (out != nullptr) {
        const std::string_view body(reinterpret_cast<const char*>(start),
                                    static_cast<size_t>(p_ - start));
        if (escaped) {
          DecodeChecked(body, *out);
        } else {
          out->assign(body);
        }
      }
      ++p_;
      return true;
    }
    if (c == '\\') {
      ++p_;
      escaped = true;
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

std::string CompactJson(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\') {
        out.push_back(json[++i]);
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      out.push_back(c);
      in_string = c == '"';
    }
  }
  return out;
}

}  // namespace egress::adapters
