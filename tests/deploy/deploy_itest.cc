// What deploy/ ships: the Prometheus alerts pass `promtool check rules` and their unit tests
// (`promtool test rules`), and every relay_egress_ metric the alerts and the Grafana dashboard
// query is one the service exposes. promtool comes with Debian's prometheus package (./dev
// installs it); without it these tests fail.

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "dispatcher/service/metrics.h"
#include "tests/support/child_process.h"
#include "tests/support/run_command.h"

namespace egress {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The metric names the exposition declares (# TYPE lines), with each histogram's series names.
std::set<std::string> ExposedNames() {
  std::string text = service::Metrics().Render();
  // With the families GET /metrics collects at each scrape, which Render leaves out.
  for (int i = 0; i <= static_cast<int>(service::CounterId::kMaxValue); ++i) {
    if (service::Metrics::IsCollected(static_cast<service::CounterId>(i))) {
      service::Metrics::AppendHead(text, static_cast<service::CounterId>(i));
    }
  }
  for (int i = 0; i <= static_cast<int>(service::GaugeId::kMaxValue); ++i) {
    if (service::Metrics::IsCollected(static_cast<service::GaugeId>(i))) {
      service::Metrics::AppendHead(text, static_cast<service::GaugeId>(i));
    }
  }
  std::set<std::string> names;
  static const std::regex kType("# TYPE (\\S+) (\\S+)");
  for (std::sregex_iterator it(text.begin(), text.end(), kType), end; it != end; ++it) {
    const std::string name = (*it)[1];
    names.insert(name);
    if ((*it)[2] == "histogram") {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        names.insert(name + suffix);
      }
    }
  }
  return names;
}

// The relay_egress_ names `text` mentions.
std::set<std::string> MentionedNames(const std::string& text) {
  std::set<std::string> names;
  static const std::regex kName("relay_egress_[a-z0-9_]+");
  for (std::sregex_iterator it(text.begin(), text.end(), kName), end; it != end; ++it) {
    names.insert(it->str());
  }
  return names;
}

CommandOutput Promtool(const std::vector<std::string>& args) {
  std::string command = "cd \"$0\" && exec promtool";
  for (size_t i = 0; i < args.size(); ++i) {
    command += " \"${" + std::to_string(i + 1) + "}\"";
  }
  std::vector<std::string> argv = {"-c", command, SourceDir() + "/deploy/prometheus"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand("/bin/sh", argv);
}

// Verifies that promtool accepts the rule file.
TEST(DeployPrometheusRulesTest, PassPromtoolCheckRules) {
  CommandOutput out = Promtool({"check", "rules", "alerts.yml"});
  EXPECT_EQ(out.exit_code, 0) << out.out << out.err;
}

// Verifies the alerts' behaviour on the series of alerts_test.yml (each alert fires when it
// should, and not when it should not).
TEST(DeployPrometheusRulesTest, PassTheirUnitTests) {
  CommandOutput out = Promtool({"test", "rules", "alerts_test.yml"});
  EXPECT_EQ(out.exit_code, 0) << out.out << out.err;
  EXPECT_NE(out.out.find("SUCCESS"), std::string::npos) << out.out << out.err;
}

// Verifies that the alerts ask only for metrics the service exposes.
TEST(DeployPrometheusRulesTest, QueryOnlyExposedMetrics) {
  const std::set<std::string> exposed = ExposedNames();
  const std::set<std::string> used =
      MentionedNames(ReadFile(SourceDir() + "/deploy/prometheus/alerts.yml"));
  EXPECT_GE(used.size(), 5u);
  for (const std::string& name : used) {
    EXPECT_TRUE(exposed.contains(name)) << name << " is not exposed";
  }
}

// Verifies that the dashboard is valid JSON, has its panels, and that every metric its queries
// name is one the service exposes.
TEST(DeployGrafanaDashboardTest, IsJsonAndQueriesOnlyExposedMetrics) {
  const nlohmann::json dash = nlohmann::json::parse(
      ReadFile(SourceDir() + "/deploy/grafana/relay-egress.json"), nullptr, false);
  ASSERT_FALSE(dash.is_discarded());
  ASSERT_TRUE(dash.contains("panels") && dash["panels"].is_array());
  EXPECT_GE(dash["panels"].size(), 6u);
  const std::set<std::string> exposed = ExposedNames();
  std::set<std::string> used;
  for (const nlohmann::json& panel : dash["panels"]) {
    ASSERT_TRUE(panel.contains("targets")) << panel.dump();
    for (const nlohmann::json& target : panel["targets"]) {
      const std::set<std::string> names = MentionedNames(target.value("expr", ""));
      EXPECT_FALSE(names.empty()) << target.dump();
      used.insert(names.begin(), names.end());
    }
  }
  for (const std::string& name : MentionedNames(dash["templating"].dump())) {
    used.insert(name);
  }
  for (const std::string& name : used) {
    EXPECT_TRUE(exposed.contains(name)) << name << " is not exposed";
  }
  // The issue's panels: throughput, deferrals by reason, 429s by platform, budget utilization
  // by tenant, queue depth, latency.
  for (const char* name :
       {"relay_egress_deliveries_accepted_total", "relay_egress_deferrals_total",
        "relay_egress_platform_responses_total", "relay_egress_budget_utilization_ratio",
        "relay_egress_tenant_queue_depth", "relay_egress_attempt_duration_seconds_bucket"}) {
    EXPECT_TRUE(used.contains(name)) << name;
  }
}

}  // namespace
}  // namespace egress
