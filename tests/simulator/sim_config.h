#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/base/result.h"

namespace egress::sim {

// What the simulator does and how strict it is. Every field has a default, so "{}" is a valid
// configuration. The JSON form (docs/simulator.md) uses the field names below.

// Faults injected on a platform or a webhook receiver, applied before its own logic.
struct FaultPlan {
  // The first N requests get a connection reset and no response; -1 resets every request.
  int reset_first = 0;
  // The next N requests are answered `storm_status` (a 5xx storm). Default status 503.
  int storm_first = 0;
  int storm_status = 503;
  // When true the storm requests are processed (counted accepted) before the storm status is
  // returned: the duplicate trap of Slack's internal_error or LINE's 500-after-delivery.
  bool storm_after_accept = false;
  // Every request (after resets and storm) is answered `status` (e.g. 410, 429, 503); 0 = off.
  int status = 0;
  // Body for storm and status answers; default {"error":"simulated fault"}.
  std::string body;
  // Retry-After sent with storm and status answers: seconds (-1 = none), as an IMF-fixdate
  // `retry_after_s` ahead when `retry_after_date`, or `retry_after_raw` verbatim when not empty.
  int retry_after_s = -1;
  bool retry_after_date = false;
  std::string retry_after_raw;
  // Extra headers on storm and status answers, e.g. {"Location": "..."} with a 301,
  // {"webhook-delivery": "abort-message"}, or {"RateLimit": "\"default\";r=0;t=20"}.
  std::map<std::string, std::string> headers;
  // Every response is held back this long (slow receiver).
  int delay_ms = 0;
};

struct SlackConfig {
  // Per (token, channel) chat.postMessage: 1/s with a burst of 3.
  double channel_rate_per_s = 1.0;
  double channel_burst = 3.0;
  // Per token (workspace): 600/min with a burst of 50.
  double workspace_rate_per_s = 10.0;
  double workspace_burst = 50.0;
  // Over a limit: "429" (429 + Retry-After + ratelimited), "429_no_retry_after", or "ok_false"
  // (HTTP 200 {"ok":false,"error":"rate_limited"}).
  std::string rate_limit_mode = "429";
  // Retry-After to hand out and enforce; 0 = the limiter's own wait rounded up to seconds.
  int retry_after_s = 0;
  std::vector<std::string> invalid_tokens;     // -> invalid_auth
  std::vector<std::string> missing_channels;   // -> channel_not_found
  std::vector<std::string> archived_channels;  // -> is_archived
  // Incoming webhooks (/services/...): per URL.
  double hook_rate_per_s = 1.0;
  double hook_burst = 3.0;
  std::vector<std::string> archived_hooks;  // -> 410 channel_is_archived
  std::vector<std::string> removed_hooks;   // -> 404 no_service
  FaultPlan faults;
};

struct DiscordConfig {
  // Bot channel-message bucket per channel: 5 per 5 s.
  int bucket_limit = 5;
  int64_t bucket_window_ms = 5000;
  // Webhook bucket per webhook (or one shared by all webhooks): 5 per 2 s.
  int webhook_limit = 5;
  int64_t webhook_window_ms = 2000;
  bool webhooks_share_bucket = false;
  // Per bot token, all routes: 50/s.
  int global_per_s = 50;
  // X-RateLimit-Bucket value; with hash_change_every = N > 0 it changes every N requests.
  std::string bucket_hash = "a06de45e2b5c7f3d";
  int hash_change_every = 0;
  // Every Nth request of a bucket gets a shared-scope 429 (not the sender's fault); 0 = off.
  int shared_429_every = 0;
  double shared_retry_after_s = 30.0;
  // Every Nth request of a bucket gets a sublimit 429: Scope user while Remaining > 0; 0 = off.
  int sublimit_429_every = 0;
  double sublimit_retry_after_s = 2.0;
  // No X-RateLimit-* headers on any response.
  bool omit_headers = false;
  // How long a nonce with enforce_nonce returns the existing message.
  int64_t nonce_window_s = 300;
  std::vector<std::string> bot_tokens;        // if not empty, other tokens get 401
  std::vector<std::string> invalid_tokens;    // always 401
  std::vector<std::string> unknown_webhooks;  // webhook ids answered 404 / 10015
  FaultPlan faults;
};

struct LineConfig {
  // Per channel token and endpoint: `rate_per_s` in the shape `shape` ("fixed_window",
  // "token_bucket" or "sliding_log": tests/simulator/hidden_limit.h), with a token bucket's
  // `burst` or a window's `window_ms` (rate_per_s * window_ms / 1000 requests per window).
  int rate_per_s = 2000;
  std::string shape = "fixed_window";
  int burst = 1;
  int64_t window_ms = 1000;
  // Recipients per month per channel token; -1 = unlimited.
  int64_t monthly_quota = -1;
  int64_t retry_key_ttl_s = 86400;
  std::vector<std::string> invalid_tokens;  // -> 401
  FaultPlan faults;
};

struct TelegramConfig {
  // Per (bot token, chat) sendMessage: 1/s with a burst of 1.
  double chat_rate_per_s = 1.0;
  double chat_burst = 1.0;
  // Per (bot token, group): a negative chat id (group or supergroup) takes 20 in any 60 s.
  int group_limit = 20;
  double group_window_s = 60.0;
  // Per bot token, all chats: 30/s with a burst of 30.
  double bot_rate_per_s = 30.0;
  double bot_burst = 30.0;
  std::vector<std::string> invalid_tokens;  // -> 401 Unauthorized
  std::vector<std::string> blocked_chats;   // chat ids as decimal text -> 403 bot was blocked
  std::vector<std::string> missing_chats;   // chat ids as decimal text -> 400 chat not found
  FaultPlan faults;
};

// One sliding window: at most `limit` requests in any `window_s` seconds; limit <= 0 = unlimited.
struct WindowLimit {
  int limit = 0;
  double window_s = 1.0;

