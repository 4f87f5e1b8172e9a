#pragma once

#include <string>
#include <string_view>

#include "dispatcher/base/status.h"

namespace egress::adapters {

// Small URL checks for building requests from destinations. Pure functions.

// `base` (an operator-configured origin, trailing '/' ignored) followed by `path` ("/api/...").
std::string JoinUrl(std::string_view base, std::string_view path);

// OK for "http://host..." or "https://host..." (scheme case-insensitive; https only with
// `https_only`) with a non-empty host, written in RFC 3986's characters only (2.2, 2.3: letters,
// digits, - . _ ~ : / ? # [ ] @ ! $ & ' ( ) * + , ; = and '%' before two hex digits), so that
// the URL the receiver gets, the one we redact and the decision to seal it are one parse
// (docs/security.md, "Redaction"). InvalidArgument names the first byte that is not, by offset
// and value, never by the text around it. Says nothing about whether the host may be reached
// (that is the SSRF guard's decision on the resolved address).
Status CheckHttpUrl(std::string_view url, bool https_only = false);
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
