// CounterTable's group sums: the destination counters per (tenant, platform), kept as the
// counters change.

#include "storage/counter_table.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "storage/delivery.h"
#include "storage/index_keys.h"

namespace egress::storage {
namespace {

std::string Key(std::string_view platform, std::string_view tenant, std::string_view destination,
                DeliveryState state) {
  return DestCountKey(DestinationKeyOf(platform, tenant, "cred", destination), state);
}

CounterDeltas Deltas(std::initializer_list<std::pair<std::string, int64_t>> moves) {
  CounterDeltas d;
  for (const auto& [key, n] : moves) {
    d.Add(key, n);
  }
  return d;
}

// Verifies that destinations of one (tenant, platform) add up, groups come ordered by tenant then
// platform, other counters are no group, a negative destination counter reads as 0 (as each
// destination's own count does), and a group whose counts all reach 0 goes.
TEST(CounterTableTest, GroupsFollowTheDestinationCounters) {
  CounterTable table;
  table.Apply(Deltas({{Key("webhook", "beta", "a", DeliveryState::kQueued), 2},
                      {Key("webhook", "acme", "a", DeliveryState::kQueued), 1},
                      {Key("webhook", "acme", "b", DeliveryState::kDeferred), 3},
                      {Key("slack", "acme", "C1", DeliveryState::kInFlight), 1},
                      {CountKey(DeliveryState::kQueued), 3},
                      {BacklogKey("acme"), 5}}));
  std::vector<GroupCounts> groups = table.Groups();
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].tenant, "acme");
  EXPECT_EQ(groups[0].platform, "slack");
  EXPECT_EQ(CountOf(groups[0].counts, DeliveryState::kInFlight), 1u);
  EXPECT_EQ(groups[1].platform, "webhook");
  EXPECT_EQ(CountOf(groups[1].counts, DeliveryState::kQueued), 1u);
  EXPECT_EQ(CountOf(groups[1].counts, DeliveryState::kDeferred), 3u);
  EXPECT_EQ(groups[2].tenant, "beta");

  // acme/webhook/a goes to -1: it counts 0, not -1; back to +1 it counts 1 again.
  table.Apply(Deltas({{Key("webhook", "acme", "a", DeliveryState::kQueued), -2}}));
  groups = table.Groups();
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(CountOf(groups[1].counts, DeliveryState::kQueued), 0u);
  table.Apply(Deltas({{Key("webhook", "acme", "a", DeliveryState::kQueued), 2}}));
  EXPECT_EQ(CountOf(table.Groups()[1].counts, DeliveryState::kQueued), 1u);

  // acme/slack's only count ends: the group goes.
  table.Apply(Deltas({{Key("slack", "acme", "C1", DeliveryState::kInFlight), -1}}));
  groups = table.Groups();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].platform, "webhook");
  EXPECT_EQ(table.Get(CountKey(DeliveryState::kQueued)), 3);
}

// Verifies that more groups than one hold of the lock copies (512) come each once, in order,
// while writers move other groups between the holds.
TEST(CounterTableTest, ManyGroupsAreCopiedEachOnceInOrder) {
  CounterTable table;
  constexpr int kTenants = 1500;
  for (int t = 0; t < kTenants; ++t) {
    table.Apply(Deltas(
        {{Key("webhook", "t" + std::to_string(10000 + t), "a", DeliveryState::kQueued), 1}}));
  }
  std::atomic<bool> stop{false};
  // Each pass over the tenants creates their slack groups, the next erases them.
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      const int64_t n = (i / kTenants) % 2 == 0 ? 1 : -1;
      table.Apply(Deltas(
          {{Key("slack", "t" + std::to_string(10000 + i % kTenants), "C", DeliveryState::kQueued),
            n}}));
    }
  });
  struct Join {
    std::atomic<bool>& stop;
    std::thread& writer;
    ~Join() {
      stop = true;
      writer.join();
    }
  } join{stop, writer};
  for (int round = 0; round < 20; ++round) {
    const std::vector<GroupCounts> groups = table.Groups();
    std::vector<std::string> webhook;
    for (size_t i = 0; i < groups.size(); ++i) {
      if (i > 0) {
        ASSERT_LT(std::tie(groups[i - 1].tenant, groups[i - 1].platform),
                  std::tie(groups[i].tenant, groups[i].platform));
      }
      if (groups[i].platform == "webhook") {
        webhook.push_back(groups[i].tenant);
      }
    }
    ASSERT_EQ(webhook.size(), static_cast<size_t>(kTenants)) << round;
  }
}

