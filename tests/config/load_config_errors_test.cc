#include <filesystem>

#include <gtest/gtest.h>

#include "config/load_config.h"
#include "tests/config/config_files.h"

namespace egress::config {
namespace {

struct ErrorCase {
  const char* text;   // the main file
  const char* error;  // the message after "<main file>:"
};

void ExpectErrors(const ErrorCase* begin, const ErrorCase* end) {
  ConfigFiles files;
  for (const ErrorCase* c = begin; c != end; ++c) {
    SCOPED_TRACE(c->text);
    Result<Config> config = files.Load(c->text);
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(config.error().message(), files.main_path() + ":" + c->error);
  }
}

// Verifies the example message of the issue, line number included.
TEST(LoadConfigErrorsTest, NamesFileLineAndField) {
  ConfigFiles files;
  std::filesystem::create_directories(files.dir().Sub("config/profiles"));
  for (const char* name : {"slack", "discord", "line", "webhook"}) {
    ConfigFiles::Write(files.dir().Sub("config/profiles/") + name + ".toml", "");
  }
  const std::string path = files.dir().Sub("config/relay-egress.toml");
  ConfigFiles::Write(path,
                     "# line 1\n"
                     "[server]\n"
                     "listen = \"127.0.0.1:8686\"\n"
                     "\n\n\n\n\n"  // lines 4-8
                     "[budgets.slack_channel]\n"
                     "scale_ms = 1000\n"
                     "burst = 3\n"
                     "limit = 0\n");
  Result<Config> config =
      LoadConfig(path, {.getenv = [](std::string_view) { return std::optional<std::string>(); }});
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().message(),
            path + ":12: budgets.slack_channel.limit: must be an integer from 1 to 1000000000");
}

// Verifies unknown keys are errors naming the key, at every level.
TEST(LoadConfigErrorsTest, UnknownKeys) {
  const ErrorCase cases[] = {
      {"[servers]\nlisten = \"x:1\"\n", "1: servers: unknown key"},
      {"[server]\nlisten = \"127.0.0.1:1\"\nlisen = \"x\"\n", "3: server.lisen: unknown key"},
      {"[transport]\nuser_agnet = \"x\"\n", "2: transport.user_agnet: unknown key"},
      {"[platforms.slak]\nbase_url = \"https://x\"\n",
       "1: platforms.slak: unknown platform (known: slack, discord, "
       "line, webhook; a new one needs a profile file of its own)"},
      {"[platforms.slack]\ntimout = \"5s\"\n", "2: platforms.slack.timout: unknown key"},
      {"[platforms.webhook]\nbase_url = \"https://x\"\n",
       "2: platforms.webhook.base_url: unknown key"},
      {"[platforms.slack]\nallow_private_networks = true\n",
       "2: platforms.slack.allow_private_networks: unknown key"},
      {"[platforms.line.retry]\nmax_retries = 3\n",
       "2: platforms.line.retry.max_retries: unknown key"},
      {"[budgets.slack_chanel]\nlimit = 1\n",
       "1: budgets.slack_chanel: unknown budget (known: tenant_egress, webhook_destination, "
       "slack_workspace, slack_channel, discord_global, discord_route, line_channel, "
       "tenant_intake)"},
      {"[budgets.slack_channel]\nrate = 1\n", "2: budgets.slack_channel.rate: unknown key"},
      {"[tenants.acme]\nwieght = 2\n", "2: tenants.acme.wieght: unknown key"},
      {"[tenants.acme.credentials.c]\nplatform = \"slack\"\ntokn = \"xoxb-secret\"\n",
       "3: tenants.acme.credentials.c.tokn: unknown key"},
  };
  ExpectErrors(std::begin(cases), std::end(cases));
}

// Verifies [server] and [transport] type and range errors.
TEST(LoadConfigErrorsTest, ServerAndTransportValues) {
  const ErrorCase cases[] = {
      {"[server]\nlisten = 8686\n", "2: server.listen: must be a string, not an integer"},
      {"[server]\nlisten = \"8686\"\n",
       "2: server.listen: expected host:port, e.g. \"127.0.0.1:8686\""},
      {"[server]\nlisten = \"h:99999\"\n",
       "2: server.listen: the port must be a number from 0 to 65535"},
      {"[server]\nlisten = \"[::1\"\n",
       "2: server.listen: an IPv6 host needs its closing ']', e.g. \"[::1]:8686\""},
      {"[server]\nlisten = \"a:b:c\"\n",
       "2: server.listen: an IPv6 host needs brackets, e.g. \"[::1]:8686\""},
      {"[server]\ndata_dir = \"\"\n", "2: server.data_dir: must not be empty"},
      {"[server]\nadmin_token = 5\n", "2: server.admin_token: must be a string, not an integer"},
      {"[server]\nauth = \"maybe\"\n", "2: server.auth: must be \"required\" or \"off\""},
      {"[server]\nauth_failure_budget = 0\n",
       "2: server.auth_failure_budget: must be an integer from 1 to 1000000"},
      {"[server]\ndiscord_invalid_request_stop = 10000\n",
       "2: server.discord_invalid_request_stop: must be an integer from 1 to 9999"},
      {"[server]\nmetrics_auth = \"no\"\n",
       "2: server.metrics_auth: must be true or false, not a string"},
      {"[tenants.acme]\napi_keys = []\n",
       "2: tenants.acme.api_keys: must be a non-empty list of strings"},
      {"[server]\nadmin_token = \"\"\n", "2: server.admin_token: must not be empty"},
      {"[server]\nmax_payload_bytes = 0\n",
       "2: server.max_payload_bytes: must be an integer from 1 to 67108864"},
      {"[server]\nbatch_max_items = 1.5\n",
       "2: server.batch_max_items: must be an integer from 1 to 100000"},
      {"[server]\nmax_json_depth = 513\n",
       "2: server.max_json_depth: must be an integer from 1 to 512"},
      {"[server]\ntenant_backlog_watermark = -1\n",
       "2: server.tenant_backlog_watermark: must be a positive integer"},
      {"[server]\nlog_format = \"yaml\"\n", "2: server.log_format: must be \"text\" or \"json\""},
      {"[server]\nlog_level = \"loud\"\n",
       "2: server.log_level: must be one of \"debug\", \"info\", \"warn\", \"error\""},
      {"[server]\npacing_margin_percent = 51\n",
       "2: server.pacing_margin_percent: must be an integer from 0 to 50"},
      {"[server]\nmax_batch_bytes = 1000\n",
       "2: server.max_batch_bytes: must be at least max_payload_bytes + 65536 (1114112)"},
      {"[server]\nmax_batch_bytes = 2000000000\n",
       "2: server.max_batch_bytes: must be an integer from 1 to 1073741824"},
      {"[server]\nmax_connections = 0\n",
       "2: server.max_connections: must be an integer from 1 to 1000000"},
      {"[server]\nmax_connections_per_address = -1\n",
       "2: server.max_connections_per_address: must be an integer from 0 to 1000000"},
      {"[server]\nheader_timeout = \"0s\"\n", "2: server.header_timeout: must be longer than 0"},
      {"[server]\nmax_body_bytes_in_flight = 1000\n",
       "2: server.max_body_bytes_in_flight: must be at least 2 x max_batch_bytes (33554432)"},
      {"[server]\ntrusted_proxies = \"10.0.0.0/8\"\n",
       "2: server.trusted_proxies: must be a list of CIDR strings, e.g. [\"10.0.0.0/8\"]"},
      {"[server]\ntrusted_proxies = [\"10.0.0.0/8\", 7]\n",
       "2: server.trusted_proxies[1]: must be a string such as \"10.0.0.0/8\""},
      {"[server]\nproxy_protocol = true\n",
       "2: server.proxy_protocol: needs trusted_proxies: only a trusted proxy's header is read"},
      {"[server]\ntrusted_proxies = [\"10.0.0.0/8\"]\nproxy_protocol = 1\n",
       "3: server.proxy_protocol: must be true or false, not an integer"},
      {"[server]\ncore_dumps = \"yes\"\n",
       "2: server.core_dumps: must be true or false, not a string"},
      {"[server]\nread_timeout = 5\n",
       "2: server.read_timeout: must be a duration string such as \"5s\", not an integer"},
      {"[server]\nwrite_timeout = \"soon\"\n",
       "2: server.write_timeout: a duration starts with a whole number (e.g. \"5s\")"},
      {"[server]\ntenant_max_requests_in_flight = 0\n",
       "2: server.tenant_max_requests_in_flight: must be an integer from 1 to 100000"},
      {"[server]\ndestination_idle = \"0s\"\n",
       "2: server.destination_idle: must be longer than 0"},
      {"server = 3\n", "1: server: must be a table, not an integer"},
      {"[server]\nretention = \"7d\"\n", "2: server.retention: must be a table, not a string"},
      {"[server.retention]\nkeep = \"7d\"\n", "2: server.retention.keep: unknown key"},
      {"[server.retention]\ndelivered = 7\n",
       "2: server.retention.delivered: must be a duration string such as \"5s\", not an integer"},
      {"[server.retention]\ndead = \"forever\"\n",
       "2: server.retention.dead: a duration starts with a whole number (e.g. \"5s\")"},
      {"[server.retention]\ncancelled = \"Off\"\n",
       "2: server.retention.cancelled: a duration starts with a whole number (e.g. \"5s\")"},
      {"[server.retention]\nidempotency = \"366d\"\n",
       "2: server.retention.idempotency: must be at most 8760h (a year)"},
      {"[server.retention]\ndelivered = \"-1d\"\n",
       "2: server.retention.delivered: negative duration"},
      {"[server.retention]\ninterval = \"off\"\n",
       "2: server.retention.interval: a duration starts with a whole number (e.g. \"5s\")"},
      {"[server.retention]\ninterval = \"0s\"\n",
       "2: server.retention.interval: must be longer than 0"},
      {"[server.retention]\ninterval = \"500ms\"\n",
       "2: server.retention.interval: must be at least 1s"},
      {"[transport]\nmax_host_connections = 0\n",
       "2: transport.max_host_connections: must be an integer from 1 to 10000"},
      {"[transport]\nmax_total_connections = \"9\"\n",
       "2: transport.max_total_connections: must be an integer from 1 to 100000"},
      {"[transport]\nmax_response_body = 0\n",
       "2: transport.max_response_body: must be an integer from 1 to 67108864"},
      {"[transport]\nuser_agent = true\n",
       "2: transport.user_agent: must be a string, not a boolean"},
      {"[transport]\nhttp_version = \"3\"\n",
       "2: transport.http_version: must be \"auto\", \"1.1\" or \"2\""},
      {"[transport]\nhttp_version = 2\n",
       "2: transport.http_version: must be a string, not an integer"},
      {"[transport]\nmin_tls_version = \"1.1\"\n",
       "2: transport.min_tls_version: must be \"1.2\" or \"1.3\""},
      {"[transport]\nmax_concurrent_streams = 0\n",
       "2: transport.max_concurrent_streams: must be an integer from 1 to 1000"},
      {"[transport]\nca_file = [\"a\"]\n", "2: transport.ca_file: must be a string, not a list"},
  };
  ExpectErrors(std::begin(cases), std::end(cases));
}

// Verifies [platforms.*] and retry errors, durations included.
TEST(LoadConfigErrorsTest, PlatformValues) {
  const ErrorCase cases[] = {
      {"[platforms.slack]\nbase_url = \"slack.com\"\n",
       "2: platforms.slack.base_url: must be an absolute http:// or https:// URL"},
      {"[platforms.discord]\nbase_url = \"https://\"\n",
       "2: platforms.discord.base_url: must be an absolute http:// or https:// URL"},
      {"[platforms.webhook]\nallow_private_networks = \"yes\"\n",
       "2: platforms.webhook.allow_private_networks: must be true or false, not a string"},
      {"[platforms.line]\ntimeout = 15\n",
       "2: platforms.line.timeout: must be a duration string such as \"5s\", not an integer"},
      {"[platforms.line]\ntimeout = \"0s\"\n", "2: platforms.line.timeout: must be longer than 0"},
      {"[platforms.line]\nconnect_timeout = \"5y\"\n",
       "2: platforms.line.connect_timeout: unknown unit \"y\" (use ms, s, m, h or d)"},
      {"[platforms.slack]\nmax_in_flight_per_destination = 0\n",
       "2: platforms.slack.max_in_flight_per_destination: must be an integer from 1 to 10000"},
      {"[platforms.slack]\nmax_in_flight_per_platform = 100001\n",
       "2: platforms.slack.max_in_flight_per_platform: must be an integer from 1 to 100000"},
      {"[platforms.slack]\nretry = 5\n",
       "2: platforms.slack.retry: must be a table, not an integer"},
      {"platforms = [1]\n", "1: platforms: must be a table, not a list"},
      {"[platforms]\nslack = \"x\"\n", "2: platforms.slack: must be a table, not a string"},
      {"[platforms.slack.retry]\nschedule = \"1s\"\n",
       "2: platforms.slack.retry.schedule: must be a list of durations such as [\"1s\", \"5m\"]"},
      {"[platforms.slack.retry]\nschedule = [\"1s\", \"-5s\"]\n",
       "2: platforms.slack.retry.schedule[1]: negative duration"},
      {"[platforms.slack.retry]\nschedule = [\"1s\",\n  5]\n",
       "3: platforms.slack.retry.schedule[1]: must be a duration string such as \"5s\", not an "
       "integer"},
      {"[platforms.slack.retry]\nschedule = [\"\"]\n",
       "2: platforms.slack.retry.schedule[0]: empty duration (write e.g. \"5s\")"},
      {"[platforms.slack.retry]\nschedule = [\"99999999999999h\"]\n",
       "2: platforms.slack.retry.schedule[0]: duration too large"},
      {"[platforms.slack.retry]\nschedule = [\"1s\", \"8761h\"]\n",
       "2: platforms.slack.retry.schedule[1]: must be at most 8760h (a year)"},
      {"[platforms.slack.retry]\nmax_age = \"525601m\"\n",
       "2: platforms.slack.retry.max_age: must be at most 8760h (a year)"},
      {"[platforms.slack.retry]\nmax_attempts = 0\n",
       "2: platforms.slack.retry.max_attempts: must be an integer from 1 to 1000"},
      {"[platforms.slack.retry]\nmax_age = \"0s\"\n",
       "2: platforms.slack.retry.max_age: must be longer than 0"},
      {"[platforms.slack.retry]\nbase_backoff = \"1\"\n",
       "2: platforms.slack.retry.base_backoff: missing unit (use ms, s, m, h or d)"},
      {"[platforms.slack.retry]\nmax_backoff = \"-1m\"\n",
       "2: platforms.slack.retry.max_backoff: negative duration"},
      {"[platforms.slack.retry]\nthrottle_wait = \"1w\"\n",
       "2: platforms.slack.retry.throttle_wait: unknown unit \"w\" (use ms, s, m, h or d)"},
  };
  ExpectErrors(std::begin(cases), std::end(cases));
}

// Verifies [budgets.*] value errors.
TEST(LoadConfigErrorsTest, BudgetValues) {
  const ErrorCase cases[] = {
      {"[budgets.webhook_destination]\nlimit = 0\n",
       "2: budgets.webhook_destination.limit: must be an integer from 1 to 1000000000"},
      {"[budgets.discord_route]\nscale_ms = \"1000\"\n",
       "2: budgets.discord_route.scale_ms: must be an integer from 1 to 31622400000"},
      {"[budgets.line_channel]\nburst = -3\n",
       "2: budgets.line_channel.burst: must be an integer from 1 to 1000000000"},
      {"[budgets.tenant_intake]\nlimit = 2.5\n",
       "2: budgets.tenant_intake.limit: must be an integer from 1 to 1000000000"},
      {"[budgets.tenant_egress]\nlimit = 1000000001\n",
       "2: budgets.tenant_egress.limit: must be an integer from 1 to 1000000000"},
      {"[budgets.tenant_egress]\nscale_ms = 31622400001\n",
       "2: budgets.tenant_egress.scale_ms: must be an integer from 1 to 31622400000"},
      {"[budgets]\ntenant_egress = 5\n",
       "2: budgets.tenant_egress: must be a table, not an integer"},
  };
  ExpectErrors(std::begin(cases), std::end(cases));
}

// Verifies tenant and credential errors.
TEST(LoadConfigErrorsTest, TenantValues) {
  const ErrorCase cases[] = {
      {"[tenants.acme]\nweight = 0\n",
       "2: tenants.acme.weight: must be an integer from 1 to 1000000"},
      {"[tenants]\nacme = 1\n", "2: tenants.acme: must be a table, not an integer"},
      {"[tenants.\"\"]\nweight = 1\n", "1: tenants.: a tenant id must not be empty"},
      {"[tenants.acme]\ncredentials = 1\n",
       "2: tenants.acme.credentials: must be a table, not an integer"},
      {"[tenants.acme.credentials.c]\ntoken = \"t\"\n",
       "1: tenants.acme.credentials.c.platform: missing (slack, discord, line, webhook)"},
      {"[tenants.acme.credentials.c]\nplatform = \"sms\"\ntoken = \"t\"\n",
       "2: tenants.acme.credentials.c.platform: unknown platform \"sms\" (slack, discord, line, "
       "webhook)"},
      {"[tenants.acme.credentials.c]\nplatform = 1\n",
       "2: tenants.acme.credentials.c.platform: must be a string, not an integer"},
      {"[tenants.acme.credentials.c]\nplatform = \"slack\"\n",
       "1: tenants.acme.credentials.c.token: missing (the slack token: token, token_file or "
       "token_env)"},
      {"[tenants.acme.credentials.c]\nplatform = \"discord\"\ntoken = \"\"\n",
       "3: tenants.acme.credentials.c.token: must not be empty"},
      {"[tenants.acme.credentials.c]\nplatform = \"slack\"\ntoken = \"xoxb-1\\r\\nX-Injected: "
       "1\"\n",
       "3: tenants.acme.credentials.c.token: <redacted>: token: byte 6 is not visible ASCII (a "
       "space, a control character or non-ASCII)"},
      {"[tenants.acme.credentials.c]\nplatform = \"line\"\ntoken = \"t\"\nsecret = \"whsec_x\"\n",
       "4: tenants.acme.credentials.c.secret: line credentials use a token, not a signing secret"},
      {"[tenants.acme.credentials.c]\nplatform = \"webhook\"\ntoken = \"t\"\n",
       "3: tenants.acme.credentials.c.token: webhook credentials sign with secret or secrets, "
       "not a token"},
      {"[tenants.acme.credentials.c]\nplatform = \"webhook\"\n",
       "1: tenants.acme.credentials.c.secret: missing (secret = \"whsec_...\", secrets = "
       "[...], secret_file or secret_env)"},
      {"[tenants.acme.credentials.c]\nplatform = \"webhook\"\n"
       "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
       "secrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"]\n",
       "1: tenants.acme.credentials.c.secret: set secret or secrets, not both"},
      {"[tenants.acme.credentials.c]\nplatform = \"webhook\"\nsecrets = []\n",
       "3: tenants.acme.credentials.c.secrets: must be a non-empty list of strings"},
      {"[tenants.acme.credentials.c]\nplatform = \"webhook\"\nsecrets = [1]\n",
       "3: tenants.acme.credentials.c.secrets[0]: must be a non-empty string"},
  };
  ExpectErrors(std::begin(cases), std::end(cases));
}

