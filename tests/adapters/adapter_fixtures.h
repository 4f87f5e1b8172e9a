#pragma once

// Hand-built deliveries and responses for the adapter unit tests (no network).

#include <string>
#include <utility>

#include "adapters/http_transport.h"
#include "adapters/platform_adapter.h"
#include "storage/delivery.h"

namespace egress::adapters {

// 2026-01-01T00:00:00Z plus 1.5 s.
inline const WallTime kTestNow = FromUnixMillis(1'767'225'601'500);

inline PlatformEndpoints TestEndpoints() {
  PlatformEndpoints e;
  e.slack_base_url = "https://slack.test";
  e.discord_base_url = "https://discord.test/";
  e.line_base_url = "https://line.test";
  e.webhook_ssrf.allow_private_networks = false;
  return e;
}

inline storage::Delivery MakeDelivery(std::string platform, std::string destination,
                                      std::string payload) {
  storage::Delivery d;
  d.id = "01JH0000000000000000000001";
  d.tenant = "acme";
  d.platform = std::move(platform);
  d.destination = std::move(destination);
  d.credential = "main";
  d.payload = std::move(payload);
  return d;
}

inline Credential TokenCredential(std::string token) {
  return Credential{.name = "main", .platform = "", .token = std::move(token), .secrets = {}};
}

inline Result<HttpResponse> Response(int status, HttpHeaders headers = {}, std::string body = "",
                                     Millis elapsed = Millis(120)) {
  HttpResponse r;
  r.status = status;
  r.headers = std::move(headers);
  r.body = std::move(body);
  r.elapsed = elapsed;
  r.remote_ip = "192.0.2.10";
  return r;
}

// The value of request header `name` (exact case), or "<absent>".
inline std::string HeaderOf(const HttpRequest& request, const std::string& name) {
  for (const HttpHeader& h : request.headers) {
    if (h.name == name) {
      return h.value;
    }
  }
  return "<absent>";
}

}  // namespace egress::adapters
