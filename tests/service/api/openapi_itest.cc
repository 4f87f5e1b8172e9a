// docs/openapi.yaml against the service: its paths and methods are exactly the router's
// (RouteTable), every route of the table reaches a handler of a running service, and every
// request example in the spec is accepted (2xx) by it, over loopback.
//
// No YAML parser is among the project's libraries: the test converts the spec to JSON with
// Debian's python3-yaml (./dev installs it) and reads that with nlohmann.

#include <cctype>
#include <fstream>
#include <set>
#include <utility>

#include <gtest/gtest.h>

#include "dispatcher/service/api/handlers.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace egress {
namespace {

using nlohmann::json;

constexpr char kAdminToken[] = "test-admin-token-0123456789";
constexpr const char* kMethods[] = {"get", "put", "post", "delete", "patch", "head", "options"};

json LoadSpec() {
  const std::string script =
      "import json, sys, yaml\n"
      "json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout, default=str)\n";
  CommandOutput out =
      RunCommand("/usr/bin/python3", {"-c", script, SourceDir() + "/docs/openapi.yaml"});
  EXPECT_EQ(out.exit_code, 0) << out.err;
  return json::parse(out.out, nullptr, false);
}

std::string Upper(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return s;
}

// `path` with its {parameters} replaced by values a request can carry.
std::string Fill(std::string path) {
  const std::pair<const char*, const char*> values[] = {
      {"{id}", "0123456789abcdef"}, {"{tenant}", "acme"}, {"{name}", "example"}};
  for (const auto& [param, value] : values) {
    for (size_t at = path.find(param); at != std::string::npos; at = path.find(param)) {
      path.replace(at, std::string_view(param).size(), value);
    }
  }
  return path;
}

// Verifies that the spec is OpenAPI 3.1 and lists exactly the routes the router serves.
TEST(OpenApiTest, PathsAreTheRoutersRoutes) {
  const json spec = LoadSpec();
  ASSERT_TRUE(spec.is_object());
  EXPECT_EQ(spec.value("openapi", ""), "3.1.0");
  std::set<std::pair<std::string, std::string>> in_spec, in_router;
  for (const auto& [path, item] : spec["paths"].items()) {
    for (const char* method : kMethods) {
      if (item.contains(method)) {
        in_spec.emplace(Upper(method), path);
      }
    }
  }
  for (const service::RouteInfo& r : service::RouteTable()) {
    EXPECT_TRUE(in_router.emplace(std::string(r.method), std::string(r.path)).second)
        << r.method << " " << r.path << " twice";
  }
  EXPECT_EQ(in_spec, in_router);
  EXPECT_TRUE(spec["components"]["securitySchemes"].contains("tenantKey"));
  EXPECT_EQ(spec["components"]["securitySchemes"]["tenantKey"]["scheme"], "bearer");
  EXPECT_EQ(spec["components"]["securitySchemes"]["adminToken"]["name"], "X-Admin-Token");
  for (const char* header : {"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining",
                             "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"}) {
    EXPECT_TRUE(spec["components"]["responses"]["RateLimited"]["headers"].contains(header))
        << header;
  }
}

class OpenApiServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string config = dir_.Sub("relay-egress.toml");
    // Platform APIs point at a closed loopback port; the examples' webhook URLs are
    // documentation addresses the SSRF guard refuses before connecting: nothing leaves the host.
    std::ofstream(config) << "[server]\nadmin_token = \"" << kAdminToken
                          << "\"\nlisten = \"127.0.0.1:0\"\ndata_dir = \"" << dir_.Sub("store")
                          << "\"\n"
                          << "[platforms.slack]\nbase_url = \"http://127.0.0.1:9\"\n"
                          << "[platforms.discord]\nbase_url = \"http://127.0.0.1:9\"\n"
                          << "[platforms.line]\nbase_url = \"http://127.0.0.1:9\"\n"
                          << "[tenants.acme.credentials.signing]\nplatform = \"webhook\"\n"
                          << "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
                          << "[tenants.acme.credentials.bot]\nplatform = \"slack\"\n"
                          << "token = \"xoxb-test-0000\"\n";
    port_ = service_.Start(
        BuildDir() + "/relay-egress",
        {"serve", "--config", config, "--profiles-dir", SourceDir() + "/config/profiles"});
    ASSERT_NE(port_, 0) << service_.error();
  }

  TempDir dir_;
  ChildProcess service_;
  int port_ = 0;
};

// Verifies that every route of the table reaches a handler: never the router's 404 "no such
// endpoint" or a 405, whatever the handler then makes of the request.
TEST_F(OpenApiServiceTest, EveryRouteOfTheTableReachesAHandler) {
  for (const service::RouteInfo& r : service::RouteTable()) {
    const std::string body = r.method == "GET" || r.method == "DELETE" ? "" : "{}";
    TestResponse res =
        HttpCallAs(kAdminToken, port_, std::string(r.method), Fill(std::string(r.path)), body,
                   {{"Content-Type", "application/json"}});
    EXPECT_NE(res.status, 0) << r.method << " " << r.path << ": " << res.body;
    EXPECT_NE(res.status, 405) << r.method << " " << r.path << ": " << res.body;
    EXPECT_EQ(res.body.find("no such endpoint"), std::string::npos)
        << r.method << " " << r.path << ": " << res.body;
  }
  // And a method the table does not list is refused.
  EXPECT_EQ(HttpCallAs(kAdminToken, port_, "POST", "/v1/stats", "{}").status, 405);
  EXPECT_EQ(HttpCallAs(kAdminToken, port_, "PUT", "/v1/destinations", "{}").status, 405);
  for (const char* path : {"/healthz", "/readyz", "/metrics"}) {
    EXPECT_EQ(HttpCallAs(kAdminToken, port_, "POST", path, "{}").status, 405) << path;
  }
}

// Verifies that the service accepts (2xx) every request example of the spec, path by path in
// byte order (/v1/deliveries before /v1/destinations/enable, whose example names the Slack
// example's destination).
TEST_F(OpenApiServiceTest, AcceptsEveryRequestExample) {
  const json spec = LoadSpec();
  ASSERT_TRUE(spec.is_object());
  int sent = 0;
  for (const auto& [path, item] : spec["paths"].items()) {
    for (const char* method : kMethods) {
      if (!item.contains(method) || !item[method].contains("requestBody")) {
        continue;
      }
      const json& media = item[method]["requestBody"]["content"]["application/json"];
      ASSERT_TRUE(media.contains("examples")) << method << " " << path << " has no example";
      std::vector<std::pair<std::string, std::string>> headers = {
          {"Content-Type", "application/json"}};
      for (const json& p : item[method].value("parameters", json::array())) {
        if (p.contains("$ref") && p["$ref"] == "#/components/parameters/Traceparent") {
          headers.emplace_back(
              "traceparent",
              spec["components"]["parameters"]["Traceparent"]["example"].get<std::string>());
        }
      }
      for (const auto& [name, example] : media["examples"].items()) {
        TestResponse res = HttpCallAs(kAdminToken, port_, Upper(method), Fill(path),
                                      example["value"].dump(), headers);
        EXPECT_GE(res.status, 200) << method << " " << path << " " << name << ": " << res.body;
        EXPECT_LT(res.status, 300) << method << " " << path << " " << name << ": " << res.body;
        if (path == "/v1/deliveries/batch") {
          EXPECT_EQ(res.status, 202) << name << ": every item accepted, not a 207: " << res.body;
        }
        ++sent;
      }
    }
  }
  EXPECT_GE(sent, 10);
}

}  // namespace
}  // namespace egress
