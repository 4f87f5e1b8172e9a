#include "adapters/line_adapter.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>
#include <string>
#include <utility>

#include "adapters/attempt_reports.h"
#include "adapters/credential_token.h"
#include "adapters/idempotency_keys.h"
#include "adapters/json_body.h"
#include "adapters/url_parts.h"

namespace egress::adapters {
namespace {

using nlohmann::json;

constexpr size_t kMaxDestinationLength = 256;

bool IsValidRecipient(std::string_view id) {
  if (id.empty() || id.size() > kMaxDestinationLength) {
    return false;
  }
  for (char c : id) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return false;
    }
  }
  return true;
}

// Checks a multicast "to" array: 1..500 recipient strings.
Status CheckRecipients(const json& to) {
  if (to.empty()) {
    return Status::InvalidArgument("line multicast \"to\" is empty");
  }
  if (to.size() > kLineMulticastMaxRecipients) {
    return Status::InvalidArgument("line multicast to " + std::to_string(to.size()) +
                                   " recipients exceeds 500; split it with SplitLineMulticast");
  }
  for (const json& id : to) {
    if (!id.is_string() || !IsValidRecipient(id.get_ref<const std::string&>())) {
      return Status::InvalidArgument("line multicast \"to\" holds a malformed recipient");
    }
  }
  return Status::Ok();
}

void Interpret429(AttemptReport& report, const std::optional<std::string>& message,
                  WallTime received_at) {
  if (message == kLineMonthlyLimitMessage) {
    MarkThrottled(report, UntilNextMonthUtc(received_at), "monthly_limit");
    return;
  }
  MarkThrottled(report, report.outcome.retry_after, "rate_limited");
  report.attempt.detail = Printable(message.value_or(""), 120);
}

}  // namespace

Millis UntilNextMonthUtc(WallTime received_at) {
  using namespace std::chrono;
  const sys_days today = floor<days>(received_at);
  const year_month_day ymd(today);
  const year_month next = year_month(ymd.year(), ymd.month()) + months(1);
  const sys_days first = sys_days(next / day(1));
  return duration_cast<Millis>(WallTime(first) - received_at);
}

Result<std::vector<std::string>> SplitLineMulticast(std::string_view payload,
                                                    size_t max_recipients) {
  if (max_recipients == 0) {
    return Status::InvalidArgument("max_recipients must be at least 1");
  }
  Result<json> parsed = ParseJsonObject(payload, "line payload");
  if (!parsed.has_value()) {
    return parsed.error();
  }
  auto to = parsed->find("to");
  if (to == parsed->end() || !to->is_array()) {
    return std::vector<std::string>{std::string(payload)};
  }
  if (to->empty()) {
    return Status::InvalidArgument("line multicast \"to\" is empty");
  }
  const json recipients = std::move(*to);
  std::vector<std::string> parts;
  for (size_t begin = 0; begin < recipients.size(); begin += max_recipients) {
    const size_t end = std::min(recipients.size(), begin + max_recipients);
    (*parsed)["to"] = json(recipients.begin() + static_cast<std::ptrdiff_t>(begin),
                           recipients.begin() + static_cast<std::ptrdiff_t>(end));
    parts.push_back(DumpJson(*parsed));
  }
  return parts;
}

LineAdapter::LineAdapter(PlatformEndpoints endpoints) : endpoints_(std::move(endpoints)) {}

