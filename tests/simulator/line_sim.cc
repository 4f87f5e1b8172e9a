#include "tests/simulator/line_sim.h"

#include <cctype>
#include <chrono>

#include <fmt/format.h>

#include "tests/simulator/json_text.h"

namespace egress::sim {
namespace {

constexpr std::string_view kRateLimited = R"({"message":"Too Many Requests"})";
constexpr std::string_view kMonthlyLimit = R"({"message":"You have reached your monthly limit."})";
constexpr std::string_view kUnauthorized =
    R"({"message":"Authentication failed. Confirm that the access token in the authorization )"
    R"(header is valid."})";
constexpr std::string_view kBadRetryKey =
    R"({"message":"The value for the 'X-Line-Retry-Key' header is invalid"})";

SimResponse BadRequest(std::string_view message, std::string_view property) {
  nlohmann::json body = {{"message", "The request body has 1 error(s)"},
                         {"details", {{{"message", message}, {"property", property}}}}};
  return JsonResponse(400, JsonText(body));
}

// Recipients addressed by a valid body, or 0 with `error` set.
int64_t Recipients(const nlohmann::json& body, const std::string& endpoint, SimResponse& error) {
  if (endpoint == "reply") {
    if (!body.contains("replyToken") || !body["replyToken"].is_string()) {
      error = BadRequest("must be specified", "replyToken");
      return 0;
    }
    return 1;
  }
  auto to = body.find("to");
  if (endpoint == "push") {
    if (to == body.end() || !to->is_string() || to->get_ref<const std::string&>().empty()) {
      error = BadRequest("must be specified", "to");
      return 0;
    }
    return 1;
  }
  if (to == body.end() || !to->is_array() || to->empty() || to->size() > 500) {
    error = BadRequest("Size must be between 1 and 500", "to");
    return 0;
  }
  return static_cast<int64_t>(to->size());
}

}  // namespace

bool IsRetryKeyFormat(std::string_view key) {
  if (key.size() != 36) {
    return false;
  }
  for (size_t i = 0; i < key.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? key[i] != '-' : !std::isxdigit(static_cast<unsigned char>(key[i]))) {
      return false;
    }
  }
  return true;
}

void LineSim::ClearLimits() { windows_.clear(); }

void LineSim::Clear() {
  windows_.clear();
  monthly_used_.clear();
}

std::string LineSim::NewRequestId() {
  int64_t n = next_request_++;
  return fmt::format("5e1a{:04x}-{:04x}-4{:03x}-8{:03x}-{:012x}", (n >> 32) & 0xffff,
                     (n >> 16) & 0xffff, (n >> 4) & 0xfff, n & 0xfff, n);
}

SimResponse LineSim::Send(SimContext& ctx, const SimRequest& req, const std::string& endpoint) {
  std::string request_id = NewRequestId();
  SimResponse r = Process(ctx, req, endpoint, request_id);
  r.SetHeader("X-Line-Request-Id", request_id);
  return r;
}

SimResponse LineSim::Process(SimContext& ctx, const SimRequest& req, const std::string& endpoint,
                             const std::string& request_id) {
  const LineConfig& cfg = ctx.config.line;
  std::string token = TokenAfter(req.Header("authorization"), "Bearer");
  const std::string dest = "line:" + token;
  SteadyTime now = ctx.clock.Now();
  DestinationCounters& c = ctx.stats.OnRequest(dest, now);
  if (token.empty() || Contains(cfg.invalid_tokens, token)) {
    ++c.errors;
    return JsonResponse(401, std::string(kUnauthorized));
  }
  FaultDecision fault;
  if (auto r = StartFault(ctx, dest, cfg.faults, fault)) {
    return std::move(*r);
  }
  std::string retry_key(req.Header("x-line-retry-key"));
  if (!retry_key.empty() && (endpoint == "reply" || !IsRetryKeyFormat(retry_key))) {
    ++c.errors;
    return JsonResponse(400, std::string(kBadRetryKey));
  }
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  SimResponse error;
  int64_t recipients = body.is_object() ? Recipients(body, endpoint, error) : 0;
  if (recipients == 0) {
    ++c.errors;
    return body.is_object() ? error : BadRequest("The request body is not JSON", "");
  }
  if (!Limit(token + " " + endpoint, cfg, now).TryTake(now)) {
    ++c.rate_limited;
    return JsonResponse(429, std::string(kRateLimited));
  }
  if (!retry_key.empty()) {
    if (auto conflict = Conflict(ctx, dest, retry_key)) {
      return std::move(*conflict);
    }
  }
  int64_t& used = monthly_used_[token];
  if (cfg.monthly_quota >= 0 && used + recipients > cfg.monthly_quota) {
    ++c.rate_limited;
    return JsonResponse(429, std::string(kMonthlyLimit));
  }
  used += recipients;
  SimResponse r = Accept(ctx, dest, body, endpoint, recipients, retry_key, request_id);
  FinishFault(ctx, dest, std::move(fault), r);
  return r;
}

