#include "tests/simulator/sim_config.h"

#include <set>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/simulator/hidden_limit.h"
#include "tests/simulator/json_text.h"

namespace egress::sim {
namespace {

using nlohmann::json;

// Reads the fields of one JSON object, remembering the first problem and which keys it used,
// so unknown keys (typos) are reported instead of ignored.
class ObjectReader {
 public:
  ObjectReader(const json& obj, std::string path, std::string& error)
      : obj_(obj), path_(std::move(path)), error_(error) {
    if (!obj_.is_object()) {
      Fail(fmt::format("{} must be an object", path_));
    }
  }

  template <class T>
  void Read(const char* key, T& out) {
    if (!obj_.is_object()) {
      return;
    }
    auto it = obj_.find(key);
    if (it == obj_.end()) {
      return;
    }
    used_.insert(key);
    if (!Convert(*it, out)) {
      Fail(fmt::format("{}.{} has the wrong type", path_, key));
    }
  }

  // Marks `key` as known when another reader handles it.
  void Skip(const char* key) { used_.insert(key); }

  void Finish() {
    if (!obj_.is_object()) {
      return;
    }
    for (const auto& [key, value] : obj_.items()) {
      if (used_.count(key) == 0) {
        Fail(fmt::format("unknown key {}.{}", path_, key));
      }
    }
  }

 private:
  void Fail(std::string message) {
    if (error_.empty()) {
      error_ = std::move(message);
    }
  }

  template <class T>
  static bool Convert(const json& v, T& out) {
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) {
        return false;
      }
      out = v.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer()) {
        return false;
      }
      out = v.get<T>();
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) {
        return false;
      }
      out = v.get<T>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!v.is_string()) {
        return false;
      }
      out = v.get<std::string>();
    } else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) {
      if (!v.is_object()) {
        return false;
      }
      out.clear();
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!it->is_string()) {
          return false;
        }
        out[it.key()] = it->template get<std::string>();
      }
    } else {
      static_assert(std::is_same_v<T, std::vector<std::string>>);
      if (!v.is_array()) {
        return false;
      }
      out.clear();
      for (const json& item : v) {
        if (!item.is_string()) {
          return false;
        }
        out.push_back(item.get<std::string>());
      }
    }
    return true;
  }

  const json& obj_;
  std::string path_;
  std::string& error_;
  std::set<std::string> used_;
};

void ReadFaults(const json& parent, const std::string& path, FaultPlan& f, std::string& error,
                const char* key = "faults") {
  auto it = parent.is_object() ? parent.find(key) : parent.end();
  if (it == parent.end()) {
    return;
  }
  ObjectReader r(*it, path + "." + key, error);
  r.Read("reset_first", f.reset_first);
  r.Read("storm_first", f.storm_first);
  r.Read("storm_status", f.storm_status);
  r.Read("storm_after_accept", f.storm_after_accept);
  r.Read("status", f.status);
  r.Read("body", f.body);
  r.Read("retry_after_s", f.retry_after_s);
  r.Read("retry_after_date", f.retry_after_date);
  r.Read("retry_after_raw", f.retry_after_raw);
  r.Read("headers", f.headers);
  r.Read("delay_ms", f.delay_ms);
  r.Finish();
}

void ReadSlack(const json& j, SlackConfig& c, std::string& error) {
  ObjectReader r(j, "slack", error);
  r.Read("channel_rate_per_s", c.channel_rate_per_s);
  r.Read("channel_burst", c.channel_burst);
  r.Read("workspace_rate_per_s", c.workspace_rate_per_s);
  r.Read("workspace_burst", c.workspace_burst);
  r.Read("rate_limit_mode", c.rate_limit_mode);
  r.Read("retry_after_s", c.retry_after_s);
  r.Read("invalid_tokens", c.invalid_tokens);
  r.Read("missing_channels", c.missing_channels);
  r.Read("archived_channels", c.archived_channels);
  r.Read("hook_rate_per_s", c.hook_rate_per_s);
  r.Read("hook_burst", c.hook_burst);
  r.Read("archived_hooks", c.archived_hooks);
  r.Read("removed_hooks", c.removed_hooks);
  r.Skip("faults");
  r.Finish();
  ReadFaults(j, "slack", c.faults, error);
  if (c.rate_limit_mode != "429" && c.rate_limit_mode != "429_no_retry_after" &&
      c.rate_limit_mode != "ok_false" && error.empty()) {
    error = "slack.rate_limit_mode must be 429, 429_no_retry_after or ok_false";
  }
}

