#include "adapters/slack_adapter.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "adapters/attempt_reports.h"
#include "adapters/credential_token.h"
#include "adapters/json_body.h"
#include "adapters/url_parts.h"

namespace egress::adapters {
namespace {

using nlohmann::json;

constexpr size_t kMaxChannelLength = 256;
// Outcome status that makes Classify retry a transient error Slack reported in a 2xx body.
constexpr int kTransientBodyStatus = 503;

constexpr std::array<std::string_view, 2> kThrottleCodes = {"ratelimited", "rate_limited"};
constexpr std::array<std::string_view, 9> kAuthCodes = {
    "invalid_auth",  "not_authed",    "account_inactive",   "token_revoked",    "missing_scope",
    "token_expired", "no_permission", "org_login_required", "ekm_access_denied"};
constexpr std::array<std::string_view, 2> kArchivedCodes = {"is_archived", "channel_is_archived"};
constexpr std::array<std::string_view, 3> kTransientCodes = {"service_unavailable",
                                                             "internal_error", "request_timeout"};
constexpr std::array<std::string_view, 4> kDeadHookCodes = {"channel_is_archived", "no_service",
                                                            "no_active_hooks", "channel_not_found"};

template <size_t N>
bool In(const std::array<std::string_view, N>& set, std::string_view code) {
  for (std::string_view c : set) {
    if (c == code) {
      return true;
    }
  }
  return false;
}

bool IsValidChannel(std::string_view channel) {
  if (channel.empty() || channel.size() > kMaxChannelLength) {
    return false;
  }
  for (char c : channel) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return false;
    }
  }
  return true;
}

// A plain-text code such as "channel_is_archived": lowercase letters, digits and '_'.
bool IsCode(std::string_view text) {
  if (text.empty() || text.size() > 64) {
    return false;
  }
  for (char c : text) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

// `text` without surrounding whitespace, line breaks included.
std::string TrimText(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) {
    return "";
  }
  const size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

// Applies Slack's ok:false `code`.
void ApplyErrorCode(AttemptReport& report, const std::string& code) {
  if (In(kThrottleCodes, code)) {
    MarkThrottled(report, report.outcome.retry_after, code);
    return;
  }
  if (In(kTransientCodes, code)) {
    report.outcome.http_status = kTransientBodyStatus;
    report.outcome.platform_error = code;
    report.attempt.platform_error = code;
    if (code == "internal_error") {
      report.attempt.detail = "slack internal_error: the message may have been posted";
    }
    return;
  }
  MarkPermanent(report, code);
  if (In(kAuthCodes, code)) {
    report.invalidate_credential = "slack " + code;
  } else if (In(kArchivedCodes, code)) {
    report.disable_destination = "slack " + code;
  }
}

AttemptReport InterpretApi(const HttpResponse& response, WallTime received_at) {
  AttemptReport report = ReportResponse(response, received_at);
  const int status = response.status;
  std::optional<json> body = ParseJsonLenient(response.body);
  std::optional<std::string> code;
  if (body.has_value() && BoolField(*body, "ok") == false) {
    code = StringField(*body, "error");
  }
  if (status == 429) {
    MarkThrottled(report, report.outcome.retry_after, code.value_or("ratelimited"));
    return report;
  }
  if (status >= 500) {
    report.outcome.platform_error = code.value_or(HttpErrorCode(status));
    report.attempt.platform_error = report.outcome.platform_error;
    return report;
  }
  if (code.has_value()) {
    ApplyErrorCode(report, Printable(*code, 64));
    return report;
  }
  if (body.has_value() && BoolField(*body, "ok") == false) {
    MarkPermanent(report, "unknown_error");
    report.attempt.detail = "slack ok:false without an error code: " + Printable(response.body, 80);
    return report;
  }
  if (status >= 200 && status < 300) {
    if (!body.has_value() || !body->is_object()) {
      report.attempt.detail = "slack 2xx with an unreadable body: " + Printable(response.body, 80);
    } else {
      report.platform_ref = Printable(StringField(*body, "ts").value_or(""), 64);
    }
    return report;
  }
  MarkPermanent(report, HttpErrorCode(status));
  report.attempt.detail = Printable(response.body, 120);
  return report;
}

AttemptReport InterpretWebhook(const HttpResponse& response, WallTime received_at) {
  AttemptReport report = ReportResponse(response, received_at);
  const int status = response.status;
  const std::string text = TrimText(response.body);
  const std::string code = IsCode(text) ? text : HttpErrorCode(status);
  if (status >= 200 && status < 300) {
    return report;
  }
  if (status == 429) {
    MarkThrottled(report, report.outcome.retry_after, IsCode(text) ? text : "rate_limited");
    return report;
  }
  if (status >= 500) {
    report.outcome.platform_error = code;
    report.attempt.platform_error = code;
    return report;
  }
  MarkPermanent(report, code);
  if (status == 410 || In(kDeadHookCodes, code)) {
    report.disable_destination = "slack webhook " + code;
  }
  if (!IsCode(text)) {
    report.attempt.detail = Printable(response.body, 120);
  }
  return report;
}

}  // namespace

