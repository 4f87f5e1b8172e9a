#include "tests/simulator/hook_sim.h"

#include <chrono>
#include <vector>

#include "adapters/webhook_signature.h"
#include "tests/simulator/accepted_fields.h"
#include "tests/simulator/http_date_format.h"
#include "tests/simulator/json_text.h"

namespace egress::sim {
namespace {

constexpr std::chrono::nanoseconds kForever = std::chrono::hours(24 * 365);

// Ok when the receiver has no secrets or a signature verifies.
Status CheckSignature(const HookConfig& cfg, const SimRequest& req, WallTime now) {
  if (cfg.secrets.empty()) {
    return Status::Ok();
  }
  std::vector<adapters::WebhookKey> keys;
  for (const std::string& secret : cfg.secrets) {
    Result<adapters::WebhookKey> key = adapters::ParseWebhookSecret(secret);
    if (!key.has_value()) {
      return Status::InvalidArgument("receiver secret: " + key.error().message());
    }
    keys.push_back(std::move(*key));
  }
  adapters::WebhookSignatureHeaders headers{
      .id = std::string(req.Header("webhook-id")),
      .timestamp = std::string(req.Header("webhook-timestamp")),
      .signature = std::string(req.Header("webhook-signature"))};
  return adapters::VerifyWebhook(keys, headers, req.body, now,
                                 std::chrono::seconds(cfg.tolerance_s));
}

}  // namespace

void HookSim::ClearLimits() {
  buckets_.clear();
  parked_until_.clear();
}

SimResponse HookSim::Receive(SimContext& ctx, const SimRequest& req, const std::string& name) {
  const HookConfig& cfg = ctx.config.HookFor(name);
  const std::string dest = "hook:" + name;
  SteadyTime now = ctx.clock.Now();
  DestinationCounters& c = ctx.stats.OnRequest(dest, now);
  FaultDecision fault;
  if (auto r = StartFault(ctx, dest, cfg.faults, fault)) {
    return std::move(*r);
  }
  if (Status s = CheckSignature(cfg, req, ctx.clock.WallNow()); !s.ok()) {
    ++c.signature_failures;
    ++c.errors;
    return JsonResponse(401, JsonText({{"error", s.ToString()}}));
  }
  std::chrono::nanoseconds wait(0);
  bool parked_already = false;
  if (auto it = parked_until_.find(dest); it != parked_until_.end() && it->second > now) {
    // Inside a park the answer repeats the time left; the park itself is not extended.
    wait = it->second - now;
    parked_already = true;
  } else {
    auto bucket = buckets_.find(dest);
    if (bucket == buckets_.end()) {
      bucket = buckets_.emplace(dest, TokenBucket(cfg.rate_per_s, cfg.burst, now)).first;
    }
    wait = bucket->second.TryTake(now);
  }
  if (wait.count() > 0) {
    int64_t seconds = CeilSeconds(wait);
    WallTime wall = ctx.clock.WallNow();
    // An HTTP-date has whole seconds: round it up, and park until exactly that date.
    WallTime date = std::chrono::ceil<std::chrono::seconds>(wall + std::chrono::seconds(seconds));
    SteadyTime until = cfg.retry_after_format == "date"
                           ? now + std::chrono::duration_cast<std::chrono::nanoseconds>(date - wall)
                           : now + std::chrono::seconds(seconds);
    if (!parked_already) {
      parked_until_[dest] = until;
      ctx.stats.SetNotBefore(dest, until);
    }
    ++c.rate_limited;
    SimResponse r = JsonResponse(429, R"({"error":"too many requests"})");
    r.SetHeader("Retry-After",
                cfg.retry_after_format == "date" ? FormatHttpDate(date) : std::to_string(seconds));
    return r;
  }
  std::string_view id = req.Header("webhook-id");
  SimResponse r;
  if (!id.empty() && ctx.stats.SeenAccepted(dest, "webhook-id", id, now, kForever)) {
    ++c.duplicates;
    r = JsonResponse(200, R"({"ok":true,"duplicate":true})");
  } else {
    RecordAccepted(ctx, dest, ScanAcceptedFields(req.body), 1);
    r = JsonResponse(200, R"({"ok":true})");
  }
  FinishFault(ctx, dest, std::move(fault), r);
  return r;
}

}  // namespace egress::sim
