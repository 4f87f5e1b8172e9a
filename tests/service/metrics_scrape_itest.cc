// GET /metrics of a real relay-egress process: a scrape alone, as the first call after a restart,
// shows the true queue depths of the backlog the store holds (from the store's counters), and the
// exposition passes `promtool check metrics` (Debian's prometheus package; ./dev installs it).

#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "dispatcher/service/metrics.h"
#include "dispatcher/service/service.h"
#include "tests/support/child_process.h"
#include "tests/support/gunzip.h"
#include "tests/support/http_client.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";
constexpr int kBacklog = 20;

// The value of the series `series` (name and labels as rendered), -1 when absent.
double SeriesValue(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) {
    return -1;
  }
  return std::stod(text.substr(at + series.size() + 2));
}

class MetricsScrapeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.Sub("relay-egress.toml");
    // Every delivery goes to a closed loopback port: each attempt fails and is retried later, so
    // the backlog stays at kBacklog deliveries whatever the loop does meanwhile.
    std::ofstream(config_) << "[server]\nadmin_token = \"" << kAdminToken
                           << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir_.Sub("store")
                           << "\"\n"
                           << "[platforms.webhook]\nallow_private_networks = true\n"
                           << "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
  }

  int StartService(ChildProcess& p) {
    return p.Start(BuildDir() + "/relay-egress", {"serve", "--config", config_, "--profiles-dir",
                                                  SourceDir() + "/config/profiles"});
  }

  std::string Scrape(int port) {
    TestResponse r = HttpCallAs(kAdminToken, port, "GET", "/metrics");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  }

  // Runs `promtool check metrics` on `text`; its complaints, empty when it passes.
  std::string Promtool(const std::string& text) {
    const std::string file = dir_.Sub("scrape.txt");
    std::ofstream(file) << text;
    CommandOutput out = RunCommand("/bin/sh", {"-c", "promtool check metrics < \"$0\"", file});
    if (out.exit_code == 0) {
      return "";
    }
    return "exit " + std::to_string(out.exit_code) + ": " + out.out + out.err;
  }

  TempDir dir_;
  std::string config_;
};

