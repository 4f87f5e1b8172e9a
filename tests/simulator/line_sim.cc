#include "tests/simulator/line_sim.h"

#include <cctype>
#include <chrono>

#include <fmt/format.h>

namespace egress::sim {
namespace {

constexpr std::string_view kRateLimited = R"({"message":"Too Many Requests"})";
constexpr std::string_view kMonthlyLimit = R"({"message":"You have reached your monthly limit."})";

SimResponse BadRequest(std::string_view message, std::string_view property) {
  nlohmann::json body = {{"message", "The request body has 1 error(s)"},
                         {"details", {{{"message", message}, {"property", property}}}}};
  return JsonResponse(400, body.dump());
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
    return JsonResponse(
        401,
        R"({"message":"Authentication failed. Confirm that the access token in the authorization header is valid."})");
  }
  FaultDecision fault;
  if (auto r = StartFault(ctx, dest, cfg.faults, fault)) {
    return std::move(*r);
  }
  std::string retry_key(req.Header("x-line-retry-key"));
  if (!retry_key.empty() && (endpoint == "reply" || !IsRetryKeyFormat(retry_key))) {
    ++c.errors;
    return JsonResponse(400,
                        R"({"message":"The value for the 'X-Line-Retry-Key' header is invalid"})");
  }
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  SimResponse error;
  int64_t recipients = body.is_object() ? Recipients(body, endpoint, error) : 0;
  if (recipients == 0) {
    ++c.errors;
    return body.is_object() ? error : BadRequest("The request body is not JSON", "");
  }
  auto it = windows_.find(token + " " + endpoint);
  if (it == windows_.end()) {
    it = windows_
             .emplace(token + " " + endpoint, FixedWindow(cfg.rate_per_s, std::chrono::seconds(1)))
             .first;
  }
  if (!it->second.Take(now).allowed) {
    ++c.rate_limited;
    return JsonResponse(429, std::string(kRateLimited));
  }
  const std::chrono::nanoseconds ttl = std::chrono::seconds(cfg.retry_key_ttl_s);
  if (!retry_key.empty()) {
    if (auto accepted = ctx.stats.AcceptedValue(dest, "retry_key", retry_key, now, ttl)) {
      ++c.duplicates_prevented;
      size_t split = accepted->find('\n');
      nlohmann::json conflict = {{"message", "The retry key is already accepted"}};
      std::string sent = accepted->substr(split + 1);
      if (!sent.empty()) {
        conflict["sentMessages"] = nlohmann::json::parse(sent, nullptr, false);
      }
      SimResponse r = JsonResponse(409, conflict.dump());
      r.SetHeader("X-Line-Accepted-Request-Id", accepted->substr(0, split));
      return r;
    }
  }
  int64_t& used = monthly_used_[token];
  if (cfg.monthly_quota >= 0 && used + recipients > cfg.monthly_quota) {
    ++c.rate_limited;
    return JsonResponse(429, std::string(kMonthlyLimit));
  }
  used += recipients;
  nlohmann::json sent = nlohmann::json::array();
  size_t messages =
      body.contains("messages") && body["messages"].is_array() ? body["messages"].size() : 1;
  for (size_t i = 0; i < messages; ++i) {
    int64_t id = 480'000'000'000'000 + next_message_++;
    sent.push_back({{"id", std::to_string(id)}, {"quoteToken", fmt::format("q{}", id)}});
  }
  if (!retry_key.empty()) {
    // A key seen before but expired (older than the TTL) is accepted again: a duplicate.
    if (ctx.stats.SeenAccepted(dest, "retry_key_ever", retry_key, now,
                               std::chrono::hours(24 * 365))) {
      ++c.duplicates;
    }
    ctx.stats.RememberValue(dest, "retry_key", retry_key,
                            request_id + "\n" + (endpoint == "push" ? sent.dump() : ""), now);
  }
  RecordAccepted(ctx, dest, body, recipients);
  SimResponse r =
      JsonResponse(200, endpoint == "multicast" ? std::string("{}")
                                                : nlohmann::json({{"sentMessages", sent}}).dump());
  FinishFault(ctx, dest, std::move(fault), r);
  return r;
}

}  // namespace egress::sim