// Verifies a bad secret is reported by position and reason, never by value.
TEST(LoadConfigErrorsTest, SecretsAreRedacted) {
  const ErrorCase cases[] = {
      {"[tenants.acme.credentials.c]\nplatform = \"webhook\"\nsecret = \"hunter2-not-whsec\"\n",
       "3: tenants.acme.credentials.c.secret: <redacted>: webhook secret must start with "
       "'whsec_'"},
      {"[tenants.acme.credentials.c]\nplatform = \"webhook\"\nsecret = \"whsec_hunter2!!\"\n",
       "3: tenants.acme.credentials.c.secret: <redacted>: webhook secret after 'whsec_' is not "
       "valid base64"},
      {"[tenants.acme.credentials.c]\nplatform = \"webhook\"\n"
       "secrets = [\"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\",\n"
       "  \"whsec_aHVudGVyMg==\"]\n",
       "4: tenants.acme.credentials.c.secrets[1]: <redacted>: webhook secret key is 7 bytes; "
       "Standard Webhooks needs 24 to 64"},
      {"[tenants.acme.credentials.c]\nplatform = \"slack\"\ntoken = \"hunter2\n",
       "3: syntax: invalid TOML (details withheld: the line holds a secret)"},
      {"[server]\nadmin_token = hunter2\n",
       "2: syntax: invalid TOML (details withheld: the line holds a secret)"},
      {"[tenants.acme]\napi_keys = [hunter2]\n",
       "2: syntax: invalid TOML (details withheld: the line holds a secret)"},
      {"[tenants.acme]\napi_keys = [\"hunter2\"]\n",
       "2: tenants.acme.api_keys[0]: <redacted>: an API key is 16 to 256 bytes, not 7"},
      {"[tenants.acme]\napi_keys = [\"hunter2 hunter2 hunter2\"]\n",
       "2: tenants.acme.api_keys[0]: <redacted>: an API key is visible ASCII only (no space, "
       "control character or non-ASCII byte)"},
      {"[tenants.acme]\napi_keys = [\"sha256:hunter2\"]\n",
       "2: tenants.acme.api_keys[0]: <redacted>: a sha256: entry needs 64 hex digits, not 7"},
      {"[tenants.acme]\napi_keys = "
       "[\"sha256:hunter2hunter2hunter2hunter2hunter2hunter2hunter2hunter2hunter2x\"]\n",
       "2: tenants.acme.api_keys[0]: <redacted>: a sha256: entry holds a character that is not "
       "hex"},
      {"[tenants.acme]\napi_keys = [\"hunter2-hunter2-hunter2\", \"hunter2-hunter2-hunter2\"]\n",
       "2: tenants.acme.api_keys[1]: <redacted>: the same key twice"},
      {"[tenants.acme]\napi_keys = [\"hunter2-hunter2-hunter2\"]\n"
       "[tenants.globex]\napi_keys = [\"hunter2-hunter2-hunter2\"]\n",
       "4: tenants.globex.api_keys[0]: <redacted>: already a key of tenant \"acme\"; a key "
       "belongs to one tenant only"},
  };
  ExpectErrors(std::begin(cases), std::end(cases));
  ConfigFiles files;
  for (const ErrorCase& c : cases) {
    Result<Config> config = files.Load(c.text);
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().message().find("hunter2"), std::string::npos);
    EXPECT_EQ(config.error().message().find("aHVudGVyMg"), std::string::npos);
  }
}

