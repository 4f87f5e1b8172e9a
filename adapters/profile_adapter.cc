#include "adapters/profile_adapter.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "adapters/attempt_reports.h"
#include "adapters/header_number.h"
#include "adapters/json_body.h"

namespace egress::adapters {
namespace {

constexpr size_t kMaxErrorText = 120;

// A number read as `unit` into a delay from `received_at`, within [0, kMaxRateLimitWait].
std::optional<Millis> DelayOf(double value, ResetUnit unit, WallTime received_at) {
  if (!std::isfinite(value)) {
    return std::nullopt;
  }
  double ms = 0;
  switch (unit) {
    case ResetUnit::kSeconds:
      ms = value * 1000.0;
      break;
    case ResetUnit::kMilliseconds:
      ms = value;
      break;
    case ResetUnit::kEpochSeconds:
      ms = value * 1000.0 - static_cast<double>(ToUnixMillis(received_at));
      break;
    case ResetUnit::kEpochMilliseconds:
      ms = value - static_cast<double>(ToUnixMillis(received_at));
      break;
  }
  const double cap = static_cast<double>(Millis(kMaxRateLimitWait).count());
  return Millis(static_cast<int64_t>(std::ceil(std::clamp(ms, 0.0, cap))));
}

std::optional<double> NumberAt(const nlohmann::json& body, std::string_view pointer) {
  const nlohmann::json* at = pointer.empty() ? nullptr : AtPointer(body, pointer);
  if (at == nullptr) {
    return std::nullopt;
  }
  if (at->is_number()) {
    return at->get<double>();
  }
  if (at->is_string()) {
    return ParseHeaderNumber(at->get_ref<const std::string&>());
  }
  return std::nullopt;
}

std::string TextAt(const nlohmann::json& body, std::string_view pointer) {
  const nlohmann::json* at = pointer.empty() ? nullptr : AtPointer(body, pointer);
  if (at == nullptr) {
    return {};
  }
  if (at->is_string()) {
    return at->get<std::string>();
  }
  if (at->is_number_integer()) {
    return std::to_string(at->get<int64_t>());
  }
  if (at->is_number()) {
    return DumpJson(*at);
  }
  return {};
}

// The longest access token kept: tokens are JWTs of a few KB.
constexpr size_t kMaxAccessToken = 16 * 1024;

bool Contains(const std::vector<int>& statuses, int status) {
  return std::find(statuses.begin(), statuses.end(), status) != statuses.end();
}

}  // namespace

Result<std::array<bool, 256>> ParseByteSet(std::string_view text) {
  std::array<bool, 256> out{};
  bool any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto from = static_cast<unsigned char>(text[i]);
    if (i + 2 < text.size() && text[i + 1] == '-') {
      const auto to = static_cast<unsigned char>(text[i + 2]);
      if (to < from) {
        return Status::InvalidArgument("an inverted range in destination_chars");
      }
      for (unsigned c = from; c <= to; ++c) {
        out[c] = true;
      }
      i += 2;
    } else {
      out[from] = true;
    }
    any = true;
  }
  if (!any) {
    return Status::InvalidArgument("destination_chars names no byte");
  }
  return out;
}

ProfileAdapter::ProfileAdapter(ProfileSpec spec) : spec_(std::move(spec)) {
  // The loader checked it (config/toml_profile_section.cc); a bad set allows nothing.
  destination_bytes_ = ParseByteSet(spec_.destination_chars).value_or(std::array<bool, 256>{});
  uses_token_ = spec_.Uses(ProfileTemplate::Field::kCredentialToken);
  uses_client_id_ = spec_.Uses(ProfileTemplate::Field::kCredentialClient);
  uses_access_token_ = spec_.Uses(ProfileTemplate::Field::kAccessToken);
}

Status ProfileAdapter::CheckDestination(std::string_view destination) const {
  const std::string_view name = PlatformString(spec_.platform);
  if (destination.empty() || destination.size() > spec_.destination_max_bytes) {
    return Status::InvalidArgument(
        fmt::format("a {} destination is 1 to {} bytes", name, spec_.destination_max_bytes));
  }
  for (unsigned char c : destination) {
    if (!destination_bytes_[c]) {
      return Status::InvalidArgument(
          fmt::format("a {} destination is made of \"{}\"", name, spec_.destination_chars));
    }
  }
  return Status::Ok();
}

