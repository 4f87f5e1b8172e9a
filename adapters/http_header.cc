#include "adapters/http_header.h"

namespace egress::adapters {
namespace {

char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool IsOws(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::string ToLowerAscii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = LowerAscii(c);
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (LowerAscii(a[i]) != LowerAscii(b[i])) {
      return false;
    }
  }
  return true;
}

std::string_view TrimOws(std::string_view text) {
  while (!text.empty() && IsOws(text.front())) {
    text.remove_prefix(1);
  }
  while (!text.empty() && IsOws(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace egress::adapters
