// Connections as a scheduled resource (docs/pacing.md, "Connections"), end to end: a real
// Service (RocksDB on disk, curl transport) and the real simulator over loopback. Tenant A's
// slow webhooks hold every connection of the shared host; tenant B's, queued later to the same
// host, get freed connections by round robin instead of waiting behind all of A's.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <thread>

#include <boost/asio/post.hpp>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "dispatcher/service/service.h"
#include "tests/support/http_client.h"
#include "tests/support/sim_process.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token";
constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr int kSlowHooks = 50;
constexpr int kSlowDeliveries = 3000;
constexpr int kFastDeliveries = 50;
constexpr int kHostConnections = 16;

class ConnectionFairnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status started = sim_.Start(SimWire::kHttp);
    ASSERT_TRUE(started.ok()) << started.ToString();
    json hooks = json::object();
    for (int i = 0; i < kSlowHooks; ++i) {
      hooks["slow" + std::to_string(i)] = {{"faults", {{"delay_ms", 300}}}};
    }
    json merged = sim_.Configure({{"hooks", hooks}});
    ASSERT_FALSE(merged.contains("error")) << merged.dump();
    ServiceOptions o;
    o.http.listen = {.host = "127.0.0.1", .port = 0};
    o.admin_token = kAdminToken;
    o.store.path = dir_.Sub("store");
    o.endpoints.webhook_ssrf.allow_private_networks = true;  // the receivers are on loopback
    o.transport.max_host_connections = kHostConnections;
    o.scheduler.pacing_margin = 0.05;
    o.budget_defaults.emplace_back(pacing::BudgetName::kTenantIntake,
                                   pacing::Budget{100'000, 1000, 100'000});
    o.credentials.push_back(
        {"acme", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}}});
    o.credentials.push_back(
        {"globex", {.name = "hooks", .platform = "webhook", .secrets = {kSecret}}});
    o.credentials.push_back(
        {"globex", {.name = "bot", .platform = "slack", .token = "xoxb-globex"}});
    o.endpoints.slack_base_url = sim_.BaseUrl();
    io_ = std::make_unique<boost::asio::io_context>();
    auto service = Service::Start(*io_, clock_, o);
    ASSERT_TRUE(service.has_value()) << service.error().ToString();
    service_ = std::move(*service);
    port_ = service_->endpoint().port();
    thread_ = std::thread([this] { io_->run(); });
  }

  void TearDown() override {
    if (!service_) {
      return;
    }
    std::promise<void> closed;
    boost::asio::post(*io_, [&] {
      service_->Shutdown(Millis(2000), [&](Status) {
        closed.set_value();
        io_->stop();
      });
    });
    closed.get_future().get();
    thread_.join();
    service_.reset();
  }

  json Webhook(const std::string& tenant, const std::string& hook, int n) {
    return {{"tenant", tenant},
            {"platform", "webhook"},
            {"destination", sim_.BaseUrl() + "/hooks/" + hook},
            {"credential", "hooks"},
            {"payload", {{"n", n}}}};
  }

  void PostBatch(const json& deliveries) {
    TestResponse r = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries/batch",
                                json{{"deliveries", deliveries}}.dump());
    ASSERT_EQ(r.status, 202) << r.body;
  }

  // The tenant's deliveries in flight (dispatched: on a connection or leased ahead), summed over
  // its destinations, and the requests on the host's connections and their capacity, as its
  // destinations report them.
  struct Load {
    int64_t in_flight = 0;
    int64_t on_connections = 0;
    int64_t capacity = 0;
  };
  Load InFlight(const std::string& tenant) {
    Load load;
    std::string cursor;
    do {
      json list = HttpCallAs(kAdminToken, port_, "GET",
                             "/v1/destinations?limit=1000&tenant=" + tenant +
                                 (cursor.empty() ? "" : "&cursor=" + cursor))
                      .Json();
      for (const json& d : list["destinations"]) {
        load.in_flight += d["in_flight"].get<int64_t>();
        if (d.contains("connections")) {
          load.on_connections = d["connections"]["in_flight"].get<int64_t>();
          load.capacity = d["connections"]["capacity"].get<int64_t>();
        }
      }
      cursor = list["next_cursor"].is_string() ? list["next_cursor"].get<std::string>() : "";
    } while (!cursor.empty());
    return load;
  }

  int64_t Accepted(const json& stats, const std::string& hook) {
    const json& dests = stats["destinations"];
    auto it = dests.find("hook:" + hook);
    return it == dests.end() ? 0 : (*it)["accepted"].get<int64_t>();
  }
  int64_t SlowAccepted(const json& stats) {
    int64_t sum = 0;
    for (int i = 0; i < kSlowHooks; ++i) {
      sum += Accepted(stats, "slow" + std::to_string(i));
    }
    return sum;
  }

  // Polls until `pred` holds; false after `timeout` (a liveness bound, not a speed one).
  bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    const SteadyTime until = clock_.Now() + timeout;
    while (clock_.Now() < until) {
      if (pred()) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pred();
  }

  TempDir dir_;
  SimProcess sim_;
  SystemClock clock_;
  std::unique_ptr<boost::asio::io_context> io_;
  std::unique_ptr<Service> service_;
  std::thread thread_;
  int port_ = 0;
};

