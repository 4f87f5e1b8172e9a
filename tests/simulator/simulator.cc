#include "tests/simulator/simulator.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "tests/simulator/json_text.h"
#include "tests/simulator/url_form.h"

namespace egress::sim {
namespace {

constexpr std::string_view kDiscordChannels = "/api/v10/channels/";
constexpr std::string_view kDiscordWebhooks = "/api/v10/webhooks/";
constexpr std::string_view kLine = "/v2/bot/message/";
constexpr std::string_view kHooks = "/hooks/";
constexpr std::string_view kSlackHooks = "/services/";
constexpr std::string_view kTelegram = "/bot";
constexpr std::string_view kTeamsToken = "/botframework.com/oauth2/v2.0/token";
constexpr std::string_view kTeamsConversations = "/v3/conversations/";
constexpr std::string_view kTeamsActivities = "/activities";
constexpr std::string_view kTeamsReplies = "/activities/";
constexpr std::string_view kAcmeRooms = "/acme/v2/rooms/";
constexpr std::string_view kAcmeMessages = "/messages";

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

SimResponse NotFound() { return JsonResponse(404, R"({"error":"no such simulated endpoint"})"); }

}  // namespace

Result<std::unique_ptr<Simulator>> Simulator::Create(const Clock& clock, std::string config_json) {
  if (config_json.empty()) {
    config_json = "{}";
  }
  Result<SimConfig> config = ParseSimConfig(config_json);
  if (!config.has_value()) {
    return config.error();
  }
  return std::unique_ptr<Simulator>(
      new Simulator(clock, std::move(*config), std::move(config_json)));
}

Simulator::Simulator(const Clock& clock, SimConfig config, std::string config_json)
    : clock_(clock),
      latency_state_(static_cast<uint64_t>(config.seed)),
      config_(std::move(config)),
      config_json_(std::move(config_json)) {}

SimResponse Simulator::Handle(const SimRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  if (StartsWith(req.path, "/_sim/")) {
    return HandleControl(req);
  }
  if (req.method != "POST") {
    return JsonResponse(405, R"({"error":"simulated platforms take POST"})");
  }
  SimResponse response = HandlePlatform(req);
  response.delay_ms += Latency();
  return response;
}

int Simulator::Latency() {
  if (config_.latency_ms <= 0 && config_.latency_jitter_ms <= 0) {
    return 0;
  }
  // splitmix64 over the configured seed: the same seed answers with the same latencies.
  uint64_t z = (latency_state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  const auto span = static_cast<uint64_t>(std::max(0, config_.latency_jitter_ms)) + 1;
  return std::max(0, config_.latency_ms) + static_cast<int>(z % span);
}

void Simulator::NoteLoopLate(std::chrono::nanoseconds late) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.NoteLoopLate(late);
}

std::string Simulator::StatsJson() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_.ToJson();
}

SimResponse Simulator::HandleControl(const SimRequest& req) {
  if (req.path == "/_sim/stats" && req.method == "GET") {
    return JsonResponse(200, stats_.ToJson());
  }
  if (req.path == "/_sim/config" && req.method == "GET") {
    return JsonResponse(200, config_json_);
  }
  if (req.path == "/_sim/config" && req.method == "POST") {
    return Reconfigure(req.body);
  }
  if (req.path == "/_sim/reset" && req.method == "POST") {
    stats_.Clear();
    ClearLimits();
    line_.Clear();
    teams_.Clear();
    return JsonResponse(200, R"({"ok":true})");
  }
  return NotFound();
}

SimResponse Simulator::Reconfigure(const std::string& patch) {
  Result<std::string> merged = MergeSimConfigJson(config_json_, patch);
  if (!merged.has_value()) {
    return JsonResponse(400, JsonText({{"error", merged.error().message()}}));
  }
  Result<SimConfig> config = ParseSimConfig(*merged);
  if (!config.has_value()) {
    return JsonResponse(400, JsonText({{"error", config.error().message()}}));
  }
  if (config->seed != config_.seed) {
    latency_state_ = static_cast<uint64_t>(config->seed);
  }
  config_ = std::move(*config);
  config_json_ = std::move(*merged);
  ClearLimits();
  return JsonResponse(200, config_json_);
}