Result<HttpRequest> ProfileAdapter::BuildRequest(const storage::Delivery& delivery,
                                                 const Credential& credential, WallTime) const {
  if (Status ok = CheckDestination(delivery.destination); !ok.ok()) {
    return ok;
  }
  if (uses_token_ && credential.token.empty()) {
    return Status::FailedPrecondition("the credential has no token");
  }
  if (uses_client_id_ && credential.client_id.empty()) {
    return Status::FailedPrecondition("the credential has no client_id");
  }
  if (uses_access_token_ && credential.access_token.empty()) {
    return Status::FailedPrecondition("no access token is held for the credential");
  }
  const ProfileTemplate::Values values{.base_url = spec_.base_url,
                                       .destination = delivery.destination,
                                       .delivery_id = delivery.id,
                                       .token = credential.token,
                                       .client_id = credential.client_id,
                                       .access_token = credential.access_token};
  HttpRequest request;
  request.method = spec_.method;
  request.url = spec_.url.Expand(values, true);
  request.secret_url = spec_.SecretUrl();
  request.headers.reserve(spec_.headers.size() + 3);
  request.headers.push_back({"Content-Type", spec_.content_type});
  if (!spec_.auth_header.empty()) {
    request.headers.push_back({spec_.auth_header, spec_.auth_value.Expand(values, false)});
  }
  for (const auto& [name, value] : spec_.headers) {
    request.headers.push_back({name, value.Expand(values, false)});
  }
  if (!delivery.traceparent.empty()) {
    request.headers.push_back({"traceparent", delivery.traceparent});  // W3C Trace Context
  }
  if (spec_.body_fields.empty()) {
    request.body = delivery.payload;
    return request;
  }
  Result<nlohmann::json> payload = ParseJsonObject(delivery.payload, "the payload");
  if (!payload.has_value()) {
    return payload.error();
  }
  for (const auto& [name, value] : spec_.body_fields) {
    (*payload)[name] = value.Expand(values, false);
  }
  request.body = DumpJson(*payload);
  return request;
}

void ProfileAdapter::ReadLimits(const HttpResponse& response, WallTime received_at,
                                AttemptReport& report) const {
  pacing::RateLimitObservation& obs = report.observation;
  const auto number = [&](const std::string& name) -> std::optional<double> {
    if (name.empty()) {
      return std::nullopt;
    }
    std::optional<std::string_view> value = FindHeader(response.headers, name);
    if (!value) {
      return std::nullopt;
    }
    if (report.attempt.rate_limit_headers.size() < 32 && !IsRateLimitHeaderName(name)) {
      report.attempt.rate_limit_headers.emplace_back(Printable(name, 64), Printable(*value, 64));
    }
    return ParseHeaderNumber(*value);
  };
  if (std::optional<double> limit = number(spec_.limit_header);
      limit && *limit >= 1 && *limit <= 1e9) {
    obs.limit = static_cast<int64_t>(*limit);
  }
  if (std::optional<double> remaining = number(spec_.remaining_header);
      remaining && *remaining >= 0 && *remaining <= 1e9) {
    obs.remaining = static_cast<int64_t>(*remaining);
  }
  if (std::optional<double> reset = number(spec_.reset_header)) {
    obs.reset_after = DelayOf(*reset, spec_.reset_unit, received_at);
  }
}

void ProfileAdapter::Classify(const HttpResponse& response, std::string_view error_text,
                              std::optional<Millis> body_wait, AttemptReport& report) const {
  const int status = response.status;
  ProfileAction action = ProfileAction::kDead;
  std::string reason;
  bool matched = false;
  for (const ProfileRule& rule : spec_.rules) {
    if ((rule.statuses.empty() || Contains(rule.statuses, status)) &&
        (rule.body_contains.empty() ||
         response.body.find(rule.body_contains) != std::string::npos)) {
      action = rule.action;
      reason = rule.reason;
      matched = true;
      break;
    }
  }
  if (!matched) {
    if (status == 429) {
      action = ProfileAction::kThrottle;
    } else if (status == 408 || status >= 500) {
      action = ProfileAction::kRetry;
    } else if (status == 401) {
      action = ProfileAction::kDisableCredential;
    }
  }
  if (reason.empty()) {
    reason = HttpErrorCode(status);
  }
  if (!error_text.empty()) {
    report.attempt.detail = Printable(error_text, kMaxErrorText);
  } else if (!response.body.empty() && report.attempt.detail.empty()) {
    report.attempt.detail = Printable(response.body, kMaxErrorText);
  }
  switch (action) {
    case ProfileAction::kDelivered:
      report.outcome.accepted = true;
      return;
    case ProfileAction::kRetry:
      report.outcome.transient = true;
      report.outcome.platform_error = reason;
      report.attempt.platform_error = reason;
      return;
    case ProfileAction::kThrottle: {
      std::optional<Millis> wait = report.outcome.retry_after;
      if (body_wait && (!wait || *body_wait > *wait)) {
        wait = body_wait;
      }
      MarkThrottled(report, wait, reason);
      return;
    }
    case ProfileAction::kDead:
      MarkPermanent(report, reason);
      return;
    case ProfileAction::kDisableDestination:
      MarkPermanent(report, reason);
      report.disable_destination = reason;
      return;
    case ProfileAction::kDisableCredential:
      if (spec_.oauth2 && status == 401) {
        // The access token may have been revoked or expired early: the loop fetches another
        // and sends again; a fresh token refused invalidates the credential there.
        report.access_token_rejected = true;
        report.outcome.transient = true;
        report.outcome.platform_error = reason;
        report.attempt.platform_error = reason;
        return;
      }
      MarkPermanent(report, reason);
      report.invalidate_credential = reason;
      return;
  }
}

