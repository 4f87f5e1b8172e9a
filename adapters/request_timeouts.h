#pragma once

#include <array>
#include <string_view>
#include <utility>

#include "adapters/adapter_registry.h"
#include "adapters/platform_adapter.h"
#include "adapters/request_trust.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/platform.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

// One platform's limits on each attempt ([platforms.<platform>] connect_timeout and timeout).
// The defaults are HttpRequest's.
struct RequestTimeouts {
  // Default: 5 s.
  Millis connect{5'000};
  // The whole attempt, connect included. Default: 15 s.
  Millis total{15'000};

  friend bool operator==(const RequestTimeouts&, const RequestTimeouts&) = default;
};

// Indexed by Platform.
using PlatformTimeouts = std::array<RequestTimeouts, kMaxPlatforms>;

// A platform's adapter whose every request carries the platform's settings: BuildRequest asks
// `inner` and sets HttpRequest::connect_timeout and ::timeout from `timeouts` (which the
// transport turns into CURLOPT_CONNECTTIMEOUT_MS and CURLOPT_TIMEOUT_MS), ::ca_file and ::ca_path
// from `trust`, and ::client_cert_file and ::client_key_file from the credential (so a client
// certificate goes only with its credential's requests); Interpret is `inner`'s. `inner` must
// outlive it. Immutable; safe from any thread, like the adapters.
class TimedAdapter final : public PlatformAdapter {
 public:
  TimedAdapter(const PlatformAdapter& inner, RequestTimeouts timeouts, RequestTrust trust = {})
      : inner_(inner), timeouts_(timeouts), trust_(std::move(trust)) {}

  Platform platform() const override { return inner_.platform(); }
  Status CheckDestination(std::string_view destination) const override {
    return inner_.CheckDestination(destination);
  }
  Result<HttpRequest> BuildRequest(const storage::Delivery& delivery, const Credential& credential,
                                   WallTime now) const override;
  AttemptReport Interpret(const storage::Delivery& delivery, const Result<HttpResponse>& response,
                          WallTime received_at) const override;
  // `inner`'s, with the platform's timeouts and trust (the token endpoint is the platform's).
  std::optional<HttpRequest> TokenRequest(const Credential& credential) const override;
  bool UsesAccessToken() const override { return inner_.UsesAccessToken(); }
  Result<AccessToken> ReadToken(const Result<HttpResponse>& response) const override {
    return inner_.ReadToken(response);
  }

 private:
  const PlatformAdapter& inner_;
  const RequestTimeouts timeouts_;
  const RequestTrust trust_;
};

// The registry's adapters, each as a TimedAdapter with its platform's timeouts and trust:
// what the delivery loop looks adapters up in, so that no request leaves without them.
// `registry` must outlive it. Immutable after construction; the pointers Find() returns live as
// long as it.
class TimedAdapters {
 public:
  TimedAdapters(const AdapterRegistry& registry, const PlatformTimeouts& timeouts,
                const PlatformTrust& trust = {});

  // As AdapterRegistry::Find: the adapter of a platform the registry has; the registry's
  // InvalidArgument for any other.
  Result<const PlatformAdapter*> Find(std::string_view platform) const;

 private:
  const AdapterRegistry& registry_;
  std::array<std::optional<TimedAdapter>, kMaxPlatforms> adapters_;
};

}  // namespace egress::adapters
