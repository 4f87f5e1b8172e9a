#include "tests/simulator/acme_sim.h"

#include <chrono>
#include <optional>

#include "tests/simulator/json_text.h"

namespace egress::sim {
namespace {

constexpr int64_t kNanosPerMilli = 1'000'000;

// The API's error shape: {"error":{"code":...}}.
SimResponse AcmeError(int status, std::string_view code) {
  return JsonResponse(status, JsonText({{"error", {{"code", code}}}}));
}

// a / b rounded towards minus infinity (b > 0).
int64_t FloorDiv(int64_t a, int64_t b) { return a / b - (a % b < 0 ? 1 : 0); }

// A (key, room)'s window as the quota headers state it.
struct QuotaState {
  int limit = 0;
  int left = 0;          // after this request
  int64_t reset_ms = 0;  // the window's end, epoch milliseconds
};

void AddQuotaHeaders(SimResponse& r, const QuotaState& q) {
  r.SetHeader("X-Acme-Quota-Limit", std::to_string(q.limit));
  r.SetHeader("X-Acme-Quota-Left", std::to_string(q.left));
  r.SetHeader("X-Acme-Quota-Reset", std::to_string(q.reset_ms));
}

}  // namespace

void AcmeSim::ClearLimits() { windows_.clear(); }

SimResponse AcmeSim::PostMessage(SimContext& ctx, const SimRequest& req, const std::string& room) {
  const AcmeConfig& cfg = ctx.config.acme;
  const std::string dest = "acme:" + room;
  SteadyTime now = ctx.clock.Now();
  const std::string key(req.Header("x-acme-key"));
  if (key.empty() || (!cfg.keys.empty() && !Contains(cfg.keys, key))) {
    ++ctx.stats.OnRequest(dest, now).errors;
    return AcmeError(401, "bad_key");
  }
  const std::string park_key = "acme:" + key + "\n" + room;
  DestinationCounters& c = ctx.stats.OnRequest(dest, now, park_key);
  FaultDecision fault;
  if (auto r = StartFault(ctx, dest, cfg.faults, fault)) {
    return std::move(*r);
  }
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  auto text = body.is_object() ? body.find("body") : body.end();
  if (!body.is_object() || text == body.end() || !text->is_string()) {
    ++c.errors;
    SimResponse r = AcmeError(400, "bad_request");
    r.delay_ms = fault.delay_ms;
    return r;
  }
  // The window holding the wall clock's now, [index, index + 1) * room_window_ms, when limited.
  std::optional<QuotaState> quota;
  if (cfg.room_limit > 0) {
    const int64_t window_ns = cfg.room_window_ms * kNanosPerMilli;
    const int64_t wall_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(ctx.clock.WallNow().time_since_epoch())
            .count();
    const int64_t index = FloorDiv(wall_ns, window_ns);
    const int64_t end_ns = (index + 1) * window_ns;
    const int64_t left_ns = end_ns - wall_ns;  // at least 1
    Window& w = windows_[key + "\n" + room];
    if (w.index != index) {
      w = Window{index, 0};
    }
    if (w.used >= cfg.room_limit) {
      ++c.rate_limited;
      // Requests of this (key, room) before the window ends are early.
      ctx.stats.SetNotBefore(park_key, now + std::chrono::nanoseconds(left_ns));
      const int64_t retry_in_ms = (left_ns + kNanosPerMilli - 1) / kNanosPerMilli;
      SimResponse r = JsonResponse(
          cfg.status_429 ? 429 : 400,
          JsonText({{"error", {{"code", "quota_exceeded"}, {"retry_in_ms", retry_in_ms}}}}));
      AddQuotaHeaders(r, QuotaState{cfg.room_limit, 0, end_ns / kNanosPerMilli});
      r.delay_ms = fault.delay_ms;
      return r;
    }
    ++w.used;
    quota = QuotaState{cfg.room_limit, cfg.room_limit - w.used, end_ns / kNanosPerMilli};
  }
  RecordAccepted(ctx, dest, body, 1);
  SimResponse r = JsonResponse(
      200, JsonText({{"ok", 1}, {"data", {{"id", "m" + std::to_string(next_message_id_++)}}}}));
  if (quota) {
    AddQuotaHeaders(r, *quota);
  }
  FinishFault(ctx, dest, std::move(fault), r);
  return r;
}

}  // namespace egress::sim
