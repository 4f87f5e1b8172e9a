#include "adapters/url_parts.h"

#include "adapters/http_header.h"

namespace egress::adapters {
namespace {

bool HasScheme(std::string_view url, std::string_view scheme) {
  if (url.size() <= scheme.size() || !EqualsIgnoreCase(url.substr(0, scheme.size()), scheme)) {
    return false;
  }
  std::string_view rest = url.substr(scheme.size());
  if (rest.empty() || rest.front() == '/' || rest.front() == '?' || rest.front() == '#') {
    return false;  // no host
  }
  for (char c : url) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return false;
    }
  }
  return true;
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

bool IsHttpUrl(std::string_view url) {
  return HasScheme(url, "http://") || HasScheme(url, "https://");
}

bool IsHttpsUrl(std::string_view url) { return HasScheme(url, "https://"); }

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
