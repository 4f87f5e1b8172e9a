#include "adapters/request_timeouts.h"

#include <optional>
#include <utility>

#include "dispatcher/base/check.h"

namespace egress::adapters {
namespace {

TimedAdapter Timed(const AdapterRegistry& registry, const PlatformTimeouts& timeouts,
                   Platform platform) {
  return TimedAdapter(registry.Get(platform), timeouts[static_cast<size_t>(platform)]);
}

}  // namespace

Result<HttpRequest> TimedAdapter::BuildRequest(const storage::Delivery& delivery,
                                               const Credential& credential, WallTime now) const {
  Result<HttpRequest> request = inner_.BuildRequest(delivery, credential, now);
  if (request) {
    request->connect_timeout = timeouts_.connect;
    request->timeout = timeouts_.total;
  }
  return request;
}

AttemptReport TimedAdapter::Interpret(const storage::Delivery& delivery,
                                      const Result<HttpResponse>& response,
                                      WallTime received_at) const {
  return inner_.Interpret(delivery, response, received_at);
}

TimedAdapters::TimedAdapters(const AdapterRegistry& registry, const PlatformTimeouts& timeouts)
    : registry_(registry),
      adapters_{Timed(registry, timeouts, Platform::kSlack),
                Timed(registry, timeouts, Platform::kDiscord),
                Timed(registry, timeouts, Platform::kLine),
                Timed(registry, timeouts, Platform::kWebhook)} {}

Result<const PlatformAdapter*> TimedAdapters::Find(std::string_view platform) const {
  Result<const PlatformAdapter*> found = registry_.Find(platform);
  if (!found) {
    return found;
  }
  const std::optional<Platform> parsed = ParsePlatform(platform);
  EGRESS_CHECK(parsed.has_value());  // the registry knows exactly the platforms pacing knows
  return &adapters_[static_cast<size_t>(*parsed)];
}

}  // namespace egress::adapters
