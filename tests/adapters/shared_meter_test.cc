#include "adapters/shared_meter.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/base/random.h"
#include "tests/support/shared_meter_contract.h"

namespace egress::adapters {
namespace {

using pacing::Charge;
using pacing::GcraParams;
using pacing::Nanos;

// The arithmetic over a map of items, as the DynamoDB backend applies it over its table.
class MapMeters {
 public:
  SharedMeterUnderTest Store() {
    SharedMeterUnderTest store;
    store.take = [this](const std::vector<Charge>& charges, int64_t now_us) {
      std::vector<SharedMeterState> state;
      for (const Charge& charge : charges) {
        state.push_back(items_[charge.key]);
      }
      SharedTake take = DecideSharedTake(charges, state, now_us, 0);
      for (size_t i = 0; i < charges.size(); ++i) {
        if (take.new_tat_us[i] >= 0) {
          items_[charges[i].key].tat_us = take.new_tat_us[i];
        }
      }
      return Result<pacing::TakeResult>(take.result);
    };
    store.park = [this](pacing::ScopeKey key, Nanos wait, pacing::ParkKind kind, int64_t now_us) {
      const int64_t until = now_us + (wait.count() + 999) / 1000;
      SharedMeterState& item = items_[key];
      if (item.parked_until_us < until) {
        item.parked_until_us = until;
        item.park = kind;
      }
      return Status::Ok();
    };
    store.unpark = [this](pacing::ScopeKey key) {
      items_[key].parked_until_us = 0;
      items_[key].park = pacing::ParkKind::kNone;
      return Status::Ok();
    };
    store.sync = [this](pacing::ScopeKey key, const GcraParams& params, int64_t available,
                        int64_t now_us) {
      items_[key].tat_us = SyncedTat(params, available, now_us);
      return Status::Ok();
    };
    store.rescale = [this](pacing::ScopeKey key, const GcraParams& from, const GcraParams& to,
                           int64_t now_us) {
      if (const int64_t tat = RescaledTat(items_[key].tat_us, from, to, now_us); tat >= 0) {
        items_[key].tat_us = tat;
      }
      return Status::Ok();
    };
    store.inspect = [this](pacing::ScopeKey key, const GcraParams& params, int64_t now_us) {
      return Result<pacing::MeterView>(InspectSharedMeter(items_[key], params, now_us));
    };
    return store;
  }

 private:
  std::unordered_map<pacing::ScopeKey, SharedMeterState> items_;
};

// Verifies that the shared arithmetic decides exactly as MemoryBudgetStore over long random
// sequences (the DynamoDB backend's itest checks a shorter one through the table).
TEST(SharedMeterTest, DecidesAsTheMemoryStore) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    MapMeters meters;
    ExpectDecidesAsTheMemoryStore(meters.Store(), seed, 2000);
  }
}

