#include "dispatcher/service/api/auth.h"

#include <boost/beast/http/field.hpp>
#include <fmt/format.h>
#include <openssl/crypto.h>

#include "adapters/api_key.h"
#include "dispatcher/service/api/http.h"
#include "dispatcher/service/service.h"

namespace egress::service {
namespace {

namespace http = boost::beast::http;

std::string_view View(boost::beast::string_view v) { return {v.data(), v.size()}; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

// The credential of "Authorization: Bearer <credential>" (the scheme in any case, RFC 7235);
// nullopt when the header is absent or of another scheme.
std::optional<std::string_view> BearerOf(const HttpRequestHeader& request) {
  auto it = request.find(http::field::authorization);
  if (it == request.end()) {
    return std::nullopt;
  }
  std::string_view value = View(it->value());
  const size_t space = value.find(' ');
  if (space == std::string_view::npos || !EqualsIgnoreCase(value.substr(0, space), "Bearer")) {
    return std::nullopt;
  }
  value.remove_prefix(space);
  value.remove_prefix(std::min(value.find_first_not_of(' '), value.size()));
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) {
    value.remove_suffix(1);
  }
  return value;
}

HttpResponse Unauthorized(std::string message) {
  HttpResponse res = ErrorResponse({401, "unauthorized", std::move(message)});
  res.set(http::field::www_authenticate, "Bearer");
  return res;
}

}  // namespace

HttpResponse Forbidden(std::string message) {
  return ErrorResponse({403, "forbidden", std::move(message)});
}

std::optional<ApiError> ConfineTenantFilter(const TenantScope& scope, std::string_view field,
                                            std::string& tenant) {
  if (!scope) {
    return std::nullopt;
  }
  if (tenant.empty()) {
    tenant = *scope;
    return std::nullopt;
  }
  if (tenant != *scope) {
    return ApiError{403, "forbidden",
                    fmt::format("{}: this API key acts for its own tenant only", field),
                    std::string(field)};
  }
  return std::nullopt;
}

std::variant<Principal, HttpResponse> Authenticate(Service& s, const HttpRequestHeader& request,
                                                   const boost::asio::ip::address& client,
                                                   Access access) {
  const AuthOptions& options = s.options().auth;
  if (access == Access::kOpen ||
      (access == Access::kMetrics && (!options.metrics_auth || !options.required))) {
    return Principal{};
  }
  auto x_admin = request.find("X-Admin-Token");
  const std::optional<std::string_view> bearer = BearerOf(request);
  if (x_admin == request.end() && !bearer) {
    if (!options.required && access != Access::kAdmin) {
      return Principal{};
    }
    s.metrics().Inc(CounterId::kAuthFailures, {{"reason", "missing"}});
    return Unauthorized(access == Access::kAdmin
                            ? "the admin token is required (X-Admin-Token or Authorization: Bearer)"
                            : "an API key is required (Authorization: Bearer <key>)");
  }
  if (const Millis wait = s.auth_failures().Blocked(client); wait.count() > 0) {
    s.metrics().Inc(CounterId::kAuthFailures, {{"reason", "over_budget"}});
    const int64_t seconds = std::max<int64_t>(1, (wait.count() + 999) / 1000);
    HttpResponse res = ErrorResponse(
        {429, "too_many_auth_failures",
         fmt::format("too many failed authentications from this address; retry in {} s", seconds)});
    res.set(http::field::retry_after, std::to_string(seconds));
    return res;
  }
  // Hashed first: the comparisons below see digests of equal length, never the secret itself.
  const std::string digest =
      adapters::ApiKeyDigest(x_admin != request.end() ? View(x_admin->value()) : *bearer);
  const std::string& admin = s.admin_token_digest();
  if (!admin.empty() && CRYPTO_memcmp(digest.data(), admin.data(), digest.size()) == 0) {
    return Principal{.kind = Principal::Kind::kAdmin};
  }
  std::optional<std::string> tenant;
  if (x_admin == request.end()) {
    tenant = s.api_keys().TenantOf(digest);
  }
  if (!tenant) {
    s.metrics().Inc(CounterId::kAuthFailures, {{"reason", "unknown"}});
    s.auth_failures().Fail(client);
    return Unauthorized(x_admin != request.end() ? "X-Admin-Token: not the admin token"
                                                 : "unknown API key or token");
  }
  if (access != Access::kTenant) {
    return Forbidden(access == Access::kAdmin ? "this route needs the admin token"
                                              : "/metrics needs the admin token");
  }
  return Principal{.kind = Principal::Kind::kTenant, .tenant = std::move(*tenant)};
}

}  // namespace egress::service
