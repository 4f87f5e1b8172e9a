#include "tests/simulator/discord_sim.h"

#include <chrono>

#include <fmt/format.h>

#include "tests/simulator/json_text.h"

namespace egress::sim {
namespace {

constexpr int64_t kSnowflakeBase = 1'300'000'000'000'000'000;

// Seconds with millisecond decimals, rounded up so a sender waiting this long is never early.
std::string CeilMillisText(std::chrono::nanoseconds d) {
  int64_t ms = (d.count() + 999'999) / 1'000'000;
  return fmt::format("{}.{:03d}", ms / 1000, ms % 1000);
}

void AddBucketHeaders(SimResponse& r, const FixedWindow::Outcome& o, const std::string& hash,
                      WallTime wall_now) {
  r.SetHeader("X-RateLimit-Limit", std::to_string(o.limit));
  r.SetHeader("X-RateLimit-Remaining", std::to_string(o.remaining));
  auto reset_wall = wall_now.time_since_epoch() + o.reset_after;
  r.SetHeader("X-RateLimit-Reset",
              CeilMillisText(std::chrono::duration_cast<std::chrono::nanoseconds>(reset_wall)));
  r.SetHeader("X-RateLimit-Reset-After", CeilMillisText(o.reset_after));
  r.SetHeader("X-RateLimit-Bucket", hash);
}

SimResponse RateLimitBody(std::string_view message, std::chrono::nanoseconds wait, bool global) {
  SimResponse r =
      JsonResponse(429, fmt::format(R"({{"message":"{}","retry_after":{},"global":{}}})", message,
                                    CeilMillisText(wait), global ? "true" : "false"));
  r.SetHeader("Retry-After", std::to_string(CeilSeconds(wait)));
  return r;
}

SimResponse Unauthorized() {
  return JsonResponse(401, R"({"message":"401: Unauthorized","code":0})");
}

}  // namespace

void DiscordSim::ClearLimits() {
  buckets_.clear();
  globals_.clear();
  bucket_requests_.clear();
}

FixedWindow& DiscordSim::Window(std::unordered_map<std::string, FixedWindow>& map,
                                const std::string& key, int limit, int64_t window_ms) {
  auto it = map.find(key);
  if (it == map.end()) {
    it = map.emplace(key, FixedWindow(limit, std::chrono::milliseconds(window_ms))).first;
  }
  return it->second;
}

std::string DiscordSim::BucketHash(const SimContext& ctx, int64_t request_number) const {
  const DiscordConfig& cfg = ctx.config.discord;
  if (cfg.hash_change_every <= 0) {
    return cfg.bucket_hash;
  }
  int64_t generation = (request_number - 1) / cfg.hash_change_every;
  return generation == 0 ? cfg.bucket_hash : fmt::format("{}-{}", cfg.bucket_hash, generation);
}

std::string DiscordSim::NewMessage(const std::string& channel, const nlohmann::json& body) {
  nlohmann::json msg = {{"id", std::to_string(kSnowflakeBase + next_id_++)},
                        {"type", 0},
                        {"channel_id", channel},
                        {"content", StringField(body, "content")}};
  if (auto it = body.find("nonce"); it != body.end()) {
    msg["nonce"] = *it;
  }
  return JsonText(msg);
}

SimResponse DiscordSim::CreateMessage(SimContext& ctx, const SimRequest& req,
                                      const std::string& channel) {
  const DiscordConfig& cfg = ctx.config.discord;
  std::string token = TokenAfter(req.Header("authorization"), "Bot");
  Route route{.dest = "discord:channel:" + channel,
              .bucket_key = "channel:" + channel,
              .limit = cfg.bucket_limit,
              .window_ms = cfg.bucket_window_ms,
              .author = token};
  DestinationCounters& c =
      ctx.stats.OnRequest(route.dest, ctx.clock.Now(), token.empty() ? "" : "discord:bot:" + token);
  if (token.empty() || Contains(cfg.invalid_tokens, token) ||
      (!cfg.bot_tokens.empty() && !Contains(cfg.bot_tokens, token))) {
    ++c.errors;
    return Unauthorized();
  }
  return Send(ctx, req, route, channel, true);
}

SimResponse DiscordSim::ExecuteWebhook(SimContext& ctx, const SimRequest& req,
                                       const std::string& id) {
  const DiscordConfig& cfg = ctx.config.discord;
  Route route{.dest = "discord:webhook:" + id,
              .bucket_key = cfg.webhooks_share_bucket ? "webhooks" : "webhook:" + id,
              .limit = cfg.webhook_limit,
              .window_ms = cfg.webhook_window_ms};
  DestinationCounters& c = ctx.stats.OnRequest(route.dest, ctx.clock.Now());
  if (Contains(cfg.unknown_webhooks, id)) {
    ++c.errors;
    return JsonResponse(404, R"({"message":"Unknown Webhook","code":10015})");
  }
  return Send(ctx, req, route, "webhook-channel-" + id, req.QueryHas("wait", "true"));
}

std::optional<SimResponse> DiscordSim::CheckGlobal(SimContext& ctx, const Route& route) {
  if (route.author.empty()) {
    return std::nullopt;
  }
  SteadyTime now = ctx.clock.Now();
  FixedWindow::Outcome g =
      Window(globals_, route.author, ctx.config.discord.global_per_s, 1000).Peek(now);
  if (g.allowed) {
    return std::nullopt;
  }
  DestinationCounters& c = ctx.stats.Counters(route.dest);
  ++c.rate_limited;
  ++c.rate_limited_global;
  ctx.stats.SetNotBefore("discord:bot:" + route.author, now + g.reset_after);
  SimResponse r = RateLimitBody("You are being rate limited.", g.reset_after, true);
  r.SetHeader("X-RateLimit-Global", "true");
  r.SetHeader("X-RateLimit-Scope", "global");
  return r;
}

SimResponse DiscordSim::BucketLimited(SimContext& ctx, const Route& route,
                                      const FixedWindow::Outcome& o, std::string_view scope,
                                      std::chrono::nanoseconds wait, const std::string& hash) {
  ++ctx.stats.Counters(route.dest).rate_limited;
  ctx.stats.SetNotBefore(route.dest, ctx.clock.Now() + wait);
  SimResponse r = RateLimitBody(
      scope == "shared" ? "The resource is being rate limited." : "You are being rate limited.",
      wait, false);
  if (!ctx.config.discord.omit_headers) {
    AddBucketHeaders(r, o, hash, ctx.clock.WallNow());
  }
  r.SetHeader("X-RateLimit-Scope", std::string(scope));
  return r;
}

SimResponse DiscordSim::Send(SimContext& ctx, const SimRequest& req, const Route& route,
                             const std::string& channel, bool want_body) {
  const DiscordConfig& cfg = ctx.config.discord;
  SteadyTime now = ctx.clock.Now();
  FaultDecision fault;
  if (auto r = StartFault(ctx, route.dest, cfg.faults, fault)) {
    return std::move(*r);
  }
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    ++ctx.stats.Counters(route.dest).errors;
    return JsonResponse(400, R"({"message":"Cannot send an empty message","code":50006})");
  }
  if (auto r = CheckGlobal(ctx, route)) {
    return std::move(*r);
  }
  int64_t n = ++bucket_requests_[route.bucket_key];
  std::string hash = BucketHash(ctx, n);
  FixedWindow& bucket = Window(buckets_, route.bucket_key, route.limit, route.window_ms);
  if (cfg.shared_429_every > 0 && n % cfg.shared_429_every == 0) {
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(cfg.shared_retry_after_s));
    return BucketLimited(ctx, route, bucket.Peek(now), "shared", wait, hash);
  }
  if (cfg.sublimit_429_every > 0 && n % cfg.sublimit_429_every == 0) {
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(cfg.sublimit_retry_after_s));
    return BucketLimited(ctx, route, bucket.Peek(now), "user", wait, hash);
  }
  FixedWindow::Outcome o = bucket.Take(now);
  if (!o.allowed) {
    return BucketLimited(ctx, route, o, "user", o.reset_after, hash);
  }
  if (!route.author.empty()) {
    Window(globals_, route.author, cfg.global_per_s, 1000).Take(now);
  }
  // An unlimited bucket (limit 0) sends no bucket headers, so it never asks anyone to wait.
  const bool headers = !cfg.omit_headers && route.limit > 0;
  if (o.remaining == 0 && headers) {
    ctx.stats.SetNotBefore(route.dest, now + o.reset_after);
  }
  SimResponse r = Deliver(ctx, body, route, channel, want_body);
  if (headers) {
    AddBucketHeaders(r, o, hash, ctx.clock.WallNow());
  }
  FinishFault(ctx, route.dest, std::move(fault), r);
  return r;
}

