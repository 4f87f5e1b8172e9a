// `relay-egress serve --check-config` as a real process: exit codes and the stderr message.

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "tests/config/config_files.h"

namespace egress::config {
namespace {

// relay-egress sits in the build root, one level above this binary (tests/).
std::string RelayEgressBinary() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() /
          "relay-egress")
      .string();
}

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

RunResult RunRelayEgress(const std::string& args) {
  RunResult result;
  FILE* pipe = popen((RelayEgressBinary() + " " + args + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    return result;
  }
  std::array<char, 512> buffer;
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string ShippedProfiles() { return SourceRootForTest() + "/config/profiles"; }

// Verifies the shipped default config passes and exits 0.
TEST(CheckConfigTest, ShippedConfigIsValid) {
  RunResult run = RunRelayEgress("serve --check-config --config " + SourceRootForTest() +
                                 "/config/relay-egress.toml");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("relay-egress.toml: OK"), std::string::npos) << run.output;
}

// Verifies an invalid file exits 2 with exactly "file:line: field: problem".
TEST(CheckConfigTest, InvalidConfigExitsNonZeroWithMessage) {
  ConfigFiles files;
  ConfigFiles::Write(files.main_path(), "[budgets.slack_channel]\nlimit = 0\n");
  RunResult run = RunRelayEgress("serve --check-config --config " + files.main_path() +
                                 " --profiles-dir " + ShippedProfiles());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.output,
            files.main_path() +
                ":2: budgets.slack_channel.limit: must be an integer from 1 to 1000000000\n");
}

// Verifies a bad local trust setting, [transport]'s or a platform's, fails the check (exit 2,
// naming it): a CA file that is missing or holds no certificate, a CA path that is not a
// directory; a real PEM passes.
TEST(CheckConfigTest, BadCaFileFailsTheCheck) {
  ConfigFiles files;
  const std::string dir = std::filesystem::path(files.main_path()).parent_path().string();
  const std::string not_pem = dir + "/not-a-bundle.pem";
  ConfigFiles::Write(not_pem, "hello\n");
  struct Case {
    std::string transport;
    int exit_code;
    std::string message;
  };
  const Case cases[] = {
      {"ca_file = \"" + dir + "/missing.pem\"", 2,
       "transport.ca_file: cannot read '" + dir + "/missing.pem': No such file or directory"},
      {"ca_file = \"" + not_pem + "\"", 2,
       "transport.ca_file: '" + not_pem +
           "' holds no PEM certificate (-----BEGIN CERTIFICATE-----)"},
      {"ca_path = \"" + not_pem + "\"", 2,
       "transport.ca_path: '" + not_pem + "' is not a directory"},
      {"ca_file = \"/etc/ssl/certs/ca-certificates.crt\"", 0, "OK"},
      // A platform's own trust store, checked the same way.
      {"[platforms.slack]\nca_file = \"" + dir + "/missing.pem\"", 2,
       "platforms.slack.ca_file: cannot read '" + dir + "/missing.pem': No such file or directory"},
      {"[platforms.webhook]\nca_file = \"" + not_pem + "\"", 2,
       "platforms.webhook.ca_file: '" + not_pem + "' holds no PEM certificate"},
      {"[platforms.line]\nca_path = \"" + not_pem + "\"", 2,
       "platforms.line.ca_path: '" + not_pem + "' is not a directory"},
      {"[platforms.webhook]\nca_file = \"/etc/ssl/certs/ca-certificates.crt\"", 0, "OK"},
  };
  for (const Case& c : cases) {
    if (c.exit_code == 0 && !std::filesystem::exists("/etc/ssl/certs/ca-certificates.crt")) {
      continue;
    }
    ConfigFiles::Write(files.main_path(),
                       (c.transport.starts_with("[") ? "" : "[transport]\n") + c.transport + "\n");
    RunResult run = RunRelayEgress("serve --check-config --config " + files.main_path() +
                                   " --profiles-dir " + ShippedProfiles());
    EXPECT_EQ(run.exit_code, c.exit_code) << c.transport << "\n" << run.output;
    EXPECT_NE(run.output.find(c.message), std::string::npos) << c.transport << "\n" << run.output;
  }
}

// Verifies --listen is checked too.
TEST(CheckConfigTest, BadListenFlag) {
  RunResult listen = RunRelayEgress("serve --check-config --config " + SourceRootForTest() +
                                    "/config/relay-egress.toml --listen 8686");
  EXPECT_EQ(listen.exit_code, 2);
  EXPECT_EQ(listen.output, "--listen: expected host:port, e.g. \"127.0.0.1:8686\"\n");
}

// Verifies that without --config, serve reads the file RELAY_EGRESS_CONFIG names (checked, and
// named in errors), and that --config wins over it.
TEST(CheckConfigTest, ConfigFromEnvironment) {
  ConfigFiles files;
  ConfigFiles::Write(files.main_path(), "[budgets.slack_channel]\nlimit = 0\n");
  ASSERT_EQ(setenv("RELAY_EGRESS_CONFIG", files.main_path().c_str(), 1), 0);
  RunResult bad = RunRelayEgress("serve --check-config");
  RunResult flag = RunRelayEgress("serve --check-config --config " + SourceRootForTest() +
                                  "/config/relay-egress.toml");
  ConfigFiles::Write(files.main_path(), "[server]\nlisten = \"127.0.0.1:8686\"\n");
  RunResult good = RunRelayEgress("serve --check-config");
  unsetenv("RELAY_EGRESS_CONFIG");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_EQ(bad.output.rfind(files.main_path() + ":2: budgets.slack_channel.limit: ", 0), 0u)
      << bad.output;
  EXPECT_EQ(flag.exit_code, 0) << flag.output;
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_EQ(good.output, files.main_path() + ": OK\n");
}