AttemptReport ProfileAdapter::Interpret(const storage::Delivery&,
                                        const Result<HttpResponse>& response,
                                        WallTime received_at) const {
  if (!response.has_value()) {
    return ReportTransportError(response.error(), received_at);
  }
  AttemptReport report = ReportResponse(*response, received_at);
  if (!spec_.retry_after_header.empty() &&
      !EqualsIgnoreCase(spec_.retry_after_header, "retry-after")) {
    // A header of the profile's own naming: read as Retry-After would be.
    if (std::optional<std::string_view> value =
            FindHeader(response->headers, spec_.retry_after_header)) {
      if (std::optional<double> n = ParseHeaderNumber(*value)) {
        report.outcome.retry_after = DelayOf(*n, spec_.retry_after_unit, received_at);
      }
    }
  }
  ReadLimits(*response, received_at, report);
  const std::optional<nlohmann::json> body = ParseJsonLenient(response->body);
  std::optional<Millis> body_wait;
  std::string error_text;
  if (body) {
    if (std::optional<double> n = NumberAt(*body, spec_.retry_after_pointer)) {
      body_wait = DelayOf(*n, spec_.retry_after_unit, received_at);
    }
    error_text = TextAt(*body, spec_.error_pointer);
  }
  const int status = response->status;
  bool success = Contains(spec_.success_statuses, status);
  if (success && !spec_.success_pointer.empty()) {
    const nlohmann::json* flag = body ? AtPointer(*body, spec_.success_pointer) : nullptr;
    success = flag != nullptr && flag->is_boolean() && flag->get<bool>();
  }
  if (success) {
    report.outcome.accepted = true;  // also a success status outside 2xx
    if (body) {
      report.platform_ref = Printable(TextAt(*body, spec_.ref_pointer), 64);
    }
    return report;
  }
  Classify(*response, error_text, body_wait, report);
  return report;
}

std::optional<HttpRequest> ProfileAdapter::TokenRequest(const Credential& credential) const {
  if (!spec_.oauth2 || credential.client_id.empty()) {
    return std::nullopt;
  }
  HttpRequest request;
  request.method = "POST";
  request.url = spec_.oauth2->token_url;
  request.headers.push_back({"Content-Type", "application/x-www-form-urlencoded"});
  request.headers.push_back({"Accept", "application/json"});
  request.body =
      "grant_type=client_credentials&client_id=" + PercentEncodeForm(credential.client_id) +
      "&client_secret=" + PercentEncodeForm(credential.client_secret);
  if (!spec_.oauth2->scope.empty()) {
    request.body += "&scope=" + PercentEncodeForm(spec_.oauth2->scope);
  }
  return request;
}

Result<AccessToken> ProfileAdapter::ReadToken(const Result<HttpResponse>& response) const {
  if (!response.has_value()) {
    return Status::Unavailable("token endpoint: " + response.error().message());
  }
  const std::optional<nlohmann::json> body = ParseJsonLenient(response->body);
  const int status = response->status;
  if (status == 400 || status == 401) {
    const std::string error = body ? StringField(*body, "error").value_or("") : "";
    return Status::Rejected(
        fmt::format("token endpoint refused the client: {} {}", status, Printable(error, 64)));
  }
  if (status != 200) {
    return Status::Unavailable(fmt::format("token endpoint answered {}", status));
  }
  std::optional<std::string> token = body ? StringField(*body, "access_token") : std::nullopt;
  if (!token || token->empty() || token->size() > kMaxAccessToken) {
    return Status::Unavailable("token endpoint: no usable access_token in its answer");
  }
  std::optional<double> expires_in = body ? NumberField(*body, "expires_in") : std::nullopt;
  double seconds = expires_in.value_or(3600);
  if (!std::isfinite(seconds) || seconds < 1) {
    return Status::Unavailable("token endpoint: expires_in is not a positive number");
  }
  seconds = std::min(seconds, 86400.0);
  return AccessToken{std::move(*token), Millis(static_cast<int64_t>(seconds * 1000)),
                     spec_.oauth2->refresh_before};
}

}  // namespace egress::adapters
