#include "tests/simulator/sim_context.h"

#include <algorithm>
#include <chrono>

namespace egress::sim {
namespace {

// How long an accepted msg_id is remembered: the whole run.
constexpr std::chrono::nanoseconds kForever = std::chrono::hours(24 * 365);

}  // namespace

std::optional<SimResponse> StartFault(SimContext& ctx, const std::string& dest,
                                      const FaultPlan& plan, FaultDecision& decision) {
  decision = ctx.faults.Decide(dest, plan, ctx.clock.WallNow());
  if (decision.reset_connection) {
    ++ctx.stats.Counters(dest).faults;
    SimResponse r;
    r.reset_connection = true;
    r.delay_ms = decision.delay_ms;
    return r;
  }
  if (!decision.replacement || decision.after_accept) {
    return std::nullopt;
  }
  SimResponse r = std::move(*decision.replacement);
  DestinationCounters& c = ctx.stats.Counters(dest);
  ++c.faults;
  if (r.status == 429) {
    ++c.rate_limited;
  } else if (r.status >= 300) {
    ++c.errors;
  }
  if (decision.retry_after_s) {
    ctx.stats.SetNotBefore(dest, ctx.clock.Now() + std::chrono::seconds(*decision.retry_after_s));
  }
  r.delay_ms = decision.delay_ms;
  return r;
}

void FinishFault(SimContext& ctx, const std::string& dest, FaultDecision&& decision,
                 SimResponse& response) {
  if (decision.replacement && decision.after_accept) {
    response = std::move(*decision.replacement);
    DestinationCounters& c = ctx.stats.Counters(dest);
    ++c.faults;
    ++c.errors;
  }
  response.delay_ms = decision.delay_ms;
}

void RecordAccepted(SimContext& ctx, const std::string& dest, const AcceptedFields& fields,
                    int64_t units) {
  DestinationCounters& c = ctx.stats.Counters(dest);
  ++c.accepted;
  c.payloads += units;
  if (!fields.object) {
    return;
  }
  SteadyTime now = ctx.clock.Now();
  if (fields.msg_id && ctx.stats.SeenAccepted(dest, "msg_id", *fields.msg_id, now, kForever)) {
    ++c.duplicates;
  }
  if (fields.seq) {
    // Ordering is per destination and ordering key (default: the destination alone).
    std::string key = dest;
    if (fields.ordering_key) {
      key.append(1, '\n').append(*fields.ordering_key);
    }
    // The violation is counted inside; the verdict itself is not needed here.
    ctx.stats.CheckOrder(dest, key, *fields.seq);
  }
}

void RecordAccepted(SimContext& ctx, const std::string& dest, const nlohmann::json& body,
                    int64_t units) {
  RecordAccepted(ctx, dest, AcceptedFieldsOf(body), units);
}

int64_t CeilSeconds(std::chrono::nanoseconds wait) {
  int64_t ns = wait.count();
  return std::max<int64_t>(1, (ns + 999'999'999) / 1'000'000'000);
}

std::string TokenAfter(std::string_view authorization, std::string_view scheme) {
  if (authorization.size() <= scheme.size() + 1 ||
      authorization.substr(0, scheme.size()) != scheme || authorization[scheme.size()] != ' ') {
    return {};
  }
  return std::string(authorization.substr(scheme.size() + 1));
}

bool Contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

}  // namespace egress::sim
