#include "tests/simulator/telegram_sim.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "tests/simulator/json_text.h"

namespace egress::sim {
namespace {

SimResponse TelegramError(int code, std::string_view description) {
  nlohmann::json body = {{"ok", false}, {"error_code", code}, {"description", description}};
  return JsonResponse(code, JsonText(body));
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// The chat object of a sent message: the id as Telegram types it, and the chat's type.
nlohmann::json ChatObject(const std::string& chat) {
  std::optional<int64_t> id = ParseInt(chat);
  if (!id) {
    return {{"id", chat}, {"type", "channel"}};
  }
  // Supergroup ids are -100 followed by (at least) ten digits.
  const bool supergroup = chat.size() >= 14 && chat.compare(0, 4, "-100") == 0;
  std::string_view type = *id >= 0 ? "private" : supergroup ? "supergroup" : "group";
  return {{"id", *id}, {"type", type}};
}

}  // namespace

std::optional<std::string> TelegramChatId(const nlohmann::json& chat_id) {
  if (chat_id.is_number_integer()) {
    return chat_id.dump();
  }
  if (!chat_id.is_string()) {
    return std::nullopt;
  }
  const std::string& text = chat_id.get_ref<const std::string&>();
  if (text.size() > 1 && text[0] == '@') {
    return text;
  }
  std::optional<int64_t> id = ParseInt(text);
  if (!id) {
    return std::nullopt;
  }
  return std::to_string(*id);
}

bool IsTelegramGroup(std::string_view chat) { return !chat.empty() && chat[0] == '-'; }

void TelegramSim::ClearLimits() {
  chat_buckets_.clear();
  bot_buckets_.clear();
  group_windows_.clear();
  parked_until_.clear();
}

std::chrono::nanoseconds TelegramSim::ParkLeft(const std::string& key, SteadyTime now) const {
  auto it = parked_until_.find(key);
  if (it == parked_until_.end() || it->second <= now) {
    return std::chrono::nanoseconds(0);
  }
  return it->second - now;
}

SimResponse TelegramSim::RateLimited(SimContext& ctx, const std::string& dest,
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
  return JsonResponse(
      429, fmt::format(R"({{"ok":false,"error_code":429,"description":"Too Many Requests: retry )"
                       R"(after {}","parameters":{{"retry_after":{}}}}})",
                       retry_after, retry_after));
}

SimResponse TelegramSim::Call(SimContext& ctx, const SimRequest& req, const std::string& token,
                              const std::string& method) {
  const bool valid_token = !Contains(ctx.config.telegram.invalid_tokens, token);
  if (!EqualsIgnoreCase(method, "sendMessage")) {
    return valid_token ? TelegramError(404, "Not Found") : TelegramError(401, "Unauthorized");
  }
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  const bool object = !body.is_discarded() && body.is_object();
  auto chat_it = object ? body.find("chat_id") : body.end();
  std::optional<std::string> chat;
  if (object && chat_it != body.end()) {
    chat = TelegramChatId(*chat_it);
  }
  if (!chat) {
    // No chat to count the request on.
    if (!valid_token) {
      return TelegramError(401, "Unauthorized");
    }
    if (!object) {
      return TelegramError(400, "Bad Request: the request body is not a JSON object");
    }
    return chat_it == body.end() ? TelegramError(400, "Bad Request: chat_id is empty")
                                 : TelegramError(400, "Bad Request: chat not found");
  }
  const std::string dest = "telegram:" + *chat;
  DestinationCounters& c =
      ctx.stats.OnRequest(dest, ctx.clock.Now(), "telegram:" + token + ":" + *chat);
  if (!valid_token) {
    ++c.errors;
    return TelegramError(401, "Unauthorized");
  }
  return SendMessage(ctx, token, body, *chat);
}

SimResponse TelegramSim::SendMessage(SimContext& ctx, const std::string& token,
                                     const nlohmann::json& body, const std::string& chat) {
  const TelegramConfig& cfg = ctx.config.telegram;
  const std::string dest = "telegram:" + chat;
  const std::string park_key = "telegram:" + token + ":" + chat;
  const std::string chat_key = token + "\n" + chat;
  SteadyTime now = ctx.clock.Now();
  DestinationCounters& c = ctx.stats.Counters(dest);
  FaultDecision fault;
  if (auto r = StartFault(ctx, dest, cfg.faults, fault)) {
    return std::move(*r);
  }
  if (Contains(cfg.blocked_chats, chat)) {
    ++c.errors;
    return TelegramError(403, "Forbidden: bot was blocked by the user");
  }
  if (Contains(cfg.missing_chats, chat)) {
    ++c.errors;
    return TelegramError(400, "Bad Request: chat not found");
  }
  if (StringField(body, "text").empty()) {
    ++c.errors;
    return TelegramError(400, "Bad Request: message text is empty");
  }
  if (auto left = ParkLeft(park_key, now); left.count() > 0) {
    return RateLimited(ctx, dest, park_key, left, false);
  }
  auto bot = bot_buckets_.try_emplace(token, cfg.bot_rate_per_s, cfg.bot_burst, now).first;
  auto per_chat =
      chat_buckets_.try_emplace(chat_key, cfg.chat_rate_per_s, cfg.chat_burst, now).first;
  SlidingWindow* group = nullptr;
  if (IsTelegramGroup(chat)) {
    auto window = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(cfg.group_window_s));
    group = &group_windows_.try_emplace(chat_key, cfg.group_limit, window).first->second;
  }
  // The wait until every limit has room.
  const std::chrono::nanoseconds bot_wait = bot->second.WaitFor(now);
  std::chrono::nanoseconds wait = std::max(bot_wait, per_chat->second.WaitFor(now));
  if (group != nullptr) {
    wait = std::max(wait, group->WaitFor(now));
  }
  if (wait.count() > 0) {
    return RateLimited(ctx, dest, park_key, wait, bot_wait.count() > 0);
  }
  bot->second.Take(now);
  per_chat->second.Take(now);
  if (group != nullptr) {
    group->Take(now);
  }
  RecordAccepted(ctx, dest, body, 1);
  nlohmann::json result = {{"message_id", next_message_id_++},
                           {"chat", ChatObject(chat)},
                           {"date", ToUnixMillis(ctx.clock.WallNow()) / 1000},
                           {"text", StringField(body, "text")}};
  SimResponse r = JsonResponse(200, JsonText({{"ok", true}, {"result", result}}));
  FinishFault(ctx, dest, std::move(fault), r);
  return r;
}

}  // namespace egress::sim
