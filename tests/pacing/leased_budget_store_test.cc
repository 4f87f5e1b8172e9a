#include "dispatcher/pacing/leased_budget_store.h"

#include <chrono>
#include <deque>
#include <functional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "tests/support/fake_clock.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

// A shared backend in memory (one MemoryBudgetStore, as Redis would hold), answering each call
// when the test says so, as a network round trip would.
class FakeBackend final : public SharedBudgetBackend {
 public:
  explicit FakeBackend(const Clock& clock) : clock_(clock) {}

  void TakeAll(std::vector<Charge> charges, Nanos reserve_ahead, TakeCallback done) override {
    ++calls;
    if (!is_up) {
      done(Status::Unavailable("down"));
      return;
    }
    queued_.push_back([this, charges = std::move(charges), reserve_ahead, done = std::move(done)] {
      // Cost 0 only checks the scope's park.
      std::vector<Charge> real;
      for (size_t i = 0; i < charges.size(); ++i) {
        Result<MeterView> view = store.Inspect(charges[i].key, charges[i].params, clock_.Now());
        if (view.has_value() && view->park != ParkKind::kNone) {
          TakeResult parked;
          parked.denied_index = i;
          parked.park = view->park;
          parked.retry_after = view->parked_until - clock_.Now();
          done(parked);
          return;
        }
        if (charges[i].cost > 0) {
          real.push_back(charges[i]);
          index_.push_back(i);
        }
      }
      Result<TakeResult> result = store.TakeAll(real, clock_.Now());
      if (result.has_value() && !result->allowed && result->park == ParkKind::kNone &&
          result->retry_after <= reserve_ahead) {
        // A reservation: taken as at the time every meter conforms (stricter than Redis for
        // the scopes that conform earlier, which is all a fake needs).
        const Nanos wait = result->retry_after;
        result = store.TakeAll(real, clock_.Now() + wait);
        if (result.has_value() && result->allowed) {
          result->retry_after = wait;
        }
      }
      if (result.has_value() && !result->allowed) {
        result->denied_index = index_[result->denied_index];
      }
      index_.clear();
      done(result);
    });
  }
  void Park(ScopeKey key, Nanos wait, ParkKind kind) override {
    store.Park(key, clock_.Now() + wait, kind).IgnoreError();  // in memory: cannot fail
  }
  void Unpark(ScopeKey key) override { store.Unpark(key).IgnoreError(); }
  void Rescale(ScopeKey key, const GcraParams& from, const GcraParams& to) override {
    store.Rescale(key, from, to, clock_.Now()).IgnoreError();
  }
  void Sync(ScopeKey key, const GcraParams& params, int64_t available) override {
    store.Sync(key, params, available, clock_.Now()).IgnoreError();
  }
  bool up() const override { return is_up; }

  // Answers every call made so far.
  void AnswerAll() {
    std::deque<std::function<void()>> now = std::move(queued_);
    queued_.clear();
    for (auto& answer : now) {
      answer();
    }
  }

  MemoryBudgetStore store;
  bool is_up = true;
  int calls = 0;

 private:
  const Clock& clock_;
  std::deque<std::function<void()>> queued_;
  std::vector<size_t> index_;
};

GcraParams PerSecond(int64_t limit, int64_t burst = 1) {
  return GcraParams::FromBudget(Budget{limit, 1000, burst});
}

