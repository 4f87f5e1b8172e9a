#include "adapters/request_timeouts.h"

#include <optional>
#include <utility>

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
  const std::optional<Platform> parsed = ParsePlatform(platform);
  if (!parsed) {
    return registry_.Find(platform);  // its InvalidArgument naming the platform
  }
  return &adapters_[static_cast<size_t>(*parsed)];
}

}  // namespace egress::adapters
