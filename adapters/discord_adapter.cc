#include "adapters/discord_adapter.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "adapters/attempt_reports.h"
#include "adapters/credential_token.h"
#include "adapters/idempotency_keys.h"
#include "adapters/json_body.h"
#include "adapters/url_parts.h"

namespace egress::adapters {
namespace {

using nlohmann::json;

constexpr int64_t kUnknownWebhook = 10015;
constexpr std::string_view kChannelsPrefix = "channels/";
constexpr std::string_view kWebhooksPrefix = "webhooks/";

// The body's retry_after (float seconds) as a wait, rounded up to whole milliseconds; nullopt
// when absent, negative, not finite or not a number.
std::optional<Millis> BodyRetryAfter(const std::optional<json>& body) {
  if (!body.has_value()) {
    return std::nullopt;
  }
  std::optional<double> seconds = NumberField(*body, "retry_after");
  if (!seconds.has_value() || !std::isfinite(*seconds) || *seconds < 0) {
    return std::nullopt;
  }
  const double ms = std::ceil(*seconds * 1000.0);
  if (ms >= static_cast<double>(kMaxRateLimitWait.count())) {
    return kMaxRateLimitWait;
  }
  return Millis(static_cast<int64_t>(ms));
}

// Discord's JSON error code as text ("50013"), or http_<status>.
std::string ErrorCode(const std::optional<json>& body, int status) {
  if (body.has_value()) {
    if (std::optional<int64_t> code = IntegerField(*body, "code"); code.has_value() && *code != 0) {
      return std::to_string(*code);
    }
  }
  return HttpErrorCode(status);
}

void Interpret429(AttemptReport& report, const std::optional<json>& body) {
  std::optional<Millis> wait = BodyRetryAfter(body);
  if (!wait.has_value()) {
    wait = report.outcome.retry_after;
  }
  if (body.has_value() && BoolField(*body, "global") == true) {
    report.observation.global = true;
  }
  std::string code = "rate_limited";
  if (body.has_value()) {
    if (std::optional<int64_t> c = IntegerField(*body, "code"); c.has_value() && *c != 0) {
      code = std::to_string(*c);
    }
  }
  MarkThrottled(report, wait, std::move(code));
  if (report.observation.scope == pacing::RateLimitScope::kShared) {
    report.attempt.detail = "shared-scope 429 (not counted as an invalid request)";
  }
}

}  // namespace

std::optional<DiscordTarget> ParseDiscordDestination(std::string_view destination) {
  DiscordTarget target;
  if (destination.substr(0, kChannelsPrefix.size()) == kChannelsPrefix) {
    std::string_view id = destination.substr(kChannelsPrefix.size());
    if (!IsUrlSegment(id, 32)) {
      return std::nullopt;
    }
    target.id = std::string(id);
    return target;
  }
  if (destination.substr(0, kWebhooksPrefix.size()) == kWebhooksPrefix) {
    std::string_view rest = destination.substr(kWebhooksPrefix.size());
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos || !IsUrlSegment(rest.substr(0, slash), 32) ||
        !IsUrlSegment(rest.substr(slash + 1), 256)) {
      return std::nullopt;
    }
    target.kind = DiscordTarget::Kind::kWebhook;
    target.id = std::string(rest.substr(0, slash));
    target.token = std::string(rest.substr(slash + 1));
    return target;
  }
  return std::nullopt;
}

DiscordAdapter::DiscordAdapter(PlatformEndpoints endpoints) : endpoints_(std::move(endpoints)) {}

Result<HttpRequest> DiscordAdapter::BuildRequest(const storage::Delivery& delivery,
                                                 const Credential& credential, WallTime) const {
  std::optional<DiscordTarget> target = ParseDiscordDestination(delivery.destination);
  if (!target.has_value()) {
    return Status::InvalidArgument("discord destination '" + Printable(delivery.destination, 64) +
                                   "' is neither channels/<id> nor webhooks/<id>/<token>");
  }
  Result<json> payload = ParseJsonObject(delivery.payload, "discord payload");
  if (!payload.has_value()) {
    return payload.error();
  }
  HttpRequest request;
  request.headers = {{"Content-Type", "application/json"}};
  if (target->kind == DiscordTarget::Kind::kWebhook) {
    request.url = JoinUrl(endpoints_.discord_base_url,
                          "/api/v10/webhooks/" + target->id + "/" + target->token + "?wait=true");
    request.body = delivery.payload;
    return request;
  }
  if (Status usable = CheckCredentialToken(credential.token); !usable.ok()) {
    return Status::FailedPrecondition("discord credential '" + credential.name +
                                      "': " + usable.message());
  }
  (*payload)["nonce"] = DiscordNonce(delivery.id);
  (*payload)["enforce_nonce"] = true;
  request.url =
      JoinUrl(endpoints_.discord_base_url, "/api/v10/channels/" + target->id + "/messages");
  request.headers.push_back({"Authorization", "Bot " + credential.token});
  request.body = DumpJson(*payload);
  return request;
}

AttemptReport DiscordAdapter::Interpret(const storage::Delivery& delivery,
                                        const Result<HttpResponse>& response,
                                        WallTime received_at) const {
  if (!response.has_value()) {
    return ReportTransportError(response.error(), received_at);
  }
  AttemptReport report = ReportResponse(*response, received_at);
  const int status = response->status;
  const std::optional<json> body = ParseJsonLenient(response->body);
  if (status >= 200 && status < 300) {
    if (body.has_value()) {
      report.platform_ref = Printable(StringField(*body, "id").value_or(""), 64);
    }
    return report;
  }
  if (status == 429) {
    Interpret429(report, body);
    return report;
  }
  const std::string code = ErrorCode(body, status);
  if (body.has_value()) {
    report.attempt.detail = Printable(StringField(*body, "message").value_or(""), 120);
  } else if (!response->body.empty()) {
    report.attempt.detail = "unreadable body: " + Printable(response->body, 80);
  }
  if (status >= 500) {
    report.outcome.platform_error = code;
    report.attempt.platform_error = code;
    return report;
  }
  MarkPermanent(report, code);
  const bool webhook = delivery.destination.substr(0, kWebhooksPrefix.size()) == kWebhooksPrefix;
  if (status == 401) {
    if (webhook) {
      report.disable_destination = "discord webhook token rejected (401)";
    } else {
      report.invalidate_credential = "discord 401";
    }
  } else if (status == 404 && code == std::to_string(kUnknownWebhook)) {
    report.disable_destination = "discord unknown webhook (10015)";
  }
  return report;
}

Status DiscordAdapter::CheckDestination(std::string_view d) const {
  auto all_digits = [](std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (d.starts_with(kChannelsPrefix) && all_digits(d.substr(kChannelsPrefix.size()))) {
    return Status::Ok();
  }
  if (d.starts_with(kWebhooksPrefix)) {
    std::string_view rest = d.substr(kWebhooksPrefix.size());
    const size_t slash = rest.find('/');
    if (slash != std::string_view::npos && all_digits(rest.substr(0, slash)) &&
        IsUrlSegment(rest.substr(slash + 1), 256)) {
      // The token: unreserved characters only (Discord's are base64url), so that it is one
      // path segment for the request and for the redaction alike.
      return Status::Ok();
    }
  }
  return Status::InvalidArgument(
      "must be channels/<id> or webhooks/<id>/<token> (a token of A-Z a-z 0-9 - . _ ~)");
}

}  // namespace egress::adapters