// Verifies issue 15's fairness case: A's 3,000 slow webhooks (300 ms answers, 50 URLs on one
// host) queued first hold every connection; B's 50 to a fast URL on the same host are all
// delivered soon after being queued, each taking a freed connection in turn with A rather than
// after A's queue; and A uses every connection B does not, before and after B.
TEST_F(ConnectionFairnessTest, SlowTenantDoesNotStarveOthersOnSharedHost) {
  for (int batch = 0; batch < kSlowDeliveries / 500; ++batch) {
    json deliveries = json::array();
    for (int i = 0; i < 500; ++i) {
      const int n = batch * 500 + i;
      deliveries.push_back(Webhook("acme", "slow" + std::to_string(n % kSlowHooks), n));
    }
    PostBatch(deliveries);
  }
  // A fills the host: every connection, and no more; as many again leased ahead.
  ASSERT_TRUE(WaitFor([&] { return InFlight("acme").on_connections == kHostConnections; },
                      std::chrono::seconds(20)));
  EXPECT_EQ(InFlight("acme").capacity, kHostConnections);
  EXPECT_LE(InFlight("acme").in_flight, 2 * kHostConnections);

  const json before = sim_.Stats();
  json fast = json::array();
  for (int i = 0; i < kFastDeliveries; ++i) {
    fast.push_back(Webhook("globex", "fast", i));
  }
  const auto queued = clock_.Now();
  PostBatch(fast);
  json after;
  int64_t idle_samples = 0;  // samples with a connection unused while B was not done
  ASSERT_TRUE(WaitFor(
      [&] {
        after = sim_.Stats();
        if (Accepted(after, "fast") == kFastDeliveries) {
          return true;
        }
        // A keeps every connection B does not use (A has leased requests waiting for one).
        idle_samples += InFlight("acme").on_connections < kHostConnections - 4;
        return false;
      },
      std::chrono::seconds(30)))
      << "B delivered " << Accepted(after, "fast") << " of " << kFastDeliveries;
  const double seconds = std::chrono::duration<double>(clock_.Now() - queued).count();
  const int64_t slow_meanwhile = SlowAccepted(after) - SlowAccepted(before);
  std::printf("B: %d delivered in %.2f s of being queued; A meanwhile: %lld\n", kFastDeliveries,
              seconds, static_cast<long long>(slow_meanwhile));
  // Arrival order would have put B behind A's queue (16 of 50 in 16 s before the fix, A ~53/s:
  // thousands of A's meanwhile). Holding less, B wins every connection it waits for; its own
  // meter (webhook_destination, 50/s) makes ~1.05 s the floor. The issue asks for 2 s: the
  // bound is looser for a loaded machine (the figure is printed above).
  EXPECT_LT(seconds, 4.0);
  EXPECT_LE(slow_meanwhile, 4 * kFastDeliveries);
  EXPECT_LE(idle_samples, 2);
  // B is done: A takes every connection again (B never held one for long).
  EXPECT_TRUE(WaitFor([&] { return InFlight("acme").on_connections == kHostConnections; },
                      std::chrono::seconds(20)));
  EXPECT_EQ(InFlight("globex").in_flight, 0);
  EXPECT_EQ(after["totals"]["rate_limited"], 0);
}

