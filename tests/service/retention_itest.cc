// The service's retention runner end to end: a real Service over a RocksDB store written
// beforehand, a FakeClock for the wall time the purge reads, a short interval, and /metrics over
// loopback HTTP.

#include <chrono>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "dispatcher/service/service.h"
#include "storage/rocks_queue_store.h"
#include "tests/support/fake_clock.h"
#include "tests/support/http_client.h"
#include "tests/support/running_service.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using storage::DeliveryState;

constexpr int64_t kDay = 86'400'000;
constexpr char kAdminToken[] = "test-admin-token-0123456789";

// The value of one series in a /metrics text, or -1 when it is absent.
double SeriesValue(const std::string& text, const std::string& series) {
  for (size_t at = text.find(series + " "); at != std::string::npos;
       at = text.find(series + " ", at + 1)) {
    if (at == 0 || text[at - 1] == '\n') {
      return std::stod(text.substr(at + series.size() + 1));
    }
  }
  return -1;
}

// Verifies that the retention timer runs on its own: the first pass at start purges what has
// expired (a delivered record 8 days old) and keeps what has not (a dead one), later passes
// purge what expires while the service runs (the dead one once the clock passes 30 days), and
// /metrics shows relay_egress_purged_total{state}, the idempotency key counter and
// relay_egress_store_bytes.
TEST(RetentionServiceTest, TimerPurgesAndExportsMetrics) {
  TempDir dir;
  FakeClock clock;
  const int64_t t0 = ToUnixMillis(clock.WallNow());
  ServiceOptions o;
  o.http.listen = {.host = "127.0.0.1", .port = 0};
  o.admin_token = kAdminToken;
  o.store.path = dir.Sub("store");
  o.retention.interval = Millis(20);
  std::string delivered, dead;
  {
    auto store = storage::OpenRocksQueueStore(o.store, t0);
    ASSERT_TRUE(store) << store.error().ToString();
    storage::NewDelivery d{.tenant = "acme",
                           .platform = "webhook",
                           .destination = "http://127.0.0.1:1/h",
                           .credential = "hooks",
                           .payload = "{}",
                           .idempotency_key = "order-1"};
    delivered = (*store)->Enqueue(d, t0)->id;
    d.idempotency_key = "order-2";
    dead = (*store)->Enqueue(d, t0)->id;
    ASSERT_TRUE((*store)->Apply(delivered, {.to = DeliveryState::kInFlight, .at_ms = t0}));
    ASSERT_TRUE((*store)->Apply(delivered, {.to = DeliveryState::kDelivered, .at_ms = t0}));
    ASSERT_TRUE(
        (*store)->Apply(dead, {.to = DeliveryState::kDead, .at_ms = t0, .reason = "http_404"}));
  }
  clock.Advance(Millis(8 * kDay));

  RunningService svc(clock);
  Status started = svc.Start(o);
  ASSERT_TRUE(started.ok()) << started.ToString();
  const int port = svc.port();

  // Polls /metrics until `done` holds (bounded: a failed wait fails the test).
  auto wait_for = [&](const std::function<bool(const std::string&)>& done) {
    std::string text;
    for (int waited = 0; waited < 20'000; waited += 20) {
      text = HttpCallAs(kAdminToken, port, "GET", "/metrics").body;
      if (done(text)) {
        return text;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "timed out; last /metrics:\n" << text;
    return text;
  };
  std::string text = wait_for([](const std::string& t) {
    return SeriesValue(t, "relay_egress_purged_total{state=\"delivered\"}") == 1 &&
           SeriesValue(t, "relay_egress_store_bytes") > 0;
  });
  EXPECT_EQ(SeriesValue(text, "relay_egress_purged_total{state=\"dead\"}"), 0);
  EXPECT_EQ(SeriesValue(text, "relay_egress_purged_total{state=\"cancelled\"}"), 0);
  // The dead delivery's key expired (24 hours after it died); its record stays for 30 days.
  EXPECT_EQ(SeriesValue(text, "relay_egress_idempotency_keys_expired_total"), 1);
  EXPECT_NE(text.find("# TYPE relay_egress_store_bytes gauge"), std::string::npos);
  EXPECT_EQ(HttpCallAs(kAdminToken, port, "GET", "/v1/deliveries/" + delivered).status, 404);
  EXPECT_EQ(HttpCallAs(kAdminToken, port, "GET", "/v1/deliveries/" + dead).status, 200);

  clock.Advance(Millis(23 * kDay));  // 31 days after the death
  wait_for([](const std::string& t) {
    return SeriesValue(t, "relay_egress_purged_total{state=\"dead\"}") == 1;
  });
  EXPECT_EQ(HttpCallAs(kAdminToken, port, "GET", "/v1/deliveries/" + dead).status, 404);
}

}  // namespace
}  // namespace egress::service
