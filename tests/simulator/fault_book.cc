#include "tests/simulator/fault_book.h"

#include <algorithm>
#include <chrono>

#include "tests/simulator/http_date_format.h"

namespace egress::sim {
namespace {

SimResponse FaultResponse(int status, const FaultPlan& plan, WallTime wall_now,
                          std::optional<int>& retry_after_s) {
  SimResponse r = JsonResponse(
      status, plan.body.empty() ? std::string(R"({"error":"simulated fault"})") : plan.body);
  for (const auto& [name, value] : plan.headers) {
    r.SetHeader(name, value);
  }
  if (!plan.retry_after_raw.empty()) {
    r.SetHeader("Retry-After", plan.retry_after_raw);
  } else if (plan.retry_after_s >= 0) {
    retry_after_s = plan.retry_after_s;
    r.SetHeader("Retry-After",
                plan.retry_after_date
                    ? FormatHttpDate(wall_now + std::chrono::seconds(plan.retry_after_s))
                    : std::to_string(plan.retry_after_s));
  }
  return r;
}

}  // namespace

FaultDecision FaultBook::Decide(const std::string& dest, const FaultPlan& plan, WallTime wall_now) {
  FaultDecision d;
  d.delay_ms = std::max(0, plan.delay_ms);
  if (plan.reset_first == 0 && plan.storm_first == 0 && plan.status == 0) {
    return d;
  }
  int64_t n = ++seen_[dest];
  if (plan.reset_first < 0 || n <= plan.reset_first) {
    d.reset_connection = true;
    return d;
  }
  int64_t after_resets = n - plan.reset_first;
  if (after_resets <= plan.storm_first) {
    d.replacement = FaultResponse(plan.storm_status, plan, wall_now, d.retry_after_s);
    d.after_accept = plan.storm_after_accept;
    return d;
  }
  if (plan.status != 0) {
    d.replacement = FaultResponse(plan.status, plan, wall_now, d.retry_after_s);
  }
  return d;
}

}  // namespace egress::sim
