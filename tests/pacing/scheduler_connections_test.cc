#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"

namespace egress::pacing {
namespace {

constexpr char kHost[] = "https://hooks.example";

DestinationSpec Webhook(const std::string& tenant, const std::string& path) {
  DestinationSpec spec;
  spec.tenant = tenant;
  spec.platform = Platform::kWebhook;
  spec.target = std::string(kHost) + path;
  spec.origin = kHost;
  return spec;
}

SchedulerOptions WithConnections(int64_t per_origin, int per_platform = 256) {
  SchedulerOptions options;
  options.connections = {.per_origin = per_origin, .total = 0, .streams = 100};
  options.max_in_flight_per_platform.fill(per_platform);
  options.max_in_flight_per_destination.fill(1);
  return options;
}

// A scheduler whose destinations are offered a new head whenever one leaves, as the delivery
// loop does, so each destination always has work.
class Harness {
 public:
  explicit Harness(SchedulerOptions options) : scheduler_(clock_, store_, random_, options) {
    EXPECT_TRUE(
        scheduler_.SetDefaultBudget(BudgetName::kTenantEgress, Budget{1'000'000, 1000, 1'000'000})
            .ok());
    EXPECT_TRUE(
        scheduler_
            .SetDefaultBudget(BudgetName::kWebhookDestination, Budget{1'000'000, 1000, 1'000'000})
            .ok());
  }

  DestinationId Add(const DestinationSpec& spec) {
    Result<DestinationId> id = scheduler_.AddDestination(spec);
    EXPECT_TRUE(id.has_value());
    Offer(*id);
    return *id;
  }
  void Offer(DestinationId id) {
    WorkItem item;
    item.sequence = ++sequence_;
    item.id = "d" + std::to_string(item.sequence);
    EXPECT_TRUE(scheduler_.Offer(id, std::move(item)).ok());
  }
  // Dispatches all that may go now; returns the destinations in order.
  std::vector<Decision> Drain() {
    std::vector<Decision> out;
    for (;;) {
      Decision decision = scheduler_.Next();
      if (decision.kind != Decision::Kind::kDispatch) {
        return out;
      }
      out.push_back(decision);
      // As the delivery loop does once leased: take a connection or wait for one.
      if (!scheduler_.StartSend(decision.destination, decision.sequence)) {
        parked_.push_back(decision);
      }
      Offer(decision.destination);
    }
  }
  // Next() as the delivery loop calls it, then the requests granted a connection it gave back
  // (a kept one whose time is up).
  Decision NextAndSend() {
    Decision decision = scheduler_.Next();
    CollectGrants();
    return decision;
  }
  void Advance(Millis by) { clock_.Advance(by); }
  void Finish(const Decision& decision) {
    DeliveryOutcome ok;
    ok.http_status = 200;
    scheduler_.EndSend(decision.destination);
    Result<Verdict> verdict = scheduler_.OnOutcome(decision.destination, decision.sequence, ok, {});
    EXPECT_TRUE(verdict.has_value()) << verdict.error().ToString();
    CollectGrants();
  }
  void CollectGrants() {
    for (const uint64_t token : scheduler_.TakeSendGrants()) {
      auto it = std::find_if(parked_.begin(), parked_.end(),
                             [&](const Decision& d) { return d.sequence == token; });
      ASSERT_NE(it, parked_.end());
      sent_.push_back(*it);
      parked_.erase(it);
    }
  }
  // Dispatched requests that waited for a connection and got one since the last call.
  std::vector<Decision> TakeSent() {
    std::vector<Decision> out;
    out.swap(sent_);
    return out;
  }
  bool Parked(const Decision& d) const {
    return std::any_of(parked_.begin(), parked_.end(),
                       [&](const Decision& p) { return p.sequence == d.sequence; });
  }
  std::string Reason(DestinationId id) { return scheduler_.Inspect(id)->deferral.ToString(); }
  Scheduler& scheduler() { return scheduler_; }

 private:
  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  uint64_t sequence_ = 0;
  std::vector<Decision> parked_;
  std::vector<Decision> sent_;
};

// Verifies that an origin gets at most its connections in flight, the rest wait with reason
// `connections`, and GET /v1/destinations' numbers (origin in flight, capacity) say so.
TEST(SchedulerConnectionsTest, OriginConnectionsCapInFlight) {
  Harness h(WithConnections(2));
  std::vector<DestinationId> a;
  for (int i = 0; i < 3; ++i) {
    a.push_back(h.Add(Webhook("a", "/" + std::to_string(i))));
  }
  std::vector<Decision> sent = h.Drain();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(h.Reason(a[2]), "connections");
  Result<DestinationView> view = h.scheduler().Inspect(a[2]);
  EXPECT_EQ(view->origin_in_flight, 2);
  EXPECT_EQ(view->origin_capacity, 2);
  h.Finish(sent[0]);
  std::vector<Decision> next = h.Drain();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].destination, a[2]);  // the waiter, not the one that just finished
}