// Verifies a reservation: a unit that conforms within `ahead` is taken now, with the wait until
// it may go, and the next queues behind it; one further out is denied and nothing is taken.
TEST(SharedMeterTest, ReservesUnitsThatConformSoon) {
  const GcraParams global{.interval_ns = 20'000'000, .depth = 1};
  const Charge charge{3, global, 1};
  SharedMeterState state;
  const int64_t t0 = 7'000'000'000;
  SharedTake first = DecideSharedTake({&charge, 1}, {&state, 1}, t0, 100'000);
  ASSERT_TRUE(first.result.allowed);
  EXPECT_EQ(first.result.retry_after, Nanos(0));
  state.tat_us = first.new_tat_us[0];
  SharedTake second = DecideSharedTake({&charge, 1}, {&state, 1}, t0 + 5'000, 100'000);
  ASSERT_TRUE(second.result.allowed);
  EXPECT_EQ(second.result.retry_after, Nanos(15'000'000));
  state.tat_us = second.new_tat_us[0];
  SharedTake far = DecideSharedTake({&charge, 1}, {&state, 1}, t0 + 5'000, 10'000);
  EXPECT_FALSE(far.result.allowed);
  EXPECT_EQ(far.result.retry_after, Nanos(35'000'000));
  EXPECT_EQ(far.new_tat_us[0], -1);
}

// Verifies that hostile stored values cannot overflow: an arrival time at the limit stays there
// through a take, a rescale and a sync of the longest interval.
TEST(SharedMeterTest, StaysWithinTheLimitAtTheEdges) {
  const GcraParams slow{.interval_ns = INT64_MAX / 2, .depth = 1};
  const Charge charge{1, slow, 1};
  SharedMeterState state{.tat_us = kMaxSharedTat};
  SharedTake take = DecideSharedTake({&charge, 1}, {&state, 1}, 0, 0);
  EXPECT_FALSE(take.result.allowed);
  EXPECT_LE(RescaledTat(kMaxSharedTat, GcraParams{.interval_ns = 1000, .depth = 1}, slow, 0),
            kMaxSharedTat);
  EXPECT_LE(
      SyncedTat(GcraParams{.interval_ns = 1'000'000'000, .depth = 1'000'000}, 0, kMaxSharedTat),
      kMaxSharedTat);
  // One a day with a burst of 10^8 (a valid budget): depth x interval is past int64.
  const GcraParams daily{.interval_ns = 86'400'000'000'000, .depth = 107'000'000};
  const Charge daily_charge{2, daily, 1};
  SharedMeterState fresh;
  SharedTake first = DecideSharedTake({&daily_charge, 1}, {&fresh, 1}, 1'000'000, 0);
  EXPECT_TRUE(first.result.allowed);
  EXPECT_GE(first.result.remaining, 0);
  EXPECT_LE(first.result.remaining, daily.depth);
  EXPECT_GE(first.new_tat_us[0], 0);
  EXPECT_GE(SyncedTat(daily, 0, 1'000'000), 1'000'000);
  EXPECT_GE(InspectSharedMeter(fresh, daily, 1'000'000).remaining, 0);
}

// Measures what clock skew costs (docs/deployment.md, "DynamoDB"): two nodes share a 50/s
// meter (burst 1), busy by turns, each sending whenever the meter lets it; one's clock is
// `skew` ahead. A unit handed from the late clock to the early one goes up to `skew` early, and
// one handed back waits `skew` longer: the most sends in any second of real time stay within 50
// plus skew x rate, rounded up, plus one, and the average falls. The figures are printed.
TEST(SharedMeterTest, ClockSkewCostsAtMostTheSkewTimesTheRate) {
  const GcraParams global{.interval_ns = 20'000'000, .depth = 1};
  const Charge charge{1, global, 1};
  for (const int64_t skew_ms : {0, 5, 20, 100}) {
    SCOPED_TRACE(skew_ms);
    SharedMeterState state;
    std::vector<int64_t> sent_ms;
    for (int64_t t = 0; t < 20'000; ++t) {
      // The nodes are busy by turns (the meter changes hands often), and which asks first in a
      // millisecond alternates.
      const bool ahead_busy = (t / 37) % 2 == 0;
      const bool behind_busy = (t / 53) % 7 != 0;
      std::vector<int64_t> clocks;
      if (ahead_busy) {
        clocks.push_back(t + skew_ms);
      }
      if (behind_busy) {
        clocks.insert(t % 2 == 0 ? clocks.begin() : clocks.end(), t);
      }
      for (const int64_t clock_ms : clocks) {
        SharedTake take = DecideSharedTake({&charge, 1}, {&state, 1}, clock_ms * 1000, 0);
        if (take.result.allowed) {
          state.tat_us = take.new_tat_us[0];
          sent_ms.push_back(t);
        }
      }
    }
    size_t most = 0;
    for (size_t first = 0, last = 0; first < sent_ms.size(); ++first) {
      while (last < sent_ms.size() && sent_ms[last] < sent_ms[first] + 1000) {
        ++last;
      }
      most = std::max(most, last - first);
    }
    std::printf(
        "clock skew %3lld ms: at most %zu sends in a second of a 50/s budget, %.1f/s on "
        "average\n",
        static_cast<long long>(skew_ms), most, static_cast<double>(sent_ms.size()) / 20);
    EXPECT_LE(most, 50u + static_cast<size_t>((skew_ms + 19) / 20) + 1);
    if (skew_ms == 0) {
      EXPECT_GE(most, 48u);  // near the budget: the bound above is not for want of sends
    }
  }
}

// Measures what a DynamoDB global table in its default mode (multi-Region eventual consistency)
// costs a shared budget: each region's nodes take from their own replica, and a write reaches
// the other replicas `lag_ms` later, where the last writer wins (by the time it was written, as
// DynamoDB reconciles concurrent writes). One 50/s meter for 20 s, every region either busy (its
// nodes ask every millisecond) or asking at random at twice the budget. One table (one region)
// keeps the budget; with replicas the regions together spend up to their number times it.
// docs/deployment.md, "Across regions", quotes these figures.
TEST(SharedMeterTest, GlobalTableReplicasSpendUpToTheirNumberTimesTheBudget) {
  const GcraParams global{.interval_ns = 20'000'000, .depth = 1};
  const Charge charge{1, global, 1};
  struct Replica {
    SharedMeterState state;
    int64_t written_ms = -1;
    int writer = -1;
  };
  struct Replication {
    int64_t arrives_ms;
    int to;
    Replica write;
  };
  for (const bool busy : {true, false}) {
    for (const int regions : {1, 2, 3}) {
      for (const int64_t lag_ms : {10, 100, 1000}) {
        if (regions == 1 && lag_ms != 10) {
          continue;  // nothing to replicate
        }
        SplitMixRandom random(static_cast<uint64_t>(regions * 7919 + lag_ms));
        std::vector<Replica> replicas(regions);
        std::vector<Replication> in_flight;  // in order of arrival: the lag is the same for all
        size_t next = 0;
        std::vector<int64_t> sent_ms;
        for (int64_t t = 0; t < 20'000; ++t) {
          for (; next < in_flight.size() && in_flight[next].arrives_ms <= t; ++next) {
            Replica& r = replicas[in_flight[next].to];
            const Replica& w = in_flight[next].write;
            if (std::pair(w.written_ms, w.writer) > std::pair(r.written_ms, r.writer)) {
              r = w;
            }
          }
          for (int i = 0; i < regions; ++i) {
            const int region = static_cast<int>((t + i) % regions);  // who asks first alternates
            if (!busy && random.Next() % 10 != 0) {
              continue;  // 100 asks a second: twice the budget
            }
            Replica& r = replicas[region];
            SharedTake take = DecideSharedTake({&charge, 1}, {&r.state, 1}, t * 1000, 0);
            if (!take.result.allowed) {
              continue;
            }
            r.state.tat_us = take.new_tat_us[0];
            r.written_ms = t;
            r.writer = region;
            sent_ms.push_back(t);
            for (int other = 0; other < regions; ++other) {
              if (other != region) {
                in_flight.push_back({t + lag_ms, other, r});
              }
            }
          }
        }
        size_t most = 0;
        for (size_t first = 0, last = 0; first < sent_ms.size(); ++first) {
          while (last < sent_ms.size() && sent_ms[last] < sent_ms[first] + 1000) {
            ++last;
          }
          most = std::max(most, last - first);
        }
        const double average = static_cast<double>(sent_ms.size()) / 20;
        std::printf(
            "%s, %d region(s), replication lag %4lld ms: at most %zu sends in a second of a "
            "50/s budget, %.1f/s on average\n",
            busy ? "busy" : "2x demand", regions, static_cast<long long>(lag_ms), most, average);
        EXPECT_LE(most, static_cast<size_t>(50 * regions + regions));
        if (regions == 1) {
          EXPECT_LE(most, 51u);
        } else {
          EXPECT_GT(average, 52.0);  // replicas overspend: the reason to keep one table
        }
      }
    }
  }
}

}  // namespace
}  // namespace egress::adapters
