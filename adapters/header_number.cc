#include "adapters/header_number.h"

#include <charconv>
#include <cmath>
#include <system_error>

#include "adapters/http_header.h"

namespace egress::adapters {

std::optional<double> ParseHeaderNumber(std::string_view text) {
  text = TrimOws(text);
  if (text.size() >= 2 && text.front() == '+' && text[1] != '-' && text[1] != '+') {
    text.remove_prefix(1);  // from_chars refuses a leading '+'.
  }
  if (text.empty()) {
    return std::nullopt;
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace egress::adapters