void ReadDiscord(const json& j, DiscordConfig& c, std::string& error) {
  ObjectReader r(j, "discord", error);
  r.Read("bucket_limit", c.bucket_limit);
  r.Read("bucket_window_ms", c.bucket_window_ms);
  r.Read("webhook_limit", c.webhook_limit);
  r.Read("webhook_window_ms", c.webhook_window_ms);
  r.Read("webhooks_share_bucket", c.webhooks_share_bucket);
  r.Read("global_per_s", c.global_per_s);
  r.Read("bucket_hash", c.bucket_hash);
  r.Read("hash_change_every", c.hash_change_every);
  r.Read("shared_429_every", c.shared_429_every);
  r.Read("shared_retry_after_s", c.shared_retry_after_s);
  r.Read("sublimit_429_every", c.sublimit_429_every);
  r.Read("sublimit_retry_after_s", c.sublimit_retry_after_s);
  r.Read("omit_headers", c.omit_headers);
  r.Read("nonce_window_s", c.nonce_window_s);
  r.Read("bot_tokens", c.bot_tokens);
  r.Read("invalid_tokens", c.invalid_tokens);
  r.Read("unknown_webhooks", c.unknown_webhooks);
  r.Skip("faults");
  r.Finish();
  ReadFaults(j, "discord", c.faults, error);
}

void ReadLine(const json& j, LineConfig& c, std::string& error) {
  ObjectReader r(j, "line", error);
  r.Read("rate_per_s", c.rate_per_s);
  r.Read("shape", c.shape);
  r.Read("burst", c.burst);
  r.Read("window_ms", c.window_ms);
  r.Read("monthly_quota", c.monthly_quota);
  r.Read("retry_key_ttl_s", c.retry_key_ttl_s);
  r.Read("invalid_tokens", c.invalid_tokens);
  r.Skip("faults");
  r.Finish();
  ReadFaults(j, "line", c.faults, error);
  if (!ParseLimitShape(c.shape).has_value() && error.empty()) {
    error = "line.shape must be fixed_window, token_bucket or sliding_log";
  }
  if ((c.burst < 1 || c.burst > 1'000'000 || c.window_ms < 1 || c.window_ms > 3'600'000) &&
      error.empty()) {
    error = "line.burst must be 1 to 1000000 and line.window_ms 1 to 3600000";
  }
}

// A list of sliding windows, [{"limit": 7, "window_s": 1}, ...], replacing the default list
// when `key` is present.
void ReadWindows(const json& parent, const std::string& path, const char* key,
                 std::vector<WindowLimit>& out, std::string& error) {
  auto it = parent.is_object() ? parent.find(key) : parent.end();
  if (it == parent.end()) {
    return;
  }
  const std::string list_path = path + "." + key;
  if (!it->is_array()) {
    if (error.empty()) {
      error = list_path + " must be a list of {\"limit\": N, \"window_s\": S}";
    }
    return;
  }
  out.clear();
  for (size_t i = 0; i < it->size(); ++i) {
    const json& item = (*it)[i];
    const std::string item_path = fmt::format("{}[{}]", list_path, i);
    WindowLimit w;
    ObjectReader r(item, item_path, error);
    r.Read("limit", w.limit);
    r.Read("window_s", w.window_s);
    r.Finish();
    const bool complete = item.is_object() && item.contains("limit") && item.contains("window_s");
    if ((!complete || w.window_s <= 0) && error.empty()) {
      error = item_path + " needs a limit and a window_s above 0";
    }
    out.push_back(w);
  }
}

void ReadTelegram(const json& j, TelegramConfig& c, std::string& error) {
  ObjectReader r(j, "telegram", error);
  r.Read("chat_rate_per_s", c.chat_rate_per_s);
  r.Read("chat_burst", c.chat_burst);
  r.Read("group_limit", c.group_limit);
  r.Read("group_window_s", c.group_window_s);
  r.Read("bot_rate_per_s", c.bot_rate_per_s);
  r.Read("bot_burst", c.bot_burst);
  r.Read("invalid_tokens", c.invalid_tokens);
  r.Read("blocked_chats", c.blocked_chats);
  r.Read("missing_chats", c.missing_chats);
  r.Skip("faults");
  r.Finish();
  ReadFaults(j, "telegram", c.faults, error);
  if (c.group_window_s <= 0 && error.empty()) {
    error = "telegram.group_window_s must be above 0";
  }
}

void ReadTeams(const json& j, TeamsConfig& c, std::string& error) {
  ObjectReader r(j, "teams", error);
  r.Read("clients", c.clients);
  r.Read("scope", c.scope);
  r.Read("token_ttl_s", c.token_ttl_s);
  r.Read("fail_412_every", c.fail_412_every);
  for (const char* key : {"conversation_windows", "app_windows", "faults", "token_faults"}) {
    r.Skip(key);
  }
  r.Finish();
  ReadWindows(j, "teams", "conversation_windows", c.conversation_windows, error);
  ReadWindows(j, "teams", "app_windows", c.app_windows, error);
  ReadFaults(j, "teams", c.faults, error);
  ReadFaults(j, "teams", c.token_faults, error, "token_faults");
  if (c.token_ttl_s < 0 && error.empty()) {
    error = "teams.token_ttl_s must be 0 or more";
  }
  if (c.fail_412_every < 0 && error.empty()) {
    error = "teams.fail_412_every must be 0 (off) or more";
  }
}