// Verifies TOML syntax errors carry file and line.
TEST(LoadConfigErrorsTest, SyntaxErrors) {
  ConfigFiles files;
  Result<Config> config = files.Load("[server]\nlisten = \"a:1\"\n[server\n");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(config.error().message().rfind(files.main_path() + ":3: syntax: ", 0), 0u)
      << config.error().message();
  Result<Config> duplicate = files.Load("[server]\nlisten = \"a:1\"\nlisten = \"b:2\"\n");
  ASSERT_FALSE(duplicate.has_value());
  EXPECT_EQ(duplicate.error().message().rfind(files.main_path() + ":3: syntax: ", 0), 0u)
      << duplicate.error().message();
}

// Verifies missing files are named.
TEST(LoadConfigErrorsTest, MissingFiles) {
  ConfigFiles files;
  Result<Config> missing_main = LoadConfig(files.dir().Sub("nope.toml"));
  ASSERT_FALSE(missing_main.has_value());
  EXPECT_EQ(missing_main.error().message(),
            files.dir().Sub("nope.toml") + ": cannot read: No such file or directory");
  std::filesystem::remove(files.profile_path("line"));
  Result<Config> missing_profile = files.Load("");
  ASSERT_FALSE(missing_profile.has_value());
  EXPECT_EQ(missing_profile.error().message(),
            files.profile_path("line") + ": cannot read: No such file or directory");
}

