// A real relay-egress process with log_level "debug": a W3C traceparent given at intake is
// validated, stored with the delivery and sent on its webhook request; every attempt is a debug
// event (id, redacted destination, status, duration, deferral) and a dead letter an info event.

#include <signal.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/loopback_http_server.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";
constexpr char kTrace[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

class TraceAndLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = dir_.Sub("relay-egress.toml");
    log_ = dir_.Sub("service.log");
    std::ofstream(config_) << "[server]\nadmin_token = \"" << kAdminToken
                           << "\"\nlisten = \"127.0.0.1:0\"\nlog_level = \"debug\"\n"
                           << "log_format = \"json\"\ndata_dir = \"" << dir_.Sub("store") << "\"\n"
                           << "[platforms.webhook]\nallow_private_networks = true\n"
                           << "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
    // The service's stderr (its event log) goes to log_; exec keeps the pid the service's.
    port_ = service_.Start(
        "/bin/sh", {"-c",
                    "exec \"$0\" serve --config \"$1\" --profiles-dir "
                    "\"$2\" 2>\"$3\"",
                    BuildDir() + "/relay-egress", config_, SourceDir() + "/config/profiles", log_});
    ASSERT_NE(port_, 0) << service_.error();
  }

  TestResponse Post(const json& body, std::vector<std::pair<std::string, std::string>> headers) {
    headers.emplace_back("Content-Type", "application/json");
    return HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries", body.dump(), headers);
  }

  json Hook(const std::string& url) {
    return {{"tenant", "acme"},
            {"platform", "webhook"},
            {"destination", url},
            {"credential", "hooks"},
            {"payload", {{"event", "x"}}}};
  }

  // The JSON lines of the event log with event `name`.
  std::vector<json> Events(const std::string& name) {
    std::ifstream in(log_);
    std::vector<json> out;
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (j.is_object() && j.value("event", "") == name) {
        out.push_back(std::move(j));
      }
    }
    return out;
  }

  TempDir dir_;
  std::string config_, log_;
  ChildProcess service_;
  int port_ = 0;
};

// Verifies that malformed traceparent headers are 400 naming the field, and nothing is stored.
TEST_F(TraceAndLogTest, HostileTraceparentIsA400) {
  const std::string url = "http://127.0.0.1:9/hooks";
  const std::vector<std::string> bads = {
      "",
      "00",
      "garbage",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      std::string(5000, 'a')};
  for (const std::string& bad : bads) {
    TestResponse r = Post(Hook(url), {{"traceparent", bad}});
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_EQ(r.Json().value("field", ""), "traceparent") << r.body;
  }
  TestResponse batch =
      HttpCallAs(kAdminToken, port_, "POST", "/v1/deliveries/batch",
                 json{{"deliveries", {Hook(url)}}}.dump(), {{"traceparent", "nonsense"}});
  EXPECT_EQ(batch.status, 400) << batch.body;
  json stats = HttpCallAs(kAdminToken, port_, "GET", "/v1/stats").Json();
  EXPECT_EQ(stats["queued"].get<int>() + stats["in_flight"].get<int>() +
                stats["deferred"].get<int>() + stats["dead"].get<int>(),
            0)
      << stats.dump();
  // A later version is read as version 00 (W3C Trace Context, section 4.3).
  TestResponse later = Post(Hook(url), {{"traceparent",
                                         "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-"
                                         "what-comes-next"}});
  ASSERT_EQ(later.status, 202) << later.body;
  json stored = HttpCallAs(kAdminToken, port_, "GET",
                           "/v1/deliveries/" + later.Json()["id"].get<std::string>())
                    .Json();
  EXPECT_EQ(stored.value("traceparent", ""), kTrace) << stored.dump();
}

