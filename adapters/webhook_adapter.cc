#include "adapters/webhook_adapter.h"

#include <utility>

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
  Result<std::shared_ptr<const WebhookSigner>> signer = signers_.For(credential);
  if (!signer.has_value()) {
    return signer.error();
  }
  Result<WebhookSignatureHeaders> signature = (*signer)->Sign(delivery.id, now, delivery.payload);
  if (!signature.has_value()) {
    return signature.error();
  }
  HttpRequest request;
  request.url = delivery.destination;
  // Moved in one by one: a braced list would copy every string out of its initializer_list.
  request.headers.reserve(5);
  request.headers.push_back({"Content-Type", "application/json"});
  request.headers.push_back({"webhook-id", std::move(signature->id)});
  request.headers.push_back({"webhook-timestamp", std::move(signature->timestamp)});
  request.headers.push_back({"webhook-signature", std::move(signature->signature)});
  if (!delivery.traceparent.empty()) {
    request.headers.push_back({"traceparent", delivery.traceparent});  // W3C Trace Context
  }
  request.body = delivery.payload;
  request.ssrf = endpoints_.WebhookSsrfFor(delivery.tenant);
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

Status WebhookAdapter::CheckDestination(std::string_view d) const { return CheckHttpUrl(d); }

}  // namespace egress::adapters