Result<HttpRequest> LineAdapter::BuildRequest(const storage::Delivery& delivery,
                                              const Credential& credential, WallTime) const {
  if (delivery.id.empty()) {
    return Status::InvalidArgument("line delivery has no id to derive its retry key from");
  }
  Result<json> payload = ParseJsonObject(delivery.payload, "line payload");
  if (!payload.has_value()) {
    return payload.error();
  }
  if (Status usable = CheckCredentialToken(credential.token); !usable.ok()) {
    return Status::FailedPrecondition("line credential '" + credential.name +
                                      "': " + usable.message());
  }
  HttpRequest request;
  request.headers = {{"Authorization", "Bearer " + credential.token},
                     {"Content-Type", "application/json"},
                     {"X-Line-Retry-Key", LineRetryKey(delivery.id)}};
  auto to = payload->find("to");
  if (to != payload->end() && to->is_array()) {
    Status recipients = CheckRecipients(*to);
    if (!recipients.ok()) {
      return recipients;
    }
    request.url = JoinUrl(endpoints_.line_base_url, "/v2/bot/message/multicast");
    request.body = delivery.payload;
    return request;
  }
  if (!IsValidRecipient(delivery.destination)) {
    return Status::InvalidArgument("line destination '" + Printable(delivery.destination, 64) +
                                   "' is not a user, group or room id");
  }
  (*payload)["to"] = delivery.destination;
  request.url = JoinUrl(endpoints_.line_base_url, "/v2/bot/message/push");
  request.body = DumpJson(*payload);
  return request;
}

namespace {

// What a sent delivery actually cost (docs/costs.md): a multicast is counted by LINE once per
// recipient, so its distinct recipients; a push is 1. Unset when that is the delivery's cost, or
// the payload cannot be read (the estimate stands).
std::optional<int64_t> ActualCost(const storage::Delivery& delivery) {
  int64_t actual = 1;
  if (delivery.payload.find("\"to\"") != std::string::npos) {
    Result<json> payload = ParseJsonObject(delivery.payload, "line payload");
    if (!payload.has_value()) {
      return std::nullopt;
    }
    auto to = payload->find("to");
    if (to != payload->end() && to->is_array()) {
      std::set<std::string> distinct;
      for (const json& r : *to) {
        if (r.is_string()) {
          distinct.insert(r.get<std::string>());
        }
      }
      actual = static_cast<int64_t>(distinct.size());
    }
  }
  if (actual == static_cast<int64_t>(delivery.cost)) {
    return std::nullopt;
  }
  return actual;
}

}  // namespace

AttemptReport LineAdapter::Interpret(const storage::Delivery& delivery,
                                     const Result<HttpResponse>& response,
                                     WallTime received_at) const {
  if (!response.has_value()) {
    return ReportTransportError(response.error(), received_at);
  }
  AttemptReport report = ReportResponse(*response, received_at);
  const int status = response->status;
  if (status >= 200 && status < 300) {
    report.platform_ref =
        Printable(FindHeader(response->headers, "x-line-request-id").value_or(""), 64);
    report.actual_cost = ActualCost(delivery);
    return report;
  }
  const std::optional<json> body = ParseJsonLenient(response->body);
  const std::optional<std::string> message =
      body.has_value() ? StringField(*body, "message") : std::nullopt;
  if (status == 409) {
    std::optional<std::string_view> accepted =
        FindHeader(response->headers, "x-line-accepted-request-id");
    if (accepted.has_value() && !accepted->empty()) {
      report.outcome.accepted = true;
      report.platform_ref = Printable(*accepted, 64);
      report.attempt.detail = "retry key already accepted";
      report.actual_cost = ActualCost(delivery);
      return report;
    }
  }
  if (status == 429) {
    Interpret429(report, message, received_at);
    return report;
  }
  if (message.has_value()) {
    report.attempt.detail = Printable(*message, 120);
  } else if (!response->body.empty()) {
    report.attempt.detail = "unreadable body: " + Printable(response->body, 80);
  }
  if (status >= 500) {
    report.outcome.platform_error = HttpErrorCode(status);
    report.attempt.platform_error = report.outcome.platform_error;
    return report;
  }
  MarkPermanent(report, HttpErrorCode(status));
  if (status == 401) {
    report.invalidate_credential = "line 401";
  }
  return report;
}

Status LineAdapter::CheckDestination(std::string_view d) const {
  const bool ok = d.size() == 33 && (d[0] == 'U' || d[0] == 'C' || d[0] == 'R') &&
                  std::all_of(d.begin() + 1, d.end(), [](char c) {
                    return std::isxdigit(static_cast<unsigned char>(c)) != 0;
                  });
  if (ok) {
    return Status::Ok();
  }
  return Status::InvalidArgument(
      "must be a LINE user, group or room id (U, C or R and 32 hex digits)");
}

}  // namespace egress::adapters