// Verifies that a key under destcount/ that does not name a state and a destination key is no
// group (a hostile or damaged key read back from the meta column family).
TEST(CounterTableTest, AMalformedDestinationCounterIsNoGroup) {
  CounterTable table;
  table.Apply(Deltas({{"destcount/queued/no-separators", 4},
                      {"destcount/nostate/webhook\x1f"
                       "acme\x1f"
                       "c\x1f"
                       "d",
                       4},
                      {"destcount/queued", 4}}));
  EXPECT_TRUE(table.Groups().empty());
  EXPECT_EQ(table.Get("destcount/queued/no-separators"), 4);
}

// Verifies that a destination's counters by state read back each on its own while they share one
// entry, which goes once every state is at 0 (and only then), beside the other counters.
TEST(CounterTableTest, ADestinationsStatesShareOneEntry) {
  CounterTable table;
  const std::string queued = Key("webhook", "acme", "a", DeliveryState::kQueued);
  const std::string deferred = Key("webhook", "acme", "a", DeliveryState::kDeferred);
  const std::string in_flight = Key("webhook", "acme", "a", DeliveryState::kInFlight);
  table.Apply(
      Deltas({{queued, 9}, {deferred, 1}, {in_flight, -1}, {CountKey(DeliveryState::kQueued), 9}}));
  EXPECT_EQ(table.Get(queued), 9);
  EXPECT_EQ(table.Get(deferred), 1);
  EXPECT_EQ(table.Get(in_flight), -1);
  EXPECT_EQ(table.Get(Key("webhook", "acme", "b", DeliveryState::kQueued)), 0);
  EXPECT_EQ(table.Get(CountKey(DeliveryState::kQueued)), 9);
  EXPECT_EQ(table.entries(), 2u);

  table.Apply(Deltas({{queued, -9}, {in_flight, 1}}));
  EXPECT_EQ(table.Get(queued), 0);
  EXPECT_EQ(table.Get(deferred), 1);
  EXPECT_EQ(table.entries(), 2u);  // deferred still counts
  table.Apply(Deltas({{deferred, -1}, {CountKey(DeliveryState::kQueued), -9}}));
  EXPECT_EQ(table.entries(), 0u);
  EXPECT_TRUE(table.Groups().empty());
  table.Apply(Deltas({{deferred, 2}}));
  EXPECT_EQ(table.Get(deferred), 2);
  EXPECT_EQ(table.Get(queued), 0);
  EXPECT_EQ(table.entries(), 1u);
  // A terminal state's counter (the store writes none) reads back too, in an entry of its own.
  const std::string dead = Key("webhook", "acme", "a", DeliveryState::kDead);
  table.Apply(Deltas({{dead, 4}}));
  EXPECT_EQ(table.Get(dead), 4);
  EXPECT_EQ(table.Get(deferred), 2);
  EXPECT_EQ(table.entries(), 2u);
}

// Verifies that the sets of one Apply are read together: a delivery leased in memory (in
// flight) whose outcome is written deferred moves durably queued -> deferred and in memory
// in_flight -> queued; a reader between the two saw it twice (the scrape of 1,000 tenants read
// a depth of 2 once). Read meanwhile from another thread, its group never holds more than one
// (applied as two calls, the reader saw 2 within 20,000 rounds).
TEST(CounterTableTest, ApplyingSeveralSetsIsOneStepForReaders) {
  CounterTable table;
  const std::string queued = Key("webhook", "acme", "h", DeliveryState::kQueued);
  const std::string in_flight = Key("webhook", "acme", "h", DeliveryState::kInFlight);
  const std::string deferred = Key("webhook", "acme", "h", DeliveryState::kDeferred);
  table.Apply(Deltas({{queued, 1}}));
  std::atomic<bool> done{false};
  std::atomic<int64_t> most{0};
  std::thread reader([&] {
    while (!done) {
      for (const GroupCounts& g : table.Groups()) {
        int64_t sum = 0;
        for (int64_t n : g.counts) {
          sum += n;
        }
        most = std::max<int64_t>(most, sum);
      }
    }
  });
  for (int i = 0; i < 20'000; ++i) {
    // The lease (memory only), then the deferred outcome (durable and memory at once), then a
    // replay back to queued.
    table.Apply(Deltas({{queued, -1}, {in_flight, 1}}));
    const CounterDeltas durable = Deltas({{queued, -1}, {deferred, 1}});
    const CounterDeltas memory = Deltas({{in_flight, -1}, {queued, 1}});
    table.Apply({&durable, &memory});
    table.Apply(Deltas({{deferred, -1}, {queued, 1}}));
  }
  done = true;
  reader.join();
  EXPECT_EQ(most, 1);
}

}  // namespace
}  // namespace egress::storage