// Verifies the traceparent's way to the receiver and the attempt and dead-letter events.
TEST_F(TraceAndLogTest, TraceparentReachesTheReceiverAndAttemptsAreLogged) {
  std::mutex mu;
  std::vector<std::string> seen;  // traceparent of each request to /ok
  LoopbackHttpServer receiver([&](const LoopbackHttpServer::Request& r) {
    LoopbackHttpServer::Response res;
    if (r.target.starts_with("/ok")) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(r.Header("traceparent"));
    } else if (r.target.starts_with("/retry")) {
      res.status = 503;  // transient: deferred for a retry
    } else {
      res.status = 400;  // permanent: the delivery is dead at once
    }
    return res;
  });
  TestResponse ok = Post(Hook(receiver.Url("/ok?sig=topsecret123")), {{"traceparent", kTrace}});
  ASSERT_EQ(ok.status, 202) << ok.body;
  const std::string ok_id = ok.Json()["id"];
  TestResponse bad = Post(Hook(receiver.Url("/bad?sig=topsecret123")), {});
  ASSERT_EQ(bad.status, 202) << bad.body;
  const std::string bad_id = bad.Json()["id"];
  TestResponse retry = Post(Hook(receiver.Url("/retry")), {});
  ASSERT_EQ(retry.status, 202) << retry.body;
  const std::string retry_id = retry.Json()["id"];
  json stats;
  for (int waited = 0; waited < 30'000; waited += 50) {
    stats = HttpCallAs(kAdminToken, port_, "GET", "/v1/stats").Json();
    if (stats.is_object() && stats["delivered"] == 1 && stats["dead"] == 1 &&
        stats["deferred"] == 1) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(stats["delivered"], 1) << stats.dump();
  ASSERT_EQ(stats["dead"], 1) << stats.dump();
  ASSERT_EQ(stats["deferred"], 1) << stats.dump();
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0], kTrace);
  }
  json record = HttpCallAs(kAdminToken, port_, "GET", "/v1/deliveries/" + ok_id).Json();
  EXPECT_EQ(record.value("traceparent", ""), kTrace) << record.dump();
  json untraced = HttpCallAs(kAdminToken, port_, "GET", "/v1/deliveries/" + bad_id).Json();
  EXPECT_FALSE(untraced.contains("traceparent")) << untraced.dump();

  const int status = service_.Signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::stringstream all;
  all << std::ifstream(log_).rdbuf();
  EXPECT_EQ(all.str().find("topsecret123"), std::string::npos) << "a URL secret was logged";

  const std::vector<json> attempts = Events("attempt");
  ASSERT_EQ(attempts.size(), 3u) << all.str();
  for (const json& a : attempts) {
    EXPECT_EQ(a.value("level", ""), "debug") << a.dump();
    EXPECT_TRUE(a.contains("duration_ms")) << a.dump();
    if (a.value("delivery", "") == ok_id) {
      EXPECT_EQ(a.value("status", 0), 200) << a.dump();
      EXPECT_EQ(a.value("outcome", ""), "delivered") << a.dump();
      EXPECT_EQ(a.value("traceparent", ""), kTrace) << a.dump();
      EXPECT_EQ(a.value("destination", ""), receiver.Url("/ok?sig=…")) << a.dump();
    } else if (a.value("delivery", "") == bad_id) {
      EXPECT_EQ(a.value("status", 0), 400) << a.dump();
      EXPECT_EQ(a.value("outcome", ""), "dead") << a.dump();
    } else {
      EXPECT_EQ(a.value("delivery", ""), retry_id) << a.dump();
      EXPECT_EQ(a.value("status", 0), 503) << a.dump();
      EXPECT_EQ(a.value("outcome", ""), "deferred") << a.dump();
      EXPECT_FALSE(a.value("deferral", "").empty()) << a.dump();
    }
  }
  const std::vector<json> dead = Events("dead_letter");
  ASSERT_EQ(dead.size(), 1u) << all.str();
  EXPECT_EQ(dead[0].value("level", ""), "info");
  EXPECT_EQ(dead[0].value("delivery", ""), bad_id);
  EXPECT_EQ(dead[0].value("tenant", ""), "acme");
  EXPECT_FALSE(dead[0].value("reason", "").empty()) << dead[0].dump();
  EXPECT_EQ(dead[0].value("destination", ""), receiver.Url("/bad?sig=…")) << dead[0].dump();
}

}  // namespace
}  // namespace egress
