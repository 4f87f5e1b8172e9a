#include "dispatcher/base/traceparent.h"

namespace egress {
namespace {

constexpr size_t kLength = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2

bool LowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

bool AllZero(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

}  // namespace

std::optional<std::string> NormalizeTraceparent(std::string_view text) {
  if (text.size() < kLength) {
    return std::nullopt;
  }
  const std::string_view version = text.substr(0, 2);
  if (!LowerHex(version) || version == "ff") {
    return std::nullopt;
  }
  if (version == "00" ? text.size() != kLength : text.size() > kLength && text[kLength] != '-') {
    return std::nullopt;
  }
  if (text[2] != '-' || text[35] != '-' || text[52] != '-') {
    return std::nullopt;
  }
  const std::string_view trace_id = text.substr(3, 32);
  const std::string_view parent_id = text.substr(36, 16);
  const std::string_view flags = text.substr(53, 2);
  if (!LowerHex(trace_id) || !LowerHex(parent_id) || !LowerHex(flags) || AllZero(trace_id) ||
      AllZero(parent_id)) {
    return std::nullopt;
  }
  std::string out = "00";
  out.append(text.substr(2, kLength - 2));
  return out;
}

}  // namespace egress