// Verifies the case in miniature, requests leased ahead as the service does: tenant A
// holds every connection of a shared host and every slot ahead, with many destinations waiting;
// tenant B, queued later, holding less than its share, is dispatched at once and takes the next
// connection freed (not one after all of A's), every time; the host's connections stay in use,
// and once B is done A gets every freed connection.
TEST(SchedulerConnectionsTest, FreedConnectionsGoToSmallestShare) {
  SchedulerOptions options = WithConnections(4);
  options.connections.ahead = 4;
  options.connection_keep = Millis(0);  // each freed connection is handed on
  Harness h(options);
  std::vector<DestinationId> a;
  for (int i = 0; i < 20; ++i) {
    a.push_back(h.Add(Webhook("a", "/slow/" + std::to_string(i))));
  }
  std::deque<Decision> sending;
  std::vector<Decision> dispatched = h.Drain();
  ASSERT_EQ(dispatched.size(), 8u);  // 4 on connections, 4 leased ahead
  for (const Decision& d : dispatched) {
    if (!h.Parked(d)) {
      sending.push_back(d);
    }
  }
  ASSERT_EQ(sending.size(), 4u);
  EXPECT_EQ(h.Reason(a[10]), "connections");
  const DestinationId b = h.Add(Webhook("b", "/fast"));
  int to_b = 0;
  std::vector<Decision> now = h.Drain();
  for (int i = 0; i < 10; ++i) {
    // B's head goes at once (it holds nothing); it waits for a connection, and the next one
    // freed (A's oldest) is its.
    auto mine =
        std::find_if(now.begin(), now.end(), [&](const Decision& d) { return d.destination == b; });
    ASSERT_NE(mine, now.end()) << i;
    ASSERT_TRUE(h.Parked(*mine));
    for (const Decision& d : now) {
      if (!h.Parked(d)) {
        sending.push_back(d);
      }
    }
    h.Finish(sending.front());
    sending.pop_front();
    std::vector<Decision> sent = h.TakeSent();
    ASSERT_EQ(sent.size(), 1u);
    to_b += sent[0].destination == b;
    h.Finish(sent[0]);  // B answers at once: its connection goes to A's next leased request
    for (const Decision& d : h.TakeSent()) {
      sending.push_back(d);
    }
    now = h.Drain();  // the slots freed: A's waiting heads, and B's next
  }
  EXPECT_EQ(to_b, 10);
  EXPECT_EQ(h.scheduler().Inspect(a[0])->origin_in_flight, 4);  // nothing left idle
}

// Verifies connection_keep: B's request ends while its next head is due and A's requests wait
// for connections, so B keeps its connection and its next request goes at once; a kept
// connection whose head did not come within connection_keep goes to A's waiting request.
TEST(SchedulerConnectionsTest, TenantUnderShareKeepsItsConnectionForItsNextHead) {
  SchedulerOptions options = WithConnections(2);
  options.connections.ahead = 2;
  options.connection_keep = Millis(25);
  Harness h(options);
  h.Add(Webhook("a", "/slow/1"));
  h.Add(Webhook("a", "/slow/2"));
  h.Add(Webhook("a", "/slow/3"));
  h.Add(Webhook("a", "/slow/4"));
  std::vector<Decision> a = h.Drain();
  ASSERT_EQ(a.size(), 4u);  // 2 on connections, 2 leased ahead
  const DestinationId b = h.Add(Webhook("b", "/fast"));
  std::vector<Decision> first = h.Drain();
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(h.Parked(first[0]));  // B waits for the next connection A frees
  h.Finish(a[0]);
  ASSERT_EQ(h.TakeSent().size(), 1u);  // B's
  h.Finish(first[0]);                  // B's head (held by its in-flight cap of 1) is due now: kept
  EXPECT_TRUE(h.TakeSent().empty());
  // The kept connection is taken, but carries no request.
  EXPECT_EQ(h.scheduler().Inspect(b)->origin_in_flight, 1);
  EXPECT_EQ(h.scheduler().Inspect(b)->origin_kept, 1);
  std::vector<Decision> next = h.Drain();  // B's next head, and A's into the slot A freed
  auto mine =
      std::find_if(next.begin(), next.end(), [&](const Decision& d) { return d.destination == b; });
  ASSERT_NE(mine, next.end());
  EXPECT_FALSE(h.Parked(*mine));  // on its kept connection at once
  for (const Decision& d : next) {
    EXPECT_EQ(h.Parked(d), d.destination != b);  // A's wait for a connection
  }
  h.Finish(*mine);  // kept again
  EXPECT_TRUE(h.TakeSent().empty());
  h.Advance(Millis(26));  // B's next request did not come within connection_keep
  h.NextAndSend();
  std::vector<Decision> handed = h.TakeSent();
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_NE(handed[0].destination, b);  // A's waiting request got it
}

