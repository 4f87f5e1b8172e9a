#pragma once

// Shared by the CLI integration tests: a store filled with known deliveries, and running the
// real relay-egress binary against it.

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dispatcher/base/clock.h"
#include "storage/rocks_queue_store.h"
#include "tests/support/child_process.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace egress {

class CliTest : public ::testing::Test {
 protected:
  static constexpr const char* kDestA = "http://127.0.0.1:1/a";
  static constexpr const char* kDestB = "http://127.0.0.1:1/b";

  std::string StoreDir() const { return dir_.Sub("store"); }

  // Writes `queued` queued, `dead` dead (http_404) deliveries for acme at kDestA and
  // `deferred` deferred (budget:webhook_destination, due in an hour) for beta at kDestB.
  // Ids are appended to the vectors in enqueue order.
  void FillStore(int queued, int dead, int deferred) {
    const int64_t now = ToUnixMillis(SystemClock().WallNow());
    auto store = storage::OpenRocksQueueStore({.path = StoreDir()}, now);
    ASSERT_TRUE(store) << store.error().ToString();
    auto add = [&](const char* tenant, const char* dest) {
      storage::NewDelivery d{.tenant = tenant,
                             .platform = "webhook",
                             .destination = dest,
                             .credential = "hooks",
                             .payload = R"({"text":"hi"})"};
      auto r = (*store)->Enqueue(d, now);
      EXPECT_TRUE(r) << r.error().ToString();
      return r ? r->id : std::string();
    };
    for (int i = 0; i < queued; ++i) {
      queued_.push_back(add("acme", kDestA));
    }
    for (int i = 0; i < dead; ++i) {
      dead_.push_back(add("acme", kDestA));
      storage::StateChange c{.to = storage::DeliveryState::kDead, .at_ms = now};
      c.reason = "http_404";
      c.attempt = storage::Attempt{.at_ms = now - 5000,
                                   .duration_ms = 12,
                                   .http_status = 404,
                                   .platform_error = "not_found",
                                   .rate_limit_headers = {{"x-ratelimit-remaining", "3"}}};
      ASSERT_TRUE((*store)->Apply(dead_.back(), c));
    }
    for (int i = 0; i < deferred; ++i) {
      deferred_.push_back(add("beta", kDestB));
      storage::StateChange c{.to = storage::DeliveryState::kDeferred, .at_ms = now};
      c.next_attempt_ms = now + 3'600'000;
      c.reason = "budget:webhook_destination";
      ASSERT_TRUE((*store)->Apply(deferred_.back(), c));
    }
    ASSERT_TRUE((*store)->Close().ok());
  }

  // Writes one queued delivery for acme at kDestA created at each of `created_ms`, in order;
  // ids go to queued_.
  void FillStoreAt(const std::vector<int64_t>& created_ms) {
    auto store = storage::OpenRocksQueueStore({.path = StoreDir()}, created_ms.front());
    ASSERT_TRUE(store) << store.error().ToString();
    for (int64_t at : created_ms) {
      storage::NewDelivery d{.tenant = "acme",
                             .platform = "webhook",
                             .destination = kDestA,
                             .credential = "hooks",
                             .payload = R"({"text":"hi"})"};
      auto r = (*store)->Enqueue(d, at);
      ASSERT_TRUE(r) << r.error().ToString();
      queued_.push_back(r->id);
    }
    ASSERT_TRUE((*store)->Close().ok());
  }

  // relay-egress ARGS... plus the connection flags of this test.
  CommandOutput Cli(std::vector<std::string> args) {
    args.insert(args.end(), connection_.begin(), connection_.end());
    return RunCommand(BuildDir() + "/relay-egress", args);
  }

  // Parses every stdout line as JSON.
  static std::vector<nlohmann::json> JsonLines(const CommandOutput& o) {
    std::vector<nlohmann::json> out;
    for (const std::string& line : o.Lines()) {
      out.push_back(nlohmann::json::parse(line, nullptr, false));
      EXPECT_TRUE(out.back().is_object()) << line;
    }
    return out;
  }

  TempDir dir_;
  std::vector<std::string> connection_;
  std::vector<std::string> queued_, dead_, deferred_;
};

inline constexpr char kCliAdminToken[] = "operator-secret-token-0123456789";
// Tenant beta's API key in the service's config.
inline constexpr char kBetaApiKey[] = "beta-cli-api-key-0123456789";

// The CLI against a running `relay-egress serve` (a child process) on the filled store, reached
// with the admin token (--token-file, as an operator should).
class CliServiceTest : public CliTest {
 protected:
  // Fills the store, then starts the service on it. Only dead and deferred-for-an-hour
  // deliveries, so the service leaves them alone until the CLI says otherwise.
  void Start(int dead, int deferred) {
    FillStore(0, dead, deferred);
    config_ = dir_.Sub("relay-egress.toml");
    std::ofstream(config_) << "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << StoreDir()
                           << "\"\nadmin_token = \"" << kCliAdminToken << "\"\n"
                           << "[platforms.webhook]\nallow_private_networks = true\n"
                           << "[tenants.acme.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
                           << "[tenants.beta]\napi_keys = [\"" << kBetaApiKey << "\"]\n"
                           << "[tenants.beta.credentials.hooks]\nplatform = \"webhook\"\n"
                           << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
    port_ = service_.Start(
        BuildDir() + "/relay-egress",
        {"serve", "--config", config_, "--profiles-dir", SourceDir() + "/config/profiles"});
    ASSERT_NE(port_, 0) << service_.error();
    const std::string token_file = dir_.Sub("admin.token");
    std::ofstream(token_file) << kCliAdminToken << "\n";
    connection_ = {"--server", ServerUrl(), "--token-file", token_file};
  }

  std::string ServerUrl() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::string config_;
  ChildProcess service_;
  int port_ = 0;
};

}  // namespace egress
