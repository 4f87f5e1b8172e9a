#include "adapters/request_timeouts.h"

#include <optional>
#include <utility>

namespace egress::adapters {

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

std::optional<HttpRequest> TimedAdapter::TokenRequest(const Credential& credential) const {
  std::optional<HttpRequest> request = inner_.TokenRequest(credential);
  if (request) {
    request->connect_timeout = timeouts_.connect;
    request->timeout = timeouts_.total;
    request->ca_file = trust_.ca_file;
    request->ca_path = trust_.ca_path;
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
    : registry_(registry) {
  for (const Platform platform : Platforms()) {
    if (const PlatformAdapter* adapter = registry.Get(platform)) {
      const size_t i = PlatformIndex(platform);
      adapters_[i].emplace(*adapter, timeouts[i], trust[i]);
    }
  }
}

Result<const PlatformAdapter*> TimedAdapters::Find(std::string_view platform) const {
  const std::optional<Platform> parsed = ParsePlatform(platform);
  if (!parsed || !adapters_[PlatformIndex(*parsed)]) {
    return registry_.Find(platform);  // its InvalidArgument naming the platform
  }
  return &*adapters_[PlatformIndex(*parsed)];
}

}  // namespace egress::adapters