// Verifies the done-when: the first call after a restart, GET /metrics, shows the
// backlog the store holds, service-wide and per tenant and platform; promtool accepts the text.
TEST_F(MetricsScrapeTest, FirstScrapeAfterRestartShowsTheStoredBacklog) {
  {
    ChildProcess service;
    const int port = StartService(service);
    ASSERT_NE(port, 0) << service.error();
    json items = json::array();
    for (int i = 0; i < kBacklog; ++i) {
      items.push_back({{"tenant", "acme"},
                       {"platform", "webhook"},
                       {"destination", "http://127.0.0.1:9/hooks/" + std::to_string(i % 2)},
                       {"credential", "hooks"},
                       {"payload", {{"n", i}}}});
    }
    TestResponse r = HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries/batch",
                                json{{"deliveries", items}}.dump());
    ASSERT_EQ(r.status, 202) << r.body;
    const int status = service.Signal(SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status));
  }
  ChildProcess service;
  const int port = StartService(service);
  ASSERT_NE(port, 0) << service.error();
  const std::string text = Scrape(port);
  const double queued = SeriesValue(text, "relay_egress_queue_depth{state=\"queued\"}");
  const double in_flight = SeriesValue(text, "relay_egress_queue_depth{state=\"in_flight\"}");
  const double deferred = SeriesValue(text, "relay_egress_queue_depth{state=\"deferred\"}");
  ASSERT_GE(queued, 0) << text;
  ASSERT_GE(in_flight, 0) << text;
  ASSERT_GE(deferred, 0) << text;
  EXPECT_EQ(queued + in_flight + deferred, kBacklog) << text;
  EXPECT_EQ(SeriesValue(text, "relay_egress_queue_depth{state=\"delivered\"}"), 0) << text;
  double tenant_total = 0;
  for (const char* state : {"queued", "in_flight", "deferred"}) {
    const double v =
        SeriesValue(text, std::string("relay_egress_tenant_queue_depth{tenant=\"acme\","
                                      "platform=\"webhook\",state=\"") +
                              state + "\"}");
    ASSERT_GE(v, 0) << state << "\n" << text;
    tenant_total += v;
  }
  EXPECT_EQ(tenant_total, kBacklog) << text;
  EXPECT_NE(text.find("relay_egress_build_info{version=\""), std::string::npos) << text;
  EXPECT_EQ(Promtool(text), "");

  // Once attempts have failed, the scrape shows their responses, the oldest deferral and the
  // budget units the attempts took (generous deadline: liveness only).
  std::string later;
  for (int waited = 0; waited < 30'000; waited += 100) {
    later = Scrape(port);
    // All three: the stored backlog holds deferrals before any attempt of this start has
    // failed, and an attempt takes its budget units before its response is counted.
    if (SeriesValue(later,
                    "relay_egress_oldest_deferral_age_seconds{tenant=\"acme\","
                    "platform=\"webhook\"}") >= 0 &&
        SeriesValue(later,
                    "relay_egress_platform_responses_total{platform=\"webhook\","
                    "code_class=\"error\"}") > 0 &&
        SeriesValue(later,
                    "relay_egress_budget_units_total{tenant=\"acme\","
                    "budget=\"tenant_egress\"}") > 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(SeriesValue(later,
                        "relay_egress_oldest_deferral_age_seconds{tenant=\"acme\","
                        "platform=\"webhook\"}"),
            0)
      << later;
  EXPECT_GT(SeriesValue(later,
                        "relay_egress_platform_responses_total{platform=\"webhook\","
                        "code_class=\"error\"}"),
            0)
      << later;
  EXPECT_GT(SeriesValue(later,
                        "relay_egress_budget_units_total{tenant=\"acme\","
                        "budget=\"webhook_destination\"}"),
            0)
      << later;
  EXPECT_GT(SeriesValue(later,
                        "relay_egress_budget_utilization_ratio{tenant=\"acme\","
                        "budget=\"tenant_egress\"}"),
            0)
      << later;
  EXPECT_EQ(Promtool(later), "");
  // Every declared family, kept or collected, is in the text once: its TYPE line, one.
  auto type_lines = [&later](std::string_view name) {
    const std::string line = "# TYPE " + std::string(name) + " ";
    int n = 0;
    for (size_t at = later.find(line); at != std::string::npos; at = later.find(line, at + 1)) {
      ++n;
    }
    return n;
  };
  for (int i = 0; i <= static_cast<int>(service::CounterId::kMaxValue); ++i) {
    EXPECT_EQ(type_lines(service::Metrics::Name(static_cast<service::CounterId>(i))), 1) << i;
  }
  for (int i = 0; i <= static_cast<int>(service::GaugeId::kMaxValue); ++i) {
    EXPECT_EQ(type_lines(service::Metrics::Name(static_cast<service::GaugeId>(i))), 1) << i;
  }
  for (int i = 0; i <= static_cast<int>(service::HistogramId::kMaxValue); ++i) {
    EXPECT_EQ(type_lines(service::Metrics::Name(static_cast<service::HistogramId>(i))), 1) << i;
  }
  const int status = service.Signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Verifies the rule: a hundred times the text's CPU time, from 1 s to 10 s.
TEST(MetricsTextKeptTest, AHundredTimesItsCpuFromOneToTenSeconds) {
  using std::chrono::milliseconds;
  EXPECT_EQ(service::Service::MetricsTextKept(milliseconds(0)), milliseconds(1000));
  EXPECT_EQ(service::Service::MetricsTextKept(milliseconds(3)), milliseconds(1000));
  EXPECT_EQ(service::Service::MetricsTextKept(milliseconds(42)), milliseconds(4200));
  EXPECT_EQ(service::Service::MetricsTextKept(milliseconds(100)), milliseconds(10'000));
  EXPECT_EQ(service::Service::MetricsTextKept(milliseconds(900)), milliseconds(10'000));
}

// Verifies how long a text is answered: a scrape right after a text gets the same text with
// its Age; the next text says how long the first was kept (a text of one tenant takes well under
// 10 ms of CPU, so 1 s; from 1 to 10 s under a slow build) and that it was begun at least that
// long after the first.
TEST_F(MetricsScrapeTest, ATextIsAnsweredUntilItsTimeAndTheNextSaysHowLong) {
  ChildProcess service;
  const int port = StartService(service);
  ASSERT_NE(port, 0) << service.error();
  const std::string kept = "relay_egress_metrics_text_kept_seconds";
  const std::string made = "relay_egress_metrics_text_made_timestamp_seconds";
  TestResponse first = HttpCallAs(kAdminToken, port, "GET", "/metrics");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.Header("age"), "0");
  EXPECT_EQ(SeriesValue(first.body, kept), -1) << "no text was made before this one";
  EXPECT_GT(SeriesValue(first.body, made), 1.7e9);
  TestResponse again = HttpCallAs(kAdminToken, port, "GET", "/metrics");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_TRUE(again.body == first.body) << "a text is answered for at least a second";
  EXPECT_FALSE(again.Header("age").empty());
  TestResponse later;
  for (int waited = 0; waited < 15'000; waited += 100) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    later = HttpCallAs(kAdminToken, port, "GET", "/metrics");
    ASSERT_EQ(later.status, 200) << later.body;
    if (SeriesValue(later.body, made) != SeriesValue(first.body, made)) {
      break;
    }
  }
  const double first_kept = SeriesValue(later.body, kept);
  EXPECT_GE(first_kept, 1) << "a new text within 15 s";
  EXPECT_LE(first_kept, 10);
  EXPECT_GE(SeriesValue(later.body, made) - SeriesValue(first.body, made), first_kept - 0.05);
  EXPECT_EQ(later.Header("age"), "0");
  EXPECT_EQ(Promtool(later.body), "");
  const int status = service.Signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Verifies the gzip coding: a scrape that accepts gzip gets the kept text as gzip
// (Content-Encoding: gzip), inflating to the very text a scrape that does not accept it gets,
// made for the first scrape that asks for it; scrapes that ask at once all get it; "gzip;q=0"
// refuses it. Every answer says it varies with Accept-Encoding.
TEST_F(MetricsScrapeTest, ATextIsAnsweredAsGzipToAScrapeThatAcceptsIt) {
  ChildProcess service;
  const int port = StartService(service);
  ASSERT_NE(port, 0) << service.error();
  const std::string made = "relay_egress_metrics_text_made_timestamp_seconds";
  const std::vector<std::pair<std::string, std::string>> gzip = {{"Accept-Encoding", "gzip"}};
  // The text of an answer that must be gzip, inflated ("" when it is not).
  const auto inflated = [](const TestResponse& r) -> std::string {
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.Header("vary"), "Accept-Encoding");
    EXPECT_EQ(r.Header("content-encoding"), "gzip");
    std::optional<std::string> text = Gunzip(r.body);
    EXPECT_TRUE(text.has_value()) << "one whole gzip member";
    EXPECT_LT(r.body.size(), text ? text->size() : 0);
    return text.value_or("");
  };
  bool compared = false;
  for (int tries = 0; tries < 10 && !compared; ++tries) {
    TestResponse plain = HttpCallAs(kAdminToken, port, "GET", "/metrics");
    ASSERT_EQ(plain.status, 200) << plain.body;
    EXPECT_EQ(plain.Header("content-encoding"), "");
    EXPECT_EQ(plain.Header("vary"), "Accept-Encoding");
    const std::string text = inflated(HttpCallAs(kAdminToken, port, "GET", "/metrics", "", gzip));
    ASSERT_GT(SeriesValue(text, made), 1.7e9);
    // The same text unless the next one came between them (a slow machine: asked again).
    if (SeriesValue(text, made) == SeriesValue(plain.body, made)) {
      EXPECT_TRUE(text == plain.body) << "the gzip inflates to the text itself";
      EXPECT_EQ(Promtool(text), "");
      compared = true;
    }
  }
  EXPECT_TRUE(compared) << "never the same text twice in ten tries";
  TestResponse refused = HttpCallAs(kAdminToken, port, "GET", "/metrics", "",
                                    {{"Accept-Encoding", "gzip;q=0, identity"}});
  ASSERT_EQ(refused.status, 200) << refused.body;
  EXPECT_EQ(refused.Header("content-encoding"), "");
  EXPECT_EQ(refused.Header("vary"), "Accept-Encoding");
  // Four scrapes at once once the text's time (1 s: a text of one tenant takes well under 10 ms)
  // is over: the first has a text made, the others wait for it, and for its gzip. Each gets it.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  std::vector<std::thread> scrapers;
  std::vector<TestResponse> answers(4);
  for (TestResponse& answer : answers) {
    scrapers.emplace_back(
        [&] { answer = HttpCallAs(kAdminToken, port, "GET", "/metrics", "", gzip); });
  }
  for (std::thread& t : scrapers) {
    t.join();
  }
  for (const TestResponse& answer : answers) {
    EXPECT_GT(SeriesValue(inflated(answer), made), 1.7e9);
  }
  const int status = service.Signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// Verifies the text gathered in steps (kGatherStep items each): with 1,200 tenants holding work
// (3,600 queue-depth series, more than one step), a scrape shows every tenant's depths, summing
// to the backlog; once one tenant's only delivery is cancelled, a scrape a second later no
// longer shows that tenant's series (collected afresh), and still shows the others'.
TEST_F(MetricsScrapeTest, ManyTenantsAreRefreshedInStepsAndADrainedOneGoes) {
  constexpr int kTenants = 1200;
  {
    std::ofstream config(config_, std::ios::app);
    for (int t = 0; t < kTenants; ++t) {
      config << "[tenants.t" << t << ".credentials.hooks]\nplatform = \"webhook\"\n"
             << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
    }
  }
  ChildProcess service;
  const int port = StartService(service);
  ASSERT_NE(port, 0) << service.error();
  std::string first_id;
  for (int from = 0; from < kTenants; from += 600) {
    json items = json::array();
    for (int t = from; t < from + 600; ++t) {
      items.push_back({{"tenant", "t" + std::to_string(t)},
                       {"platform", "webhook"},
                       {"destination", "http://127.0.0.1:9/hooks"},
                       {"credential", "hooks"},
                       {"payload", {{"n", t}}}});
    }
    TestResponse r = HttpCallAs(kAdminToken, port, "POST", "/v1/deliveries/batch",
                                json{{"deliveries", items}}.dump());
    ASSERT_EQ(r.status, 202) << r.body;
    if (from == 0) {
      first_id = r.Json()["results"][0].value("id", "");
    }
  }
  ASSERT_FALSE(first_id.empty());
  auto tenant_depth = [](const std::string& text, const std::string& tenant) {
    double sum = 0;
    for (const char* state : {"queued", "in_flight", "deferred"}) {
      const double v = SeriesValue(text, "relay_egress_tenant_queue_depth{tenant=\"" + tenant +
                                             "\",platform=\"webhook\",state=\"" + state + "\"}");
      if (v < 0) {
        return -1.0;
      }
      sum += v;
    }
    return sum;
  };
  const std::string text = Scrape(port);
  double total = 0;
  for (int t = 0; t < kTenants; ++t) {
    const double depth = tenant_depth(text, "t" + std::to_string(t));
    ASSERT_EQ(depth, 1) << "t" << t;
    total += depth;
  }
  EXPECT_EQ(total, kTenants);
  EXPECT_EQ(Promtool(text), "");

  // Cancel t0's delivery (it may be in flight for a moment: retried until it is not).
  TestResponse cancelled;
  for (int tries = 0; tries < 200; ++tries) {
    cancelled = HttpCallAs(kAdminToken, port, "DELETE", "/v1/deliveries/" + first_id);
    if (cancelled.status == 200) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  std::string later;
  for (int waited = 0; waited < 10'000; waited += 250) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    later = Scrape(port);
    if (tenant_depth(later, "t0") < 0) {
      break;
    }
  }
  EXPECT_EQ(later.find("relay_egress_tenant_queue_depth{tenant=\"t0\","), std::string::npos);
  EXPECT_EQ(tenant_depth(later, "t1"), 1);
  EXPECT_EQ(tenant_depth(later, "t" + std::to_string(kTenants - 1)), 1);

  // Scraped back to back from 4 clients, the text (~0.5 MB here) is answered up to
  // kMetricsBytesPerSecond (32 MiB a second), then 429 too_many_scrapes with Retry-After.
  std::atomic<bool> refused{false};
  std::atomic<int> answered{0};
  std::string refusal;
  std::mutex refusal_mu;
  std::vector<std::thread> scrapers;
  for (int c = 0; c < 4; ++c) {
    scrapers.emplace_back([&] {
      for (int i = 0; i < 2000 && !refused; ++i) {
        TestResponse r = HttpCallAs(kAdminToken, port, "GET", "/metrics");
        if (r.status == 429) {
          std::lock_guard lock(refusal_mu);
          refusal = r.Header("retry-after") + " " + r.body;
          refused = true;
        } else if (r.status == 200) {
          ++answered;
        }
      }
    });
  }
  for (std::thread& t : scrapers) {
    t.join();
  }
  EXPECT_TRUE(refused) << answered << " answered, none refused";
  EXPECT_GT(answered, 10);
  EXPECT_NE(refusal.find("too_many_scrapes"), std::string::npos) << refusal;
  EXPECT_FALSE(refusal.starts_with(" ")) << "no Retry-After: " << refusal;
  const int status = service.Signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace egress