  bool operator==(const WindowLimit&) const = default;
};

struct TeamsConfig {
  // The token endpoint's clients: client_id -> client_secret; empty = any client and secret.
  std::map<std::string, std::string> clients;
  // The only scope the token endpoint grants.
  std::string scope = "https://api.botframework.com/.default";
  // Lifetime of an issued access token (expires_in).
  int64_t token_ttl_s = 3599;
  // Per (client_id, conversation), all at once (Microsoft's per-bot-per-thread limits).
  std::vector<WindowLimit> conversation_windows = {{7, 1}, {8, 2}, {60, 30}, {1800, 3600}};
  // Per client_id (app), across conversations.
  std::vector<WindowLimit> app_windows = {{50, 1}};
  // Every Nth activity request of a conversation is answered 412 (not accepted); 0 = off.
  int fail_412_every = 0;
  FaultPlan faults;        // on activities
  FaultPlan token_faults;  // on the token endpoint
};

// A made-up chat API that exists only as a profile ("acme"; docs/simulator.md).
struct AcmeConfig {
  // Per (key, room): a fixed window of `room_limit` requests per `room_window_ms`; windows begin
  // at multiples of room_window_ms on the wall clock (epoch ms). room_limit 0 = unlimited.
  int room_limit = 5;
  int64_t room_window_ms = 2000;
  std::vector<std::string> keys;  // X-Acme-Key values accepted; empty = any non-empty key
  // The quota answer's status: 400 (the API signals its quota in the body), or 429 when true.
  bool status_429 = false;
  FaultPlan faults;
};

struct HookConfig {
  // Standard Webhooks "whsec_..." secrets; empty = signatures are not checked.
  std::vector<std::string> secrets;
  int64_t tolerance_s = 300;
  // Per receiver; rate <= 0 = unlimited.
  double rate_per_s = 0.0;
  double burst = 1.0;
  // Retry-After on the receiver's own 429s: "seconds" or "date".
  std::string retry_after_format = "seconds";
  FaultPlan faults;
};

struct SimConfig {
  // Every platform answer is held back latency_ms plus a draw of 0 to latency_jitter_ms, from a
  // sequence seeded by `seed` (the same seed, the same latencies).
  int latency_ms = 0;
  int latency_jitter_ms = 0;
  int64_t seed = 1;
  SlackConfig slack;
  DiscordConfig discord;
  LineConfig line;
  TelegramConfig telegram;
  TeamsConfig teams;
  AcmeConfig acme;
  HookConfig hook_defaults;
  std::map<std::string, HookConfig> hooks;  // by name; each starts from hook_defaults

  const HookConfig& HookFor(const std::string& name) const;
};

// Parses the JSON form. InvalidArgument naming the key for malformed JSON, wrong types and
// unknown keys.
Result<SimConfig> ParseSimConfig(std::string_view json_text);

// Applies `patch` to `base` as a JSON merge patch (RFC 7396) and returns the merged text.
// InvalidArgument when either is not a JSON object.
Result<std::string> MergeSimConfigJson(std::string_view base, std::string_view patch);

}  // namespace egress::sim
