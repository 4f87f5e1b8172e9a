#include <map>
#include <queue>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

constexpr size_t kWebhook = static_cast<size_t>(Platform::kWebhook);

// Ten tenants share one platform whose single connection takes 1 ms per delivery (1,000/s in
// all). "big" has 100,000 deliveries over 100 destinations (demand 5,000/s); nine small tenants
// have 10 each on one destination (50/s each, so 180 ms alone).
class FairnessHarness {
 public:
  explicit FairnessHarness(SchedulerOptions options)
      : scheduler_(clock_, store_, random_, options) {}

  void AddTenant(const std::string& tenant, int destinations, int per_destination) {
    for (int i = 0; i < destinations; ++i) {
      DestinationSpec spec;
      spec.tenant = tenant;
      spec.platform = Platform::kWebhook;
      spec.target = "https://" + tenant + ".example/" + std::to_string(i);
      DestinationId id = *scheduler_.AddDestination(spec);
      if (tenant_of_.size() <= id.value) {
        tenant_of_.resize(id.value + 1);
        backlog_.resize(id.value + 1);
      }
      tenant_of_[id.value] = tenant;
      backlog_[id.value] = per_destination;
      OfferNext(id);
    }
  }

  void SetWeight(const std::string& tenant, uint32_t weight) {
    ASSERT_TRUE(scheduler_.SetTenantWeight(tenant, weight).ok());
  }

  void OfferNext(DestinationId id) {
    if (backlog_[id.value] == 0) {
      return;
    }
    WorkItem item;
    item.sequence = ++sequence_;
    item.id = std::to_string(item.sequence);
    ASSERT_TRUE(scheduler_.Offer(id, std::move(item)).ok());
  }

  // Runs until `done` says stop; returns per-tenant times of each completion.
  template <class Done>
  void Run(Done done) {
    const SteadyTime start = clock_.Now();
    while (!done()) {
      while (!in_flight_.empty() && in_flight_.front().first <= clock_.Now()) {
        auto [at, dispatched] = in_flight_.front();
        in_flight_.pop();
        Complete(dispatched, clock_.Now() - start);
      }
      Decision decision = scheduler_.Next();
      if (decision.kind == Decision::Kind::kDispatch) {
        in_flight_.push({clock_.Now() + milliseconds(1), decision});
        --backlog_[decision.destination.value];
        OfferNext(decision.destination);
        continue;
      }
      if (decision.kind == Decision::Kind::kIdle && in_flight_.empty()) {
        continue;  // done() decides
      }
      SteadyTime next = in_flight_.empty() ? decision.wake_at : in_flight_.front().first;
      if (decision.kind == Decision::Kind::kWait && decision.wake_at < next) {
        next = decision.wake_at;
      }
      ASSERT_GT(next, clock_.Now());
      clock_.Advance(next - clock_.Now());
    }
  }

  void Complete(const Decision& decision, SteadyTime::duration elapsed) {
    DeliveryOutcome ok;
    ok.http_status = 200;
    ASSERT_TRUE(
        scheduler_.OnOutcome(decision.destination, decision.sequence, ok, {0, clock_.WallNow()})
            .has_value());
    const std::string& tenant = tenant_of_[decision.destination.value];
    finished_[tenant].push_back(std::chrono::duration_cast<milliseconds>(elapsed));
  }

  std::map<std::string, std::vector<milliseconds>> finished_;

 private:
  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  std::vector<std::string> tenant_of_;
  std::vector<int> backlog_;
  std::queue<std::pair<SteadyTime, Decision>> in_flight_;
  uint64_t sequence_ = 0;
};

SchedulerOptions OneConnection() {
  SchedulerOptions options;
  options.max_in_flight_per_platform[kWebhook] = 1;
  return options;
}

std::vector<std::string> SmallTenants() {
  std::vector<std::string> names;
  for (int i = 1; i <= 9; ++i) {
    names.push_back("small-" + std::to_string(i));
  }
  return names;
}

// Runs the nine small tenants, with or without the big one, until they are done; returns when
// each finished.
std::map<std::string, milliseconds> SmallTenantFinish(bool with_big, size_t* big_done) {
  FairnessHarness h(OneConnection());
  if (with_big) {
    h.AddTenant("big", 100, 1000);
  }
  for (const std::string& name : SmallTenants()) {
    h.AddTenant(name, 1, 10);
  }
  h.Run([&] {
    for (const std::string& name : SmallTenants()) {
      if (h.finished_[name].size() < 10) {
        return false;
      }
    }
    return true;
  });
  std::map<std::string, milliseconds> finish;
  for (const std::string& name : SmallTenants()) {
    finish[name] = h.finished_[name].back();
  }
  *big_done = h.finished_["big"].size();
  return finish;
}

// Verifies that nine small tenants finish within one round of their own budgets although one
// tenant has 100,000 deliveries queued on the same platform: at most one DRR round (ten tenants
// over a 1 ms connection = 10 ms) later than without the big tenant.
TEST(SchedulerFairnessTest, SmallTenantsFinishWithinOneRoundOfTheirBudgets) {
  size_t big_done = 0;
  std::map<std::string, milliseconds> alone = SmallTenantFinish(false, &big_done);
  std::map<std::string, milliseconds> shared = SmallTenantFinish(true, &big_done);
  for (const std::string& name : SmallTenants()) {
    // Alone, 10 deliveries at 50/s take 180 ms plus the connection's share.
    EXPECT_LE(alone[name], milliseconds(181 + 9)) << name;
    EXPECT_LE(shared[name], alone[name] + milliseconds(10)) << name;
  }
  // The big tenant used the rest of the connection meanwhile.
  EXPECT_GT(big_done, 100u);
}

// Verifies that a tenant weight of 3 gets three times the share of a weight-1 tenant.
TEST(SchedulerFairnessTest, TenantWeightScalesShare) {
  SchedulerOptions options = OneConnection();
  FairnessHarness h(options);
  h.SetWeight("heavy", 3);
  h.AddTenant("heavy", 100, 100);
  h.AddTenant("light", 100, 100);
  h.Run([&] { return h.finished_["heavy"].size() + h.finished_["light"].size() >= 400; });
  const double ratio = static_cast<double>(h.finished_["heavy"].size()) /
                       static_cast<double>(h.finished_["light"].size());
  EXPECT_NEAR(ratio, 3.0, 0.1);
}

}  // namespace
}  // namespace egress::pacing
