#include "tests/simulator/teams_sim.h"

#include <algorithm>

#include <fmt/format.h>

#include "tests/simulator/json_text.h"
#include "tests/simulator/url_form.h"

namespace egress::sim {
namespace {

// The Microsoft identity platform's error shape.
SimResponse TokenError(int status, std::string_view error, std::string_view description) {
  return JsonResponse(status, JsonText({{"error", error}, {"error_description", description}}));
}

// The Bot Framework connector's error shape.
SimResponse ConnectorError(int status, std::string_view code, std::string_view message) {
  return JsonResponse(status, JsonText({{"error", {{"code", code}, {"message", message}}}}));
}

// SplitMix64 (Steele, Lea, Flood 2014): a well-mixed sequence from a counter.
uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string FormField(const std::map<std::string, std::string>& form, const std::string& name) {
  auto it = form.find(name);
  return it == form.end() ? std::string() : it->second;
}

// The wait until every window has room; zero when all have.
std::chrono::nanoseconds WaitForAll(std::vector<SlidingWindow>& windows, SteadyTime now) {
  std::chrono::nanoseconds wait(0);
  for (SlidingWindow& w : windows) {
    wait = std::max(wait, w.WaitFor(now));
  }
  return wait;
}

}  // namespace

void TeamsSim::ClearLimits() {
  conversation_windows_.clear();
  app_windows_.clear();
  parked_until_.clear();
  activity_requests_.clear();
}

void TeamsSim::Clear() {
  ClearLimits();
  tokens_.clear();
}

std::string TeamsSim::NewAccessToken() {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  uint64_t state = next_token_++ * 0x2545f4914f6cdd1dULL;
  std::string token;
  for (int word = 0; word < 8; ++word) {
    uint64_t bits = SplitMix(state);
    for (int i = 0; i < 10; ++i) {
      token.push_back(kAlphabet[bits & 63]);
      bits >>= 6;
    }
  }
  return token;
}

std::vector<SlidingWindow>& TeamsSim::Windows(
    std::unordered_map<std::string, std::vector<SlidingWindow>>& map, const std::string& key,
    const std::vector<WindowLimit>& limits) {
  auto [it, inserted] = map.try_emplace(key);
  if (inserted) {
    for (const WindowLimit& limit : limits) {
      it->second.emplace_back(limit.limit, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                               std::chrono::duration<double>(limit.window_s)));
    }
  }
  return it->second;
}

std::chrono::nanoseconds TeamsSim::ParkLeft(const std::string& key, SteadyTime now) const {
  auto it = parked_until_.find(key);
  if (it == parked_until_.end() || it->second <= now) {
    return std::chrono::nanoseconds(0);
  }
  return it->second - now;
}

SimResponse TeamsSim::IssueToken(SimContext& ctx, const SimRequest& req) {
  const TeamsConfig& cfg = ctx.config.teams;
  std::optional<std::map<std::string, std::string>> form = ParseForm(req.body);
  const std::string client_id = form ? FormField(*form, "client_id") : std::string();
  const std::string dest = "teams-token:" + client_id;
  SteadyTime now = ctx.clock.Now();
  DestinationCounters& c = ctx.stats.OnRequest(dest, now);
  FaultDecision fault;
  if (auto r = StartFault(ctx, dest, cfg.token_faults, fault)) {
    return std::move(*r);
  }
  std::optional<SimResponse> refusal;
  const std::string grant = form ? FormField(*form, "grant_type") : std::string();
  const std::string scope = form ? FormField(*form, "scope") : std::string();
  if (!form) {
    refusal =
        TokenError(400, "invalid_request",
                   "AADSTS900144: The request body must be application/x-www-form-urlencoded.");
  } else if (grant.empty() || client_id.empty()) {
    refusal = TokenError(400, "invalid_request",
                         fmt::format("AADSTS900144: The request body must contain the following "
                                     "parameter: '{}'.",
                                     grant.empty() ? "grant_type" : "client_id"));
  } else if (grant != "client_credentials") {
    refusal = TokenError(400, "unsupported_grant_type",
                         fmt::format("AADSTS70003: The app requested an unsupported grant type "
                                     "'{}'.",
                                     grant));
  } else if (!cfg.clients.empty() && cfg.clients.count(client_id) == 0) {
    refusal = TokenError(401, "invalid_client",
                         fmt::format("AADSTS700016: Application with identifier '{}' was not "
                                     "found in the directory 'Bot Framework'.",
                                     client_id));
  } else if (FormField(*form, "client_secret").empty() ||
             (!cfg.clients.empty() &&
              cfg.clients.at(client_id) != FormField(*form, "client_secret"))) {
    refusal = TokenError(401, "invalid_client",
                         fmt::format("AADSTS7000215: Invalid client secret provided. Ensure the "
                                     "secret being sent in the request is the client secret "
                                     "value for app '{}'.",
                                     client_id));
  } else if (scope != cfg.scope) {
    refusal = TokenError(400, "invalid_scope",
                         fmt::format("AADSTS1002012: The provided value for scope {} is not "
                                     "valid.",
                                     scope));
  }
  if (refusal) {
    ++c.errors;
    return std::move(*refusal);
  }
  std::string token = NewAccessToken();
  tokens_[token] = IssuedToken{client_id, now + std::chrono::seconds(cfg.token_ttl_s)};
  ++c.tokens_issued;
  SimResponse r = JsonResponse(200, JsonText({{"token_type", "Bearer"},
                                              {"expires_in", cfg.token_ttl_s},
                                              {"ext_expires_in", cfg.token_ttl_s},
                                              {"access_token", token}}));
  FinishFault(ctx, dest, std::move(fault), r);
  return r;
}