// Verifies a RELAY_EGRESS_<SECTION>_<KEY> override reaches serve: a bad value stops it with the
// variable's name (exit 2), and --print-config shows a good one, secrets redacted.
TEST(CheckConfigTest, EnvironmentOverridesAndPrintConfig) {
  const std::string config = " --config " + SourceRootForTest() + "/config/relay-egress.toml";
  ASSERT_EQ(setenv("RELAY_EGRESS_SERVER_MAX_CONNECTIONS", "lots", 1), 0);
  RunResult bad = RunRelayEgress("serve --check-config" + config);
  ASSERT_EQ(setenv("RELAY_EGRESS_SERVER_MAX_CONNECTIONS", "123", 1), 0);
  ASSERT_EQ(setenv("RELAY_EGRESS_ADMIN_TOKEN", "admin-token-from-env-0123456789", 1), 0);
  RunResult print = RunRelayEgress("serve --print-config" + config);
  unsetenv("RELAY_EGRESS_SERVER_MAX_CONNECTIONS");
  unsetenv("RELAY_EGRESS_ADMIN_TOKEN");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_EQ(bad.output.rfind("RELAY_EGRESS_SERVER_MAX_CONNECTIONS: server.max_connections: ", 0),
            0u)
      << bad.output;
  EXPECT_EQ(print.exit_code, 0) << print.output;
  EXPECT_NE(print.output.find("max_connections = 123"), std::string::npos) << print.output;
  EXPECT_NE(print.output.find("[budgets.slack_channel]"), std::string::npos) << print.output;
  EXPECT_EQ(print.output.find("admin-token-from-env"), std::string::npos) << print.output;
  EXPECT_EQ(print.output.find("example-local-api-key-change-me"), std::string::npos)
      << print.output;
  EXPECT_NE(print.output.find("(redacted)"), std::string::npos) << print.output;
}

// Verifies --version names the project version.
TEST(CheckConfigTest, Version) {
  RunResult run = RunRelayEgress("--version");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.rfind("relay-egress 0.", 0), 0u) << run.output;
}

// Verifies a host name as the listen address passes when it resolves, in the file and in --listen.
TEST(CheckConfigTest, ListenHostNameThatResolves) {
  ConfigFiles files;
  ConfigFiles::Write(files.main_path(), "[server]\nlisten = \"localhost:8686\"\n");
  RunResult file = RunRelayEgress("serve --check-config --config " + files.main_path() +
                                  " --profiles-dir " + ShippedProfiles());
  EXPECT_EQ(file.exit_code, 0) << file.output;
  RunResult flag = RunRelayEgress("serve --check-config --config " + SourceRootForTest() +
                                  "/config/relay-egress.toml --listen localhost:9000");
  EXPECT_EQ(flag.exit_code, 0) << flag.output;
}

// Verifies a listen name that does not resolve fails the check (exit 2) and says which one.
TEST(CheckConfigTest, ListenHostNameThatDoesNotResolve) {
  ConfigFiles files;
  ConfigFiles::Write(files.main_path(), "[server]\nlisten = \"no-such-host.invalid:8686\"\n");
  RunResult file = RunRelayEgress("serve --check-config --config " + files.main_path() +
                                  " --profiles-dir " + ShippedProfiles());
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_EQ(file.output.rfind("server.listen: cannot resolve host 'no-such-host.invalid': ", 0), 0u)
      << file.output;
  RunResult flag = RunRelayEgress("serve --check-config --config " + SourceRootForTest() +
                                  "/config/relay-egress.toml --listen no-such-host.invalid:1");
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_EQ(flag.output.rfind("--listen: cannot resolve host 'no-such-host.invalid': ", 0), 0u)
      << flag.output;
}

// Verifies auth = "off" passes the check on loopback and fails it (exit 2, saying why) on any
// other listen address, from the file or from --listen.
TEST(CheckConfigTest, AuthOffOnlyOnLoopback) {
  ConfigFiles files;
  ConfigFiles::Write(files.main_path(), "[server]\nauth = \"off\"\nlisten = \"127.0.0.1:8686\"\n");
  const std::string check =
      "serve --check-config --config " + files.main_path() + " --profiles-dir " + ShippedProfiles();
  EXPECT_EQ(RunRelayEgress(check).exit_code, 0);
  EXPECT_EQ(RunRelayEgress(check + " --listen [::1]:8686").exit_code, 0);
  RunResult open = RunRelayEgress(check + " --listen 0.0.0.0:8686");
  EXPECT_EQ(open.exit_code, 2);
  EXPECT_NE(open.output.find("server.auth = \"off\" needs a loopback listen address"),
            std::string::npos)
      << open.output;
  ConfigFiles::Write(files.main_path(), "[server]\nauth = \"off\"\nlisten = \"[::]:8686\"\n");
  EXPECT_EQ(RunRelayEgress(check).exit_code, 2);
}

}  // namespace
}  // namespace egress::config