// The longest room_window_ms taken (30 days): the window arithmetic is in int64 nanoseconds.
constexpr int64_t kMaxAcmeWindowMs = int64_t{30} * 24 * 3600 * 1000;

void ReadAcme(const json& j, AcmeConfig& c, std::string& error) {
  ObjectReader r(j, "acme", error);
  r.Read("room_limit", c.room_limit);
  r.Read("room_window_ms", c.room_window_ms);
  r.Read("keys", c.keys);
  r.Read("status_429", c.status_429);
  r.Skip("faults");
  r.Finish();
  ReadFaults(j, "acme", c.faults, error);
  if (c.room_limit < 0 && error.empty()) {
    error = "acme.room_limit must be 0 (unlimited) or more";
  }
  if ((c.room_window_ms <= 0 || c.room_window_ms > kMaxAcmeWindowMs) && error.empty()) {
    error = fmt::format("acme.room_window_ms must be from 1 to {}", kMaxAcmeWindowMs);
  }
}

void ReadHook(const json& j, const std::string& path, HookConfig& c, std::string& error) {
  ObjectReader r(j, path, error);
  r.Read("secrets", c.secrets);
  r.Read("tolerance_s", c.tolerance_s);
  r.Read("rate_per_s", c.rate_per_s);
  r.Read("burst", c.burst);
  r.Read("retry_after_format", c.retry_after_format);
  r.Skip("faults");
  r.Finish();
  ReadFaults(j, path, c.faults, error);
  if (c.retry_after_format != "seconds" && c.retry_after_format != "date" && error.empty()) {
    error = path + ".retry_after_format must be seconds or date";
  }
}

}  // namespace

const HookConfig& SimConfig::HookFor(const std::string& name) const {
  auto it = hooks.find(name);
  return it == hooks.end() ? hook_defaults : it->second;
}

Result<SimConfig> ParseSimConfig(std::string_view json_text) {
  json doc = json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument("simulator config is not a JSON object");
  }
  SimConfig config;
  std::string error;
  ObjectReader top(doc, "config", error);
  for (const char* key :
       {"slack", "discord", "line", "telegram", "teams", "acme", "hook_defaults", "hooks"}) {
    top.Skip(key);
  }
  top.Read("latency_ms", config.latency_ms);
  top.Read("latency_jitter_ms", config.latency_jitter_ms);
  top.Read("seed", config.seed);
  top.Finish();
  if ((config.latency_ms < 0 || config.latency_ms > 60'000 || config.latency_jitter_ms < 0 ||
       config.latency_jitter_ms > 60'000) &&
      error.empty()) {
    error = "latency_ms and latency_jitter_ms must be 0 to 60000";
  }
  if (doc.contains("slack")) {
    ReadSlack(doc["slack"], config.slack, error);
  }
  if (doc.contains("discord")) {
    ReadDiscord(doc["discord"], config.discord, error);
  }
  if (doc.contains("line")) {
    ReadLine(doc["line"], config.line, error);
  }
  if (doc.contains("telegram")) {
    ReadTelegram(doc["telegram"], config.telegram, error);
  }
  if (doc.contains("teams")) {
    ReadTeams(doc["teams"], config.teams, error);
  }
  if (doc.contains("acme")) {
    ReadAcme(doc["acme"], config.acme, error);
  }
  json defaults = doc.value("hook_defaults", json::object());
  ReadHook(defaults, "hook_defaults", config.hook_defaults, error);
  if (doc.contains("hooks")) {
    if (!doc["hooks"].is_object()) {
      return Status::InvalidArgument("hooks must be an object of receivers by name");
    }
    for (const auto& [name, hook] : doc["hooks"].items()) {
      // Each receiver starts from hook_defaults (merge patch), then its own keys.
      json merged = defaults;
      merged.merge_patch(hook);
      ReadHook(merged, "hooks." + name, config.hooks[name], error);
    }
  }
  if (!error.empty()) {
    return Status::InvalidArgument(error);
  }
  return config;
}

Result<std::string> MergeSimConfigJson(std::string_view base, std::string_view patch) {
  json merged = json::parse(base.empty() ? std::string_view("{}") : base, nullptr, false);
  json change = json::parse(patch, nullptr, false);
  if (merged.is_discarded() || !merged.is_object()) {
    return Status::InvalidArgument("current config is not a JSON object");
  }
  if (change.is_discarded() || !change.is_object()) {
    return Status::InvalidArgument("config patch is not a JSON object");
  }
  merged.merge_patch(change);
  return JsonText(merged);
}

}  // namespace egress::sim