SlackAdapter::SlackAdapter(PlatformEndpoints endpoints) : endpoints_(std::move(endpoints)) {}

bool SlackAdapter::IsIncomingWebhook(std::string_view destination) const {
  if (IsHttpsUrl(destination)) {
    return true;
  }
  const std::string base = JoinUrl(endpoints_.slack_base_url, "/");
  return IsHttpUrl(destination) && destination.size() > base.size() &&
         destination.substr(0, base.size()) == base;
}

Result<HttpRequest> SlackAdapter::BuildWebhookRequest(const storage::Delivery& delivery) const {
  Result<json> payload = ParseJsonObject(delivery.payload, "slack webhook payload");
  if (!payload.has_value()) {
    return payload.error();
  }
  HttpRequest request;
  request.url = delivery.destination;
  request.headers = {{"Content-Type", "application/json; charset=utf-8"}};
  request.body = delivery.payload;
  if (IsHttpsUrl(delivery.destination)) {
    request.ssrf = endpoints_.WebhookSsrfFor(delivery.tenant);
  }
  return request;
}

Result<HttpRequest> SlackAdapter::BuildRequest(const storage::Delivery& delivery,
                                               const Credential& credential, WallTime) const {
  if (IsIncomingWebhook(delivery.destination)) {
    return BuildWebhookRequest(delivery);
  }
  if (!IsValidChannel(delivery.destination) ||
      delivery.destination.find("://") != std::string::npos) {
    return Status::InvalidArgument("slack destination '" + Printable(delivery.destination, 64) +
                                   "' is neither a channel nor an https webhook URL");
  }
  if (Status usable = CheckCredentialToken(credential.token); !usable.ok()) {
    return Status::FailedPrecondition("slack credential '" + credential.name +
                                      "': " + usable.message());
  }
  Result<json> payload = ParseJsonObject(delivery.payload, "slack payload");
  if (!payload.has_value()) {
    return payload.error();
  }
  (*payload)["channel"] = delivery.destination;
  HttpRequest request;
  request.url = JoinUrl(endpoints_.slack_base_url, "/api/chat.postMessage");
  request.headers = {{"Authorization", "Bearer " + credential.token},
                     {"Content-Type", "application/json; charset=utf-8"}};
  request.body = DumpJson(*payload);
  return request;
}

AttemptReport SlackAdapter::Interpret(const storage::Delivery& delivery,
                                      const Result<HttpResponse>& response,
                                      WallTime received_at) const {
  if (!response.has_value()) {
    return ReportTransportError(response.error(), received_at);
  }
  if (IsIncomingWebhook(delivery.destination)) {
    return InterpretWebhook(*response, received_at);
  }
  return InterpretApi(*response, received_at);
}

Status SlackAdapter::CheckDestination(std::string_view d) const {
  const bool channel = !d.empty() && d.size() <= 64 && std::all_of(d.begin(), d.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
  });
  if (channel) {
    return Status::Ok();
  }
  if (d.find("://") != std::string_view::npos) {
    if (Status url = CheckHttpUrl(d, true); !url.ok()) {
      return Status::InvalidArgument(url.message() + " (an https incoming-webhook URL)");
    }
    return Status::Ok();
  }
  return Status::InvalidArgument(
      "must be a Slack channel id (e.g. C0123456789) or an https incoming-webhook URL");
}

}  // namespace egress::adapters