// Verifies that destinations on other origins are not held back by a full one.
TEST(SchedulerConnectionsTest, OtherOriginsAreNotHeld) {
  Harness h(WithConnections(1));
  h.Add(Webhook("a", "/1"));
  const DestinationId waiting = h.Add(Webhook("a", "/2"));
  DestinationSpec other = Webhook("a", "/x");
  other.target = "https://other.example/x";
  other.origin = "https://other.example";
  const DestinationId elsewhere = h.Add(other);
  std::vector<Decision> sent = h.Drain();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].destination, elsewhere);
  EXPECT_EQ(h.Reason(waiting), "connections");
}

// Verifies HTTP/2: once the origin is known to multiplex, it carries connections × streams.
TEST(SchedulerConnectionsTest, MultiplexedOriginCarriesStreams) {
  SchedulerOptions options = WithConnections(1);
  options.connections.streams = 3;
  Harness h(options);
  std::vector<DestinationId> a;
  for (int i = 0; i < 5; ++i) {
    a.push_back(h.Add(Webhook("a", "/" + std::to_string(i))));
  }
  ASSERT_EQ(h.Drain().size(), 1u);
  ASSERT_TRUE(h.scheduler().SetMultiplexed(a[0]).ok());
  EXPECT_EQ(h.Drain().size(), 2u);
  EXPECT_EQ(h.scheduler().Inspect(a[4])->origin_capacity, 3);
}

// Verifies [tenants.<t>] max_in_flight: the tenant's heads beyond it wait with
// tenant_concurrency while another tenant's still go.
TEST(SchedulerConnectionsTest, TenantMaxInFlightCaps) {
  Harness h(WithConnections(0));
  ASSERT_TRUE(h.scheduler().SetTenantMaxInFlight("a", 2).ok());
  EXPECT_FALSE(h.scheduler().SetTenantMaxInFlight("a", -1).ok());
  std::vector<DestinationId> a;
  for (int i = 0; i < 3; ++i) {
    a.push_back(h.Add(Webhook("a", "/" + std::to_string(i))));
  }
  const DestinationId b = h.Add(Webhook("b", "/b"));
  std::vector<Decision> sent = h.Drain();
  EXPECT_EQ(sent.size(), 3u);  // two of A's and B's
  EXPECT_EQ(h.Reason(a[2]), "tenant_concurrency");
  EXPECT_EQ(h.scheduler().Inspect(b)->in_flight, 1);
}

// Verifies the default tenant cap, a fair share of the platform's: alone a tenant may use the
// whole platform cap; once another tenant has deliveries in flight each is held to half, so the
// freed slots go to the newcomer until it has its share.
TEST(SchedulerConnectionsTest, DefaultTenantCapIsFairShare) {
  Harness h(WithConnections(0, /*per_platform=*/4));
  std::vector<DestinationId> a;
  for (int i = 0; i < 6; ++i) {
    a.push_back(h.Add(Webhook("a", "/" + std::to_string(i))));
  }
  std::vector<Decision> held = h.Drain();
  ASSERT_EQ(held.size(), 4u);  // alone: the whole cap
  std::vector<DestinationId> b;
  for (int i = 0; i < 3; ++i) {
    b.push_back(h.Add(Webhook("b", "/" + std::to_string(i))));
  }
  EXPECT_TRUE(h.Drain().empty());
  int b_sent = 0;
  for (int i = 0; i < 3; ++i) {
    h.Finish(held[i]);
    for (const Decision& d : h.Drain()) {
      b_sent += d.destination == b[0] || d.destination == b[1] || d.destination == b[2];
    }
  }
  EXPECT_EQ(b_sent, 2);  // B reached its share (4 / 2); A is held to 2 meanwhile
}

}  // namespace
}  // namespace egress::pacing
