#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace egress::adapters {

// One response header line as received: names compare case-insensitively and may repeat.
struct HttpHeader {
  std::string name;
  std::string value;
};

using HttpHeaders = std::vector<HttpHeader>;

// ASCII case-insensitive comparison, for header names and tokens.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// `text` with its ASCII letters lower-cased (header names for HTTP/2, which sends them so).
std::string ToLowerAscii(std::string_view text);

// `text` without leading and trailing spaces and tabs (HTTP's optional whitespace).
std::string_view TrimOws(std::string_view text);

}  // namespace egress::adapters
