#include "dispatcher/service/api/intake.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "dispatcher/service/api/http.h"

namespace egress::service {

HttpResponse Throttled(const IntakeLimiter::Decision& d, WallTime now, std::string_view why) {
  const int64_t retry_ms = std::max<int64_t>(1, d.retry_after.count());
  const int64_t retry_s = (retry_ms + 999) / 1000;
  const int64_t reset_s = (d.reset_after.count() + 999) / 1000;
  const int64_t window_s = std::max<int64_t>(1, (d.budget.scale_ms + 999) / 1000);
  HttpResponse res =
      JsonResponse(429, {{"error", "rate_limited"},
                         {"message", fmt::format("tenant is over its {}; retry later", why)},
                         {"retry_after_ms", retry_ms}});
  res.set("Retry-After", std::to_string(retry_s));
  res.set("X-RateLimit-Limit", std::to_string(d.budget.limit));
  res.set("X-RateLimit-Remaining", std::to_string(d.remaining));
  res.set("X-RateLimit-Reset",
          std::to_string(
              std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() +
              reset_s));
  res.set("RateLimit-Policy", fmt::format("\"tenant_intake\";q={};w={}", d.budget.limit, window_s));
  res.set("RateLimit", fmt::format("\"tenant_intake\";r={};t={}", d.remaining, reset_s));
  return res;
}

HttpResponse Unavailable(const Status& s) {
  HttpResponse res = ErrorResponse(FromStatus(s));
  if (res.result_int() == 503) {
    res.set("Retry-After", "1");
  }
  return res;
}

storage::Delivery Queued(storage::NewDelivery in, const std::string& id, int64_t now_ms) {
  storage::Delivery d;
  d.id = id;
  d.tenant = std::move(in.tenant);
  d.platform = std::move(in.platform);
  d.destination = std::move(in.destination);
  d.credential = std::move(in.credential);
  d.created_ms = now_ms;
  d.updated_ms = now_ms;
  d.next_attempt_ms = now_ms;
  d.cost = in.cost;
  d.ordering_key = std::move(in.ordering_key);
  return d;
}

const std::optional<std::string>& CredentialPlatforms::Find(const std::string& tenant,
                                                            const std::string& name) {
  for (const Entry& e : recent_) {
    if (e.tenant == tenant && e.name == name) {
      return e.platform;
    }
  }
  auto cred = book_.Find(tenant, name);
  Entry& e = recent_.size() < kRemembered ? recent_.emplace_back() : recent_[next_++ % kRemembered];
  e.tenant = tenant;
  e.name = name;
  e.platform = cred ? std::optional<std::string>(std::move(cred->platform)) : std::nullopt;
  return e.platform;
}

tl::expected<storage::NewDelivery, ApiError> CheckItem(Service& s, DeliveryFields&& fields,
                                                       CredentialPlatforms& credentials) {
  auto parsed = CheckDeliveryFields(std::move(fields), s.options().intake);
  if (!parsed) {
    return parsed;
  }
  const std::optional<std::string>& platform = credentials.Find(parsed->tenant, parsed->credential);
  if (!platform) {
    return tl::unexpected(ApiError{422, "unknown_credential",
                                   fmt::format("credential: '{}' is not registered for tenant '{}'",
                                               parsed->credential, parsed->tenant),
                                   "credential"});
  }
  if (*platform != parsed->platform) {
    return tl::unexpected(ApiError{422, "credential_platform_mismatch",
                                   fmt::format("credential: '{}' is a {} credential, not {}",
                                               parsed->credential, *platform, parsed->platform),
                                   "credential"});
  }
  return parsed;
}

}  // namespace egress::service
