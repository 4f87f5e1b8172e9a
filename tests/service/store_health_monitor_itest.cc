// StoreHealthMonitor over an in-memory store made unhealthy on request, with millisecond
// intervals and the loop run in real time (its timers are real): it notices the fault, tries
// Recover with a back-off until it succeeds, and reports both changes once.

#include <chrono>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "dispatcher/service/store_health_monitor.h"
#include "tests/support/memory_queue_store.h"

namespace egress::service {
namespace {

// Verifies that a store turning unhealthy is reported once (on_change(false), the gauge 0, its
// reason kept), that failing recoveries are retried until one succeeds, and that the recovery is
// reported once (on_change(true), the gauge 1).
TEST(StoreHealthMonitorTest, ReportsTheFaultAndRecoversWithBackOff) {
  boost::asio::io_context io;
  storage::MemoryQueueStore store;
  Metrics metrics;
  std::vector<bool> changes;
  StoreHealthMonitor monitor(
      io, io.get_executor(), store, metrics,
      [&](bool healthy) {
        changes.push_back(healthy);
        if (!healthy) {
          EXPECT_EQ(metrics.Value(GaugeId::kStoreHealthy), 0);
        }
      },
      {.check_every = Millis(1), .first_retry = Millis(1), .max_retry = Millis(4)});
  monitor.Start();
  io.run_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(monitor.healthy());
  EXPECT_EQ(metrics.Value(GaugeId::kStoreHealthy), 1);
  EXPECT_TRUE(changes.empty());

  store.MakeUnhealthy("no_space", 3);
  monitor.Check();
  EXPECT_FALSE(monitor.healthy());
  EXPECT_EQ(monitor.health().reason, "no_space");
  EXPECT_EQ(monitor.health().during, "write");
  for (int i = 0; i < 500 && !monitor.healthy(); ++i) {  // a liveness bound: 5 s
    io.restart();
    io.run_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(monitor.healthy());
  EXPECT_TRUE(store.Health().healthy);
  EXPECT_EQ(changes, (std::vector<bool>{false, true}));
  EXPECT_EQ(metrics.Value(GaugeId::kStoreHealthy), 1);
  monitor.Stop();
  io.restart();
  io.run_for(std::chrono::milliseconds(5));
}

}  // namespace
}  // namespace egress::service