void Simulator::ClearLimits() {
  faults_.Clear();
  slack_.ClearLimits();
  discord_.ClearLimits();
  line_.ClearLimits();
  telegram_.ClearLimits();
  teams_.ClearLimits();
  acme_.ClearLimits();
  hooks_.ClearLimits();
}

SimResponse Simulator::HandlePlatform(const SimRequest& req) {
  stats_.CountProtocol(req.protocol);
  SimContext ctx{clock_, config_, stats_, faults_};
  std::string_view path = req.path;
  if (path == "/api/chat.postMessage") {
    return slack_.PostMessage(ctx, req);
  }
  if (StartsWith(path, kSlackHooks) && path.size() > kSlackHooks.size()) {
    return slack_.IncomingWebhook(ctx, req);
  }
  if (StartsWith(path, kDiscordChannels)) {
    std::string_view rest = path.substr(kDiscordChannels.size());
    size_t slash = rest.find('/');
    if (slash != std::string_view::npos && slash > 0 && rest.substr(slash) == "/messages") {
      return discord_.CreateMessage(ctx, req, std::string(rest.substr(0, slash)));
    }
    return NotFound();
  }
  if (StartsWith(path, kDiscordWebhooks)) {
    std::string_view rest = path.substr(kDiscordWebhooks.size());
    size_t slash = rest.find('/');
    if (slash != std::string_view::npos && slash > 0 && slash + 1 < rest.size() &&
        rest.find('/', slash + 1) == std::string_view::npos) {
      return discord_.ExecuteWebhook(ctx, req, std::string(rest.substr(0, slash)));
    }
    return NotFound();
  }
  if (StartsWith(path, kLine)) {
    std::string endpoint(path.substr(kLine.size()));
    if (endpoint == "push" || endpoint == "multicast" || endpoint == "reply") {
      return line_.Send(ctx, req, endpoint);
    }
    return NotFound();
  }
  // Before Telegram's /bot<token>/...: this path starts with "/bot" too.
  if (path == kTeamsToken) {
    return teams_.IssueToken(ctx, req);
  }
  if (StartsWith(path, kTelegram)) {
    std::string_view rest = path.substr(kTelegram.size());
    size_t slash = rest.find('/');
    if (slash != std::string_view::npos && slash > 0 && slash + 1 < rest.size()) {
      return telegram_.Call(ctx, req, std::string(rest.substr(0, slash)),
                            std::string(rest.substr(slash + 1)));
    }
    return NotFound();
  }
  if (StartsWith(path, kTeamsConversations)) {
    // <conversation>/activities, or <conversation>/activities/<activity id> (a reply).
    std::string_view rest = path.substr(kTeamsConversations.size());
    size_t slash = rest.find('/');
    std::string_view tail = slash == std::string_view::npos ? "" : rest.substr(slash);
    std::string_view reply_to =
        StartsWith(tail, kTeamsReplies) ? tail.substr(kTeamsReplies.size()) : "/";
    if (slash > 0 && (tail == kTeamsActivities ||
                      (!reply_to.empty() && reply_to.find('/') == std::string_view::npos))) {
      std::string_view raw = rest.substr(0, slash);
      std::optional<std::string> conversation = PercentDecode(raw, false);
      return teams_.SendActivity(ctx, req, conversation ? *conversation : std::string(raw));
    }
    return NotFound();
  }
  if (StartsWith(path, kAcmeRooms)) {
    // <room>/messages; the room is percent-decoded.
    std::string_view rest = path.substr(kAcmeRooms.size());
    size_t slash = rest.find('/');
    if (slash != std::string_view::npos && slash > 0 && rest.substr(slash) == kAcmeMessages) {
      std::string_view raw = rest.substr(0, slash);
      std::optional<std::string> room = PercentDecode(raw, false);
      return acme_.PostMessage(ctx, req, room ? *room : std::string(raw));
    }
    return NotFound();
  }
  if (StartsWith(path, kHooks) && path.size() > kHooks.size() &&
      path.find('/', kHooks.size()) == std::string_view::npos) {
    return hooks_.Receive(ctx, req, std::string(path.substr(kHooks.size())));
  }
  return NotFound();
}

}  // namespace egress::sim