SimResponse DiscordSim::Deliver(SimContext& ctx, const nlohmann::json& body, const Route& route,
                                const std::string& channel, bool want_body) {
  SteadyTime now = ctx.clock.Now();
  DestinationCounters& c = ctx.stats.Counters(route.dest);
  // Nonces are remembered per author (bot token; all webhooks share the empty author).
  const std::string author = "discord:bot:" + route.author;
  std::optional<std::string> nonce;
  if (auto it = body.find("nonce"); it != body.end()) {
    nonce = it->is_string() ? it->get<std::string>() : JsonText(*it);
  }
  std::optional<std::string> existing;
  if (nonce) {
    existing = ctx.stats.AcceptedValue(author, "nonce", *nonce, now,
                                       std::chrono::seconds(ctx.config.discord.nonce_window_s));
  }
  if (existing && BoolField(body, "enforce_nonce")) {
    ++c.duplicates_prevented;
    return JsonResponse(200, *existing);
  }
  if (existing) {
    ++c.duplicates;
  }
  std::string msg = NewMessage(channel, body);
  if (nonce) {
    ctx.stats.RememberValue(author, "nonce", *nonce, msg, now);
  }
  RecordAccepted(ctx, route.dest, body, 1);
  return want_body ? JsonResponse(200, std::move(msg)) : JsonResponse(204, "");
}

}  // namespace egress::sim
