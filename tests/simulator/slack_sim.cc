#include "tests/simulator/slack_sim.h"

#include <fmt/format.h>

#include "tests/simulator/json_text.h"

namespace egress::sim {
namespace {

SimResponse SlackError(std::string_view error) {
  return JsonResponse(200, fmt::format(R"({{"ok":false,"error":"{}"}})", error));
}

SimResponse TextResponse(int status, std::string body) {
  SimResponse r;
  r.status = status;
  r.body = std::move(body);
  r.content_type = "text/plain";
  return r;
}

}  // namespace

void SlackSim::ClearLimits() {
  channel_buckets_.clear();
  workspace_buckets_.clear();
  hook_buckets_.clear();
  parked_until_.clear();
}

TokenBucket& SlackSim::Bucket(std::unordered_map<std::string, TokenBucket>& map,
                              const std::string& key, double rate, double burst, SteadyTime now) {
  auto it = map.find(key);
  if (it == map.end()) {
    it = map.emplace(key, TokenBucket(rate, burst, now)).first;
  }
  return it->second;
}

std::chrono::nanoseconds SlackSim::ParkLeft(const std::string& key, SteadyTime now) const {
  auto it = parked_until_.find(key);
  if (it == parked_until_.end() || it->second <= now) {
    return std::chrono::nanoseconds(0);
  }
  return it->second - now;
}

SimResponse SlackSim::RateLimited(SimContext& ctx, const std::string& dest,
                                  const std::string& park_key, std::chrono::nanoseconds wait) {
  const SlackConfig& cfg = ctx.config.slack;
  SteadyTime now = ctx.clock.Now();
  // Inside a park the answer repeats the time left; the park itself is not extended.
  const bool parked_already = ParkLeft(park_key, now).count() > 0;
  int64_t retry_after =
      cfg.retry_after_s > 0 && !parked_already ? cfg.retry_after_s : CeilSeconds(wait);
  SteadyTime until = now + std::chrono::seconds(retry_after);
  if (!parked_already) {
    parked_until_[park_key] = until;
  }
  ++ctx.stats.Counters(dest).rate_limited;
  if (cfg.rate_limit_mode == "ok_false") {
    return SlackError("rate_limited");
  }
  SimResponse r = JsonResponse(429, R"({"ok":false,"error":"ratelimited"})");
  if (cfg.rate_limit_mode == "429") {
    r.SetHeader("Retry-After", std::to_string(retry_after));
    if (!parked_already) {
      ctx.stats.SetNotBefore(park_key, until);
    }
  }
  return r;
}

SimResponse SlackSim::PostMessage(SimContext& ctx, const SimRequest& req) {
  const SlackConfig& cfg = ctx.config.slack;
  std::string token = TokenAfter(req.Header("authorization"), "Bearer");
  if (token.empty()) {
    return SlackError("not_authed");
  }
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return SlackError("invalid_json");
  }
  auto channel_it = body.find("channel");
  if (channel_it == body.end() || !channel_it->is_string()) {
    return SlackError("channel_not_found");
  }
  const std::string channel = channel_it->get<std::string>();
  const std::string scope = "slack:" + token;
  const std::string dest = scope + ":" + channel;
  SteadyTime now = ctx.clock.Now();
  DestinationCounters& c = ctx.stats.OnRequest(dest, now, scope);
  if (Contains(cfg.invalid_tokens, token)) {
    ++c.errors;
    return SlackError("invalid_auth");
  }
  FaultDecision fault;
  if (auto r = StartFault(ctx, dest, cfg.faults, fault)) {
    return std::move(*r);
  }
  if (Contains(cfg.missing_channels, channel) || Contains(cfg.archived_channels, channel)) {
    ++c.errors;
    return SlackError(Contains(cfg.missing_channels, channel) ? "channel_not_found"
                                                              : "is_archived");
  }
  if (auto left = ParkLeft(scope, now); left.count() > 0) {
    return RateLimited(ctx, dest, scope, left);
  }
  if (auto left = ParkLeft(dest, now); left.count() > 0) {
    return RateLimited(ctx, dest, dest, left);
  }
  TokenBucket& ws =
      Bucket(workspace_buckets_, scope, cfg.workspace_rate_per_s, cfg.workspace_burst, now);
  TokenBucket& ch = Bucket(channel_buckets_, dest, cfg.channel_rate_per_s, cfg.channel_burst, now);
  if (auto wait = ws.WaitFor(now); wait.count() > 0) {
    return RateLimited(ctx, dest, scope, wait);
  }
  if (auto wait = ch.WaitFor(now); wait.count() > 0) {
    return RateLimited(ctx, dest, dest, wait);
  }
  ws.Take(now);
  ch.Take(now);
  RecordAccepted(ctx, dest, body, 1);
  int64_t wall_s = ToUnixMillis(ctx.clock.WallNow()) / 1000;
  std::string ts = fmt::format("{}.{:06d}", wall_s, next_ts_++ % 1'000'000);
  nlohmann::json out = {{"ok", true},
                        {"channel", channel},
                        {"ts", ts},
                        {"message", {{"text", StringField(body, "text")}, {"ts", ts}}}};
  SimResponse r = JsonResponse(200, JsonText(out));
  FinishFault(ctx, dest, std::move(fault), r);
  return r;
}

SimResponse SlackSim::IncomingWebhook(SimContext& ctx, const SimRequest& req) {
  const SlackConfig& cfg = ctx.config.slack;
  const std::string hook = req.path.substr(std::string_view("/services/").size());
  const std::string dest = "slack-hook:" + hook;
  SteadyTime now = ctx.clock.Now();
  DestinationCounters& c = ctx.stats.OnRequest(dest, now);
  FaultDecision fault;
  if (auto r = StartFault(ctx, dest, cfg.faults, fault)) {
    return std::move(*r);
  }
  if (Contains(cfg.archived_hooks, hook)) {
    ++c.errors;
    return TextResponse(410, "channel_is_archived");
  }
  if (Contains(cfg.removed_hooks, hook)) {
    ++c.errors;
    return TextResponse(404, "no_service");
  }
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    ++c.errors;
    return TextResponse(400, "invalid_payload");
  }
  std::chrono::nanoseconds wait = ParkLeft(dest, now);
  if (wait.count() == 0) {
    wait = Bucket(hook_buckets_, dest, cfg.hook_rate_per_s, cfg.hook_burst, now).TryTake(now);
  }
  if (wait.count() > 0) {
    SimResponse limited = RateLimited(ctx, dest, dest, wait);
    limited.body = "rate_limited";
    limited.content_type = "text/plain";
    return limited;
  }
  RecordAccepted(ctx, dest, body, 1);
  SimResponse r = TextResponse(200, "ok");
  FinishFault(ctx, dest, std::move(fault), r);
  return r;
}

}  // namespace egress::sim
