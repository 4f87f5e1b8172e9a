#include "adapters/url_parts.h"

#include <fmt/format.h>

#include "adapters/http_header.h"

namespace egress::adapters {
namespace {

bool HasScheme(std::string_view url, std::string_view scheme) {
  if (url.size() <= scheme.size() || !EqualsIgnoreCase(url.substr(0, scheme.size()), scheme)) {
    return false;
  }
  std::string_view rest = url.substr(scheme.size());
  return !rest.empty() && rest.front() != '/' && rest.front() != '?' && rest.front() != '#';
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// RFC 3986 2.2 (reserved) and 2.3 (unreserved).
bool IsUriByte(char c) {
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
    return true;
  }
  return std::string_view("-._~:/?#[]@!$&'()*+,;=").find(c) != std::string_view::npos;
}

}  // namespace

std::string JoinUrl(std::string_view base, std::string_view path) {
  while (!base.empty() && base.back() == '/') {
    base.remove_suffix(1);
  }
  std::string url(base);
  url.append(path);
  return url;
}

std::string_view UrlOrigin(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return url;
  }
  return url.substr(0, url.find_first_of("/?#", scheme_end + 3));
}

Status CheckHttpUrl(std::string_view url, bool https_only) {
  if (!HasScheme(url, "https://") && (https_only || !HasScheme(url, "http://"))) {
    return Status::InvalidArgument(https_only ? "must be an absolute https URL with a host"
                                              : "must be an absolute http(s) URL with a host");
  }
  for (size_t i = 0; i < url.size(); ++i) {
    const char c = url[i];
    if (c == '%' && i + 2 < url.size() && IsHexDigit(url[i + 1]) && IsHexDigit(url[i + 2])) {
      i += 2;
      continue;
    }
    if (!IsUriByte(c)) {
      return Status::InvalidArgument(
          fmt::format("must be a URL of RFC 3986 characters: byte {} (0x{:02x}) is not one{}", i,
                      static_cast<unsigned char>(c),
                      c == '%' ? " ('%' starts two hex digits)" : " (percent-encode it)"));
    }
  }
  return Status::Ok();
}

bool IsHttpUrl(std::string_view url) { return CheckHttpUrl(url).ok(); }

bool IsHttpsUrl(std::string_view url) { return CheckHttpUrl(url, true).ok(); }

bool IsUrlSegment(std::string_view text, size_t max_length) {
  if (text.empty() || text.size() > max_length) {
    return false;
  }
  for (char c : text) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_' || c == '~';
    if (!ok) {
      return false;
    }
  }
  return text != "." && text != "..";
}

}  // namespace egress::adapters