SimResponse TeamsSim::RateLimited(SimContext& ctx, const std::string& dest,
                                  const std::string& park_key, std::chrono::nanoseconds wait,
                                  bool global) {
  SteadyTime now = ctx.clock.Now();
  const int64_t retry_after = CeilSeconds(wait);
  // Inside a park the answer repeats the time left; the park itself is not extended.
  if (ParkLeft(park_key, now).count() == 0) {
    SteadyTime until = now + std::chrono::seconds(retry_after);
    parked_until_[park_key] = until;
    ctx.stats.SetNotBefore(park_key, until);
  }
  DestinationCounters& c = ctx.stats.Counters(dest);
  ++c.rate_limited;
  if (global) {
    ++c.rate_limited_global;
  }
  SimResponse r = ConnectorError(429, "TooManyRequests",
                                 fmt::format("Too many requests; retry after {} s.", retry_after));
  r.SetHeader("Retry-After", std::to_string(retry_after));
  return r;
}

SimResponse TeamsSim::SendActivity(SimContext& ctx, const SimRequest& req,
                                   const std::string& conversation) {
  const TeamsConfig& cfg = ctx.config.teams;
  const std::string dest = "teams:" + conversation;
  SteadyTime now = ctx.clock.Now();
  const std::string token = TokenAfter(req.Header("authorization"), "Bearer");
  auto issued = token.empty() ? tokens_.end() : tokens_.find(token);
  if (issued == tokens_.end()) {
    ++ctx.stats.OnRequest(dest, now).errors;
    return ConnectorError(401, "Unauthorized", "Authorization has been denied for this request.");
  }
  if (now >= issued->second.expires) {
    DestinationCounters& c = ctx.stats.OnRequest(dest, now);
    ++c.errors;
    ++c.expired_tokens;
    return ConnectorError(401, "Unauthorized",
                          "Authorization has been denied for this request: the token has "
                          "expired.");
  }
  const std::string client = issued->second.client_id;
  const std::string park_key = "teams:" + client + "\n" + conversation;
  DestinationCounters& c = ctx.stats.OnRequest(dest, now, park_key);
  FaultDecision fault;
  if (auto r = StartFault(ctx, dest, cfg.faults, fault)) {
    return std::move(*r);
  }
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || StringField(body, "type").empty()) {
    ++c.errors;
    return ConnectorError(400, "BadArgument", "The activity must be a JSON object with a type.");
  }
  if (auto left = ParkLeft(park_key, now); left.count() > 0) {
    return RateLimited(ctx, dest, park_key, left, false);
  }
  if (cfg.fail_412_every > 0 && ++activity_requests_[dest] % cfg.fail_412_every == 0) {
    ++c.errors;
    return ConnectorError(412, "PreconditionFailed",
                          "The conversation is not ready for this activity; try again.");
  }
  std::vector<SlidingWindow>& per_conversation =
      Windows(conversation_windows_, client + "\n" + conversation, cfg.conversation_windows);
  std::vector<SlidingWindow>& per_app = Windows(app_windows_, client, cfg.app_windows);
  const std::chrono::nanoseconds app_wait = WaitForAll(per_app, now);
  const std::chrono::nanoseconds wait = std::max(app_wait, WaitForAll(per_conversation, now));
  if (wait.count() > 0) {
    return RateLimited(ctx, dest, park_key, wait, app_wait.count() > 0);
  }
  for (SlidingWindow& w : per_conversation) {
    w.Take(now);
  }
  for (SlidingWindow& w : per_app) {
    w.Take(now);
  }
  RecordAccepted(ctx, dest, body, 1);
  SimResponse r = JsonResponse(201, JsonText({{"id", fmt::format("1:{:012x}", next_activity_++)}}));
  FinishFault(ctx, dest, std::move(fault), r);
  return r;
}

}  // namespace egress::sim
