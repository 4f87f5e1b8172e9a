#include "adapters/webhook_adapter.h"

#include <utility>
#include <vector>

#include "adapters/attempt_reports.h"
#include "adapters/json_body.h"
#include "adapters/json_text.h"
#include "adapters/url_parts.h"
#include "adapters/webhook_signature.h"

namespace egress::adapters {
namespace {

bool IsThrottleStatus(int status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

Result<std::vector<WebhookKey>> KeysOf(const Credential& credential) {
  if (credential.secrets.empty()) {
    return Status::FailedPrecondition("webhook credential '" + credential.name +
                                      "' has no signing secret");
  }
  std::vector<WebhookKey> keys;
  for (size_t i = 0; i < credential.secrets.size(); ++i) {
    Result<WebhookKey> key = ParseWebhookSecret(credential.secrets[i]);
    if (!key.has_value()) {
      return Status::FailedPrecondition("webhook credential '" + credential.name + "' secret #" +
                                        std::to_string(i + 1) + ": " + key.error().message());
    }
    keys.push_back(std::move(*key));
  }
  return keys;
}

}  // namespace

WebhookAdapter::WebhookAdapter(PlatformEndpoints endpoints) : endpoints_(std::move(endpoints)) {}

Result<HttpRequest> WebhookAdapter::BuildRequest(const storage::Delivery& delivery,
                                                 const Credential& credential, WallTime now) const {
  if (!IsHttpUrl(delivery.destination)) {
    return Status::InvalidArgument("webhook destination '" + Printable(delivery.destination, 64) +
                                   "' is not an http(s) URL");
  }
  if (!IsJsonText(delivery.payload)) {
    return Status::InvalidArgument("webhook payload is not JSON");
  }
  Result<std::vector<WebhookKey>> keys = KeysOf(credential);
  if (!keys.has_value()) {
    return keys.error();
  }
  Result<WebhookSignatureHeaders> signature =
      SignWebhook(*keys, delivery.id, now, delivery.payload);
  if (!signature.has_value()) {
    return signature.error();
  }
  HttpRequest request;
  request.url = delivery.destination;
  request.headers = {{"Content-Type", "application/json"},
                     {"webhook-id", std::move(signature->id)},
                     {"webhook-timestamp", std::move(signature->timestamp)},
                     {"webhook-signature", std::move(signature->signature)}};
  request.body = delivery.payload;
  request.ssrf = endpoints_.webhook_ssrf;
  return request;
}

AttemptReport WebhookAdapter::Interpret(const storage::Delivery&,
                                        const Result<HttpResponse>& response,
                                        WallTime received_at) const {
  if (!response.has_value()) {
    return ReportTransportError(response.error(), received_at);
  }
  AttemptReport report = ReportResponse(*response, received_at);
  const int status = response->status;
  if (status >= 200 && status < 300) {
    return report;
  }
  if (!response->body.empty()) {
    report.attempt.detail = Printable(response->body, 120);
  }
  std::optional<std::string_view> delivery = FindHeader(response->headers, "webhook-delivery");
  if (delivery.has_value() && EqualsIgnoreCase(*delivery, "abort-message")) {
    MarkPermanent(report, "abort_message");
    return report;
  }
  if (status == 410) {
    MarkPermanent(report, HttpErrorCode(status));
    report.disable_destination = "webhook receiver answered 410 Gone";
    return report;
  }
  if (IsThrottleStatus(status)) {
    MarkThrottled(report, report.outcome.retry_after, HttpErrorCode(status));
    return report;
  }
  if (status >= 500) {
    report.outcome.platform_error = HttpErrorCode(status);
    report.attempt.platform_error = report.outcome.platform_error;
    return report;
  }
  MarkPermanent(report, HttpErrorCode(status));
  return report;
}

}  // namespace egress::adapters