// Verifies that three nodes sending as fast as they can through one shared backend together stay
// within the budget (50/s) however the leases fall, and that each gets a share when their
// requests reach the backend in turn.
TEST(LeasedBudgetStoreTest, NodesTogetherStayWithinTheBudget) {
  FakeClock clock;
  FakeBackend backend(clock);
  std::vector<std::unique_ptr<LeasedBudgetStore>> nodes;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(
        std::make_unique<LeasedBudgetStore>(clock, backend, LeasedBudgetStoreOptions{}));
  }
  const Charge global{42, PerSecond(50), 1};
  std::vector<int> sent(3, 0);
  std::mt19937 order(7);
  const SteadyTime start = clock.Now();
  for (int tick = 0; tick < 10'000; ++tick) {         // 10 s in 1 ms steps
    const int first = static_cast<int>(order() % 3);  // who reaches the backend first
    for (int turn = 0; turn < 3; ++turn) {
      const int n = (first + turn) % 3;
      const Charge path[] = {global, Charge{static_cast<ScopeKey>(100 + n), PerSecond(1000), 1}};
      while (true) {
        Result<TakeResult> r = nodes[n]->TakeAll(path, clock.Now());
        ASSERT_TRUE(r.has_value());
        if (!r->allowed) {
          break;
        }
        ++sent[n];
      }
    }
    clock.Advance(milliseconds(1));
    backend.AnswerAll();
  }
  const double seconds = std::chrono::duration<double>(clock.Now() - start).count();
  const int total = sent[0] + sent[1] + sent[2];
  // GCRA with burst 1: at most one unit per interval, plus the first.
  EXPECT_LE(total, static_cast<int>(seconds * 50) + 1);
  EXPECT_GE(total, static_cast<int>(seconds * 50 * 0.9));
  for (int n = 0; n < 3; ++n) {
    EXPECT_GT(sent[n], 50) << n;
  }
}

// Verifies that a park read from the shared backend holds a scope at most kMaxSharedPark: one
// written for a century (a damaged or hostile key) is asked about again after that, and once it
// is gone from the backend the scope sends.
TEST(LeasedBudgetStoreTest, SharedParksAreBelievedForAnHourAtMost) {
  FakeClock clock;
  FakeBackend backend(clock);
  LeasedBudgetStore store(clock, backend, LeasedBudgetStoreOptions{});
  const Charge path[] = {Charge{7, PerSecond(10), 1}};
  backend.store.Park(7, clock.Now() + std::chrono::hours(24 * 365 * 100), ParkKind::kRetryAfter)
      .IgnoreError();
  ASSERT_FALSE(store.TakeAll(path, clock.Now())->allowed);  // asks
  backend.AnswerAll();
  Result<TakeResult> held = store.TakeAll(path, clock.Now());
  ASSERT_FALSE(held->allowed);
  EXPECT_EQ(held->park, ParkKind::kRetryAfter);
  EXPECT_LE(held->retry_after, kMaxSharedPark);
  backend.store.Unpark(7).IgnoreError();  // repaired
  clock.Advance(kMaxSharedPark + milliseconds(1));
  bool sent = false;
  for (int i = 0; i < 10 && !sent; ++i) {
    sent = store.TakeAll(path, clock.Now())->allowed;
    backend.AnswerAll();
    clock.Advance(milliseconds(1));
  }
  EXPECT_TRUE(sent);
}

// Verifies that a lease is asked once per scope while it is on its way, that its units are spent
// locally, and that unspent units expire after lease_ttl.
TEST(LeasedBudgetStoreTest, LeasesSlicesAndExpiresThem) {
  FakeClock clock;
  FakeBackend backend(clock);
  LeasedBudgetStore store(clock, backend, LeasedBudgetStoreOptions{});
  const Charge fast[] = {Charge{1, PerSecond(1000, 100), 1}};  // 20 ms of it: a slice of 20
  Result<TakeResult> first = store.TakeAll(fast, clock.Now());
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->allowed);
  EXPECT_EQ(first->retry_after, milliseconds(1));
  ASSERT_TRUE(store.TakeAll(fast, clock.Now()).has_value());
  EXPECT_EQ(backend.calls, 1);  // coalesced
  backend.AnswerAll();
  int taken = 0;
  while (store.TakeAll(fast, clock.Now())->allowed) {
    ++taken;
  }
  EXPECT_EQ(taken, 20);
  EXPECT_EQ(backend.calls, 2);  // the next slice was asked when this one ran out
  backend.AnswerAll();
  clock.Advance(milliseconds(101));
  EXPECT_FALSE(store.TakeAll(fast, clock.Now())->allowed);
  EXPECT_EQ(store.units_expired(), 20u);
}

