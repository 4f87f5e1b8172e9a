#include "dispatcher/service/api/http.h"

#include <boost/beast/http/field.hpp>
#include <fmt/format.h>

#include "adapters/json_reader.h"
#include "dispatcher/base/hex.h"
#include "dispatcher/base/platform.h"

namespace egress::service {
namespace {

namespace http = boost::beast::http;

std::string Decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() + 0 && HexDigitValue(s[i + 1]) >= 0 &&
               HexDigitValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexDigitValue(s[i + 1]) * 16 + HexDigitValue(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

HttpResponse TextResponse(unsigned status, ResponseText body, std::string_view content_type) {
  HttpResponse res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, std::string(content_type));
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

HttpResponse JsonResponse(unsigned status, const nlohmann::json& body) {
  // Invalid UTF-8 (a query parameter echoed in an error, a stored byte) becomes U+FFFD: the
  // default dump() would throw.
  return TextResponse(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      "application/json");
}

HttpResponse ErrorResponse(const ApiError& error) {
  return JsonResponse(static_cast<unsigned>(error.http_status), error.ToJson());
}

std::optional<ApiError> CheckRequestText(std::string_view field, std::string_view value,
                                         size_t max_bytes) {
  if (value.size() > max_bytes) {
    return ApiError{400, "invalid_request",
                    fmt::format("{}: longer than {} bytes", field, max_bytes), std::string(field)};
  }
  for (char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return ApiError{400, "invalid_request",
                      fmt::format("{}: contains a control character", field), std::string(field)};
    }
  }
  return std::nullopt;
}

std::optional<ApiError> CheckPlatformFilter(std::string_view field, std::string_view value) {
  if (value.empty() || ParsePlatform(value).has_value()) {
    return std::nullopt;
  }
  return ApiError{400, "invalid_request",
                  fmt::format("{}: unknown platform (slack, discord, line, webhook)", field),
                  std::string(field)};
}

std::vector<std::string> PathSegments(std::string_view target) {
  target = target.substr(0, target.find('?'));
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= target.size()) {
    size_t slash = target.find('/', start);
    if (slash == std::string_view::npos) {
      slash = target.size();
    }
    if (slash > start) {
      out.push_back(Decode(target.substr(start, slash - start)));
    }
    start = slash + 1;
  }
  return out;
}

std::map<std::string, std::string> QueryParams(std::string_view target) {
  std::map<std::string, std::string> out;
  const size_t q = target.find('?');
  if (q == std::string_view::npos) {
    return out;
  }
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    out[Decode(pair.substr(0, eq))] =
        eq == std::string_view::npos ? "" : Decode(pair.substr(eq + 1));
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
  }
  return out;
}

tl::expected<nlohmann::json, ApiError> ParseJsonBody(const HttpRequest& request) {
  adapters::JsonReader reader(request.body());
  size_t depth = 0;
  if (reader.SkipByteOrderMark() && reader.SkipValue(nullptr, nullptr, &depth) &&
      depth > kMaxBodyDepth) {
    return tl::unexpected(
        ApiError{400, "invalid_request",
                 fmt::format("body: nested {} deep; at most {} levels of objects and arrays", depth,
                             kMaxBodyDepth),
                 "body"});
  }
  nlohmann::json body = nlohmann::json::parse(request.body(), nullptr, false);
  if (body.is_discarded()) {
    return tl::unexpected(ApiError{400, "malformed_json", "body: not valid JSON"});
  }
  return body;
}

}  // namespace egress::service
