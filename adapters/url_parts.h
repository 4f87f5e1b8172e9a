#pragma once

#include <string>
#include <string_view>

namespace egress::adapters {

// Small URL checks for building requests from destinations. Pure functions.

// `base` (an operator-configured origin, trailing '/' ignored) followed by `path` ("/api/...").
std::string JoinUrl(std::string_view base, std::string_view path);

// True for "http://host..." or "https://host..." (scheme case-insensitive) with a non-empty host
// and no spaces or control bytes. Says nothing about whether the host may be reached (that is the
// SSRF guard's decision on the resolved address).
bool IsHttpUrl(std::string_view url);

// "scheme://authority" of an absolute URL, as the transport keys its connections (the whole
// text when it has no "://").
std::string_view UrlOrigin(std::string_view url);

// True for "https://host..." only.
bool IsHttpsUrl(std::string_view url);

// True for a non-empty path segment of unreserved characters (A-Z a-z 0-9 - . _ ~), at most
// `max_length` bytes: safe to paste into a path without escaping.
bool IsUrlSegment(std::string_view text, size_t max_length = 128);

}  // namespace egress::adapters