// Verifies that a unit goes at most max_late after it may go (its interval when longer): a 50/s
// unit held 21 ms is dropped, so units counted 20 ms apart never go closer than 20 ms less
// max_late. (A slice of several units keeps lease_ttl: LeasesSlicesAndExpiresThem.)
TEST(LeasedBudgetStoreTest, UnitsGoWithinMaxLateOfTheirMeterTime) {
  FakeClock clock;
  FakeBackend backend(clock);
  LeasedBudgetStore store(clock, backend, LeasedBudgetStoreOptions{});
  const Charge global[] = {Charge{1, PerSecond(50), 1}};
  EXPECT_FALSE(store.TakeAll(global, clock.Now())->allowed);
  backend.AnswerAll();
  clock.Advance(milliseconds(19));
  EXPECT_TRUE(store.TakeAll(global, clock.Now())->allowed);   // 19 ms late: goes
  EXPECT_FALSE(store.TakeAll(global, clock.Now())->allowed);  // asks for the next
  backend.AnswerAll();                                        // reserved for 20 ms after the first
  clock.Advance(milliseconds(1 + 21));
  EXPECT_FALSE(store.TakeAll(global, clock.Now())->allowed);  // 21 ms after it conformed
  EXPECT_EQ(store.units_expired(), 1u);
}

// Verifies that a path's slices are no larger than its slowest scope's: beside a 50/s scope
// (a slice of 1), a 1,000/s scope is leased one unit at a time, not 20 that would expire unspent.
TEST(LeasedBudgetStoreTest, SlicesFollowThePathsSlowestScope) {
  FakeClock clock;
  FakeBackend backend(clock);
  LeasedBudgetStore store(clock, backend, LeasedBudgetStoreOptions{});
  const Charge path[] = {Charge{1, PerSecond(1000), 1}, Charge{2, PerSecond(50), 1}};
  EXPECT_FALSE(store.TakeAll(path, clock.Now())->allowed);
  backend.AnswerAll();
  EXPECT_TRUE(store.TakeAll(path, clock.Now())->allowed);
  EXPECT_EQ(store.Inspect(1, PerSecond(1000), clock.Now())->remaining, 0);
  clock.Advance(milliseconds(100));
  EXPECT_FALSE(store.TakeAll(path, clock.Now())->allowed);
  EXPECT_EQ(store.units_expired(), 0u);
}

// Verifies that a shared denial and a shared park are mirrored with their exact waits, and that a
// local Park reaches the backend (so other nodes see it).
TEST(LeasedBudgetStoreTest, MirrorsDenialsAndParks) {
  FakeClock clock;
  FakeBackend backend(clock);
  LeasedBudgetStore a(clock, backend, LeasedBudgetStoreOptions{});
  LeasedBudgetStore b(clock, backend, LeasedBudgetStoreOptions{});
  const Charge slow[] = {Charge{5, PerSecond(1), 1}};
  static_cast<void>(a.TakeAll(slow, clock.Now()));
  backend.AnswerAll();
  ASSERT_TRUE(a.TakeAll(slow, clock.Now())->allowed);
  static_cast<void>(b.TakeAll(slow, clock.Now()));
  backend.AnswerAll();
  Result<TakeResult> denied = b.TakeAll(slow, clock.Now());
  ASSERT_FALSE(denied->allowed);
  EXPECT_EQ(denied->retry_after, std::chrono::seconds(1));
  EXPECT_EQ(denied->park, ParkKind::kNone);

  ASSERT_TRUE(a.Park(9, clock.Now() + std::chrono::seconds(3), ParkKind::kRetryAfter).ok());
  const Charge parked[] = {Charge{9, PerSecond(100), 1}};
  static_cast<void>(b.TakeAll(parked, clock.Now()));
  backend.AnswerAll();
  Result<TakeResult> held = b.TakeAll(parked, clock.Now());
  ASSERT_FALSE(held->allowed);
  EXPECT_EQ(held->park, ParkKind::kRetryAfter);
  EXPECT_EQ(held->retry_after, std::chrono::seconds(3));
}

