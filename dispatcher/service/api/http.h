#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dispatcher/service/api/error.h"
#include "dispatcher/service/api/http_server.h"

namespace egress::service {

// Response and request helpers shared by the API handlers.
// `body` serialised compactly; invalid UTF-8 in its strings becomes U+FFFD, never an exception.
HttpResponse JsonResponse(unsigned status, const nlohmann::json& body);
HttpResponse ErrorResponse(const ApiError& error);
HttpResponse TextResponse(unsigned status, ResponseText body, std::string_view content_type);
inline HttpResponse TextResponse(unsigned status, std::string body, std::string_view content_type) {
  return TextResponse(status, ResponseText(std::move(body)), content_type);
}

// A name or filter taken from a request (a tenant or credential name in an admin path, a list
// filter): nullopt when it has at most `max_bytes` bytes and no control character (U+0000 to
// U+001F, U+007F), as every field intake stores (storage/validate_delivery.cc); else a 400
// invalid_request naming `field`. Such a value could name nothing that is or will be stored.
std::optional<ApiError> CheckRequestText(std::string_view field, std::string_view value,
                                         size_t max_bytes);

// A platform filter: nullopt when empty (any platform) or a platform's name (slack, discord,
// line, webhook), else a 400 invalid_request naming `field`.
std::optional<ApiError> CheckPlatformFilter(std::string_view field, std::string_view value);

// The path without the query, split at '/': "/v1/deliveries/X" -> {"v1","deliveries","X"}.
std::vector<std::string> PathSegments(std::string_view target);
// Query parameters, percent-decoded ("+" is a space).
std::map<std::string, std::string> QueryParams(std::string_view target);

// The deepest nesting of objects and arrays ParseJsonBody accepts. The bodies it reads (replay,
// enable, the admin routes) need 3; a tree no deeper is safe to copy, compare and dump, which
// nlohmann does recursively.
inline constexpr size_t kMaxBodyDepth = 64;

// Parses a JSON body (replay, enable, the admin routes; intake reads its own): a typed 400 naming
// the problem when it is not JSON (malformed_json) or nests deeper than kMaxBodyDepth
// (invalid_request, field "body"; measured without recursion, before any tree is built).
tl::expected<nlohmann::json, ApiError> ParseJsonBody(const HttpRequest& request);

}  // namespace egress::service
