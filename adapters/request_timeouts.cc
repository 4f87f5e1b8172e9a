#include "adapters/request_timeouts.h"

#include <optional>
#include <utility>

namespace egress::adapters {
namespace {

TimedAdapter Timed(const AdapterRegistry& registry, const PlatformTimeouts& timeouts,
                   const PlatformTrust& trust, Platform platform) {
  const auto i = static_cast<size_t>(platform);
  return TimedAdapter(registry.Get(platform), timeouts[i], trust[i]);
}

}  // namespace

Result<HttpRequest> TimedAdapter::BuildRequest(const storage::Delivery& delivery,
                                               const Credential& credential, WallTime now) const {
  Result<HttpRequest> request = inner_.BuildRequest(delivery, credential, now);
  if (request) {
    request->connect_timeout = timeouts_.connect;
    request->timeout = timeouts_.total;
    request->ca_file = trust_.ca_file;
    request->ca_path = trust_.ca_path;
    request->client_cert_file = credential.client_cert_file;
    request->client_key_file = credential.client_key_file;
  }
  return request;
}

AttemptReport TimedAdapter::Interpret(const storage::Delivery& delivery,
                                      const Result<HttpResponse>& response,
                                      WallTime received_at) const {
  return inner_.Interpret(delivery, response, received_at);
}

TimedAdapters::TimedAdapters(const AdapterRegistry& registry, const PlatformTimeouts& timeouts,
                             const PlatformTrust& trust)
    : registry_(registry),
      adapters_{Timed(registry, timeouts, trust, Platform::kSlack),
                Timed(registry, timeouts, trust, Platform::kDiscord),
                Timed(registry, timeouts, trust, Platform::kLine),
                Timed(registry, timeouts, trust, Platform::kWebhook)} {}

Result<const PlatformAdapter*> TimedAdapters::Find(std::string_view platform) const {
  const std::optional<Platform> parsed = ParsePlatform(platform);
  if (!parsed) {
    return registry_.Find(platform);  // its InvalidArgument naming the platform
  }
  return &adapters_[static_cast<size_t>(*parsed)];
}

}  // namespace egress::adapters