HiddenLimit& LineSim::Limit(const std::string& key, const LineConfig& cfg, SteadyTime now) {
  auto it = windows_.find(key);
  if (it == windows_.end()) {
    HiddenLimitSpec spec;
    spec.shape = ParseLimitShape(cfg.shape).value_or(LimitShape::kFixedWindow);
    spec.rate_per_s = cfg.rate_per_s;
    spec.burst = cfg.burst;
    spec.window_ms = cfg.window_ms;
    it = windows_.emplace(key, HiddenLimit(spec, now)).first;
  }
  return it->second;
}

std::optional<SimResponse> LineSim::Conflict(SimContext& ctx, const std::string& dest,
                                             const std::string& retry_key) {
  const std::chrono::nanoseconds ttl = std::chrono::seconds(ctx.config.line.retry_key_ttl_s);
  auto accepted = ctx.stats.AcceptedValue(dest, "retry_key", retry_key, ctx.clock.Now(), ttl);
  if (!accepted) {
    return std::nullopt;
  }
  ++ctx.stats.Counters(dest).duplicates_prevented;
  // Stored as "<request id>\n<sentMessages JSON or empty>".
  size_t split = accepted->find('\n');
  nlohmann::json conflict = {{"message", "The retry key is already accepted"}};
  std::string sent = accepted->substr(split + 1);
  if (!sent.empty()) {
    conflict["sentMessages"] = nlohmann::json::parse(sent, nullptr, false);
  }
  SimResponse r = JsonResponse(409, JsonText(conflict));
  r.SetHeader("X-Line-Accepted-Request-Id", accepted->substr(0, split));
  return r;
}

SimResponse LineSim::Accept(SimContext& ctx, const std::string& dest, const nlohmann::json& body,
                            const std::string& endpoint, int64_t recipients,
                            const std::string& retry_key, const std::string& request_id) {
  SteadyTime now = ctx.clock.Now();
  nlohmann::json sent = nlohmann::json::array();
  auto messages = body.find("messages");
  size_t count = messages != body.end() && messages->is_array() ? messages->size() : 1;
  for (size_t i = 0; i < count; ++i) {
    int64_t id = 480'000'000'000'000 + next_message_++;
    sent.push_back({{"id", std::to_string(id)}, {"quoteToken", fmt::format("q{}", id)}});
  }
  if (!retry_key.empty()) {
    // A key seen before but expired (older than the TTL) is accepted again: a duplicate.
    if (ctx.stats.SeenAccepted(dest, "retry_key_ever", retry_key, now,
                               std::chrono::hours(24 * 365))) {
      ++ctx.stats.Counters(dest).duplicates;
    }
    ctx.stats.RememberValue(dest, "retry_key", retry_key,
                            request_id + "\n" + (endpoint == "push" ? JsonText(sent) : ""), now);
  }
  RecordAccepted(ctx, dest, body, recipients);
  return JsonResponse(
      200, endpoint == "multicast" ? std::string("{}") : JsonText({{"sentMessages", sent}}));
}

}  // namespace egress::sim