// Listening sockets on 127.0.0.1 that never accept: the kernel completes each connection and
// takes the request, and no answer ever comes (a receiver that hangs).
class DeadReceivers {
 public:
  explicit DeadReceivers(int n) {
    for (int i = 0; i < n; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      socklen_t len = sizeof addr;
      if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
          ::listen(fd, 8) != 0 ||
          ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        if (fd >= 0) {
          ::close(fd);
        }
        continue;
      }
      fds_.push_back(fd);
      ports_.push_back(ntohs(addr.sin_port));
    }
  }
  ~DeadReceivers() {
    for (int fd : fds_) {
      ::close(fd);
    }
  }
  const std::vector<int>& ports() const { return ports_; }

 private:
  std::vector<int> fds_;
  std::vector<int> ports_;
};

// Verifies issue 37's case 3: tenant A's 300 receivers, each its own origin, never answer (their
// requests hold a connection each for the 15 s timeout); tenant B's Slack post, sent meanwhile,
// is delivered at once: A holds at most the total less its reserve (256 - 32), and B, under its
// share, takes one of the reserve. Before, A held all 256 and B waited 13.7 s for A's first
// timeout.
TEST_F(ConnectionFairnessTest, DeadReceiversOfOneTenantLeaveOthersConnections) {
  DeadReceivers dead(300);
  ASSERT_EQ(dead.ports().size(), 300u);
  json deliveries = json::array();
  for (int port : dead.ports()) {
    deliveries.push_back({{"tenant", "acme"},
                          {"platform", "webhook"},
                          {"destination", "http://127.0.0.1:" + std::to_string(port) + "/hook"},
                          {"credential", "hooks"},
                          {"payload", {{"n", port}}}});
  }
  PostBatch(deliveries);
  // A fills what it may of the total: its requests sit on connections that never answer.
  int64_t held = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        held = InFlight("acme").in_flight;
        return held >= 224;
      },
      std::chrono::seconds(10)))
      << "A holds " << held;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // A takes what more it may
  held = InFlight("acme").in_flight;
  EXPECT_EQ(held, 224) << "A's part of the total: 256 less the reserve";

  const auto posted = clock_.Now();
  TestResponse r = HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries",
                              json{{"tenant", "globex"},
                                   {"platform", "slack"},
                                   {"destination", "C0123456789"},
                                   {"credential", "bot"},
                                   {"payload", {{"text", "while A's receivers hang"}}}}
                                  .dump());
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.Json()["id"];
  std::string state;
  ASSERT_TRUE(WaitFor(
      [&] {
        state = HttpCallAs(kAdminToken, port_, "GET", "/v1/deliveries/" + id).Json()["state"];
        return state == "delivered";
      },
      std::chrono::seconds(14)))
      << state;
  const double seconds = std::chrono::duration<double>(clock_.Now() - posted).count();
  std::printf("B's Slack post delivered %.3f s after it was posted; A holds %lld\n", seconds,
              static_cast<long long>(held));
  // The issue asks for 0.5 s; the bound is looser for a loaded machine (the figure is printed
  // above), and far below A's 15 s timeout, which is what B waited for before.
  EXPECT_LT(seconds, 3.0);
}

}  // namespace
}  // namespace egress::service