// Verifies a profile may set only its own platform and budgets, and errors name the profile.
TEST(LoadConfigErrorsTest, ProfilesStayInTheirLane) {
  struct ProfileCase {
    const char* platform;
    const char* text;
    const char* error;
  };
  const ProfileCase cases[] = {
      {"slack", "[platforms.discord]\ntimeout = \"1s\"\n",
       "1: platforms.discord: the slack profile may set only platforms.slack"},
      {"slack", "[budgets.line_channel]\nlimit = 1\n",
       "1: budgets.line_channel: the slack profile may set only its own platform's budgets"},
      {"webhook", "[budgets.tenant_egress]\nlimit = 1\n",
       "1: budgets.tenant_egress: the webhook profile may set only its own platform's budgets"},
      {"line", "[server]\nlisten = \"a:1\"\n", "1: server: unknown key"},
      {"discord", "[tenants.a]\nweight = 1\n", "1: tenants: unknown key"},
      {"discord", "[budgets.discord_global]\nlimit = 0\n",
       "2: budgets.discord_global.limit: must be an integer from 1 to 1000000000"},
  };
  for (const ProfileCase& c : cases) {
    SCOPED_TRACE(c.text);
    ConfigFiles files;
    files.WriteProfile(c.platform, c.text);
    Result<Config> config = files.Load("");
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().message(), files.profile_path(c.platform) + ":" + c.error);
  }
}

}  // namespace
}  // namespace egress::config