// Verifies local_share: while the backend is down each node paces at 1/expected_nodes.
TEST(LeasedBudgetStoreTest, LocalShareWhileDown) {
  FakeClock clock;
  FakeBackend backend(clock);
  backend.is_up = false;
  LeasedBudgetStoreOptions options;
  options.expected_nodes = 3;
  LeasedBudgetStore store(clock, backend, options);
  const Charge global[] = {Charge{1, PerSecond(30), 1}};
  int sent = 0;
  for (int tick = 0; tick < 10'000; ++tick) {
    while (store.TakeAll(global, clock.Now())->allowed) {
      ++sent;
    }
    clock.Advance(milliseconds(1));
  }
  EXPECT_GE(sent, 99);
  EXPECT_LE(sent, 101);  // 10/s for 10 s
}

// Verifies hold: while the backend is down TakeAll fails with kUnavailable; it recovers.
TEST(LeasedBudgetStoreTest, HoldWhileDown) {
  FakeClock clock;
  FakeBackend backend(clock);
  backend.is_up = false;
  LeasedBudgetStoreOptions options;
  options.down_mode = BackendDownMode::kHold;
  LeasedBudgetStore store(clock, backend, options);
  const Charge path[] = {Charge{1, PerSecond(30), 1}};
  Result<TakeResult> held = store.TakeAll(path, clock.Now());
  ASSERT_FALSE(held.has_value());
  EXPECT_EQ(held.error().code(), Status::Code::kUnavailable);
  backend.is_up = true;
  static_cast<void>(store.TakeAll(path, clock.Now()));
  backend.AnswerAll();
  EXPECT_TRUE(store.TakeAll(path, clock.Now())->allowed);
}

// Three nodes that look again only when TakeAll says (as the Scheduler's timers do), over a
// backend answering 1 ms later: how many of `seconds` of a 50/s burst-1 budget they send.
int SendWithWakeUps(const LeasedBudgetStoreOptions& options, int seconds) {
  FakeClock clock;
  FakeBackend backend(clock);
  std::vector<std::unique_ptr<LeasedBudgetStore>> nodes;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(std::make_unique<LeasedBudgetStore>(clock, backend, options));
  }
  const Charge global{42, PerSecond(50), 1};
  std::vector<SteadyTime> next_look(3, clock.Now());
  std::vector<SteadyTime> sends;
  const SteadyTime end = clock.Now() + std::chrono::seconds(seconds);
  while (clock.Now() < end) {
    for (int n = 0; n < 3; ++n) {
      if (clock.Now() < next_look[n]) {
        continue;
      }
      const Charge path[] = {global};
      Result<TakeResult> r = nodes[n]->TakeAll(path, clock.Now());
      if (!r.has_value()) {
        ADD_FAILURE() << r.error().message();
        return 0;
      }
      if (r->allowed) {
        sends.push_back(clock.Now());
        next_look[n] = clock.Now();  // its next head looks at once
      } else {
        next_look[n] = clock.Now() + r->retry_after;
      }
    }
    clock.Advance(milliseconds(1));
    backend.AnswerAll();
  }
  // Never closer than the budget allows (burst 1: one per 20 ms).
  for (size_t i = 1; i < sends.size(); ++i) {
    EXPECT_GE(sends[i] - sends[i - 1], milliseconds(20)) << i;
  }
  return static_cast<int>(sends.size());
}

// Verifies that reserving ahead keeps a busy shared budget at its full rate: without it, every
// unit costs the nodes a wake-up and a round trip after it frees (the meter's time is lost);
// with it, the nodes queue in the shared meter and each unit goes when it conforms.
TEST(LeasedBudgetStoreTest, ReservationsKeepABusyBudgetAtItsRate) {
  LeasedBudgetStoreOptions reserving;
  LeasedBudgetStoreOptions asking;
  asking.reserve_ahead = Nanos(0);
  const int reserved = SendWithWakeUps(reserving, 10);
  const int asked = SendWithWakeUps(asking, 10);
  EXPECT_GE(reserved, 495);  // 50/s for 10 s, less the first round trip
  EXPECT_LE(reserved, 501);
  EXPECT_LT(asked, reserved - 10);  // each unit lost its wake-up and round trip
}

}  // namespace
}  // namespace egress::pacing
