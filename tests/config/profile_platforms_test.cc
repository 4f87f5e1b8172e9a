// Profile platforms in the config (docs/platforms.md, "Profile platforms"): a <name>.toml in the
// profiles directory or in extra_profiles_dir defines platform <name>; its errors name the file,
// the line and the key; the shipped Telegram and Teams profiles.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/load_config.h"
#include "dispatcher/pacing/platform_scopes.h"
#include "tests/config/config_files.h"

namespace egress::config {
namespace {

using pacing::Budget;
using pacing::BudgetName;
using pacing::ScopeKeyPart;

// A made-up chat API (the example of docs/platforms.md, "Profile platforms").
constexpr char kAcmeChat[] = R"(# profiles/acme_chat.toml: defines platform acme_chat.
[platforms.acme_chat]
base_url = "https://chat.acme.example"
connect_timeout = "5s"
timeout = "10s"
max_in_flight_per_destination = 1

[platforms.acme_chat.retry]
schedule = ["1s", "5s", "30s"]
max_attempts = 4
throttle_wait = "2s"

[platforms.acme_chat.request]
method = "POST"
url = "{base_url}/v1/rooms/{destination}/messages"
headers = { Idempotency-Key = "{delivery_id}" }
destination_chars = "a-z0-9_-"
destination_max_bytes = 40

[platforms.acme_chat.auth]
header = "Authorization"
value = "Bearer {credential.token}"

[platforms.acme_chat.response]
success_status = [200, 201]
ref_pointer = "/message/id"
error_pointer = "/error/message"
limit_header = "X-Acme-Limit"
remaining_header = "X-Acme-Remaining"
reset_header = "X-Acme-Reset"
reset_unit = "epoch_milliseconds"
retry_after_pointer = "/error/retry_after_ms"
retry_after_unit = "milliseconds"

[[platforms.acme_chat.rules]]
status = 404
action = "disable_destination"
reason = "room_not_found"

[[platforms.acme_chat.rules]]
status = [400, 422]
body_contains = "message_too_long"
action = "dead"
reason = "too_long"

[[platforms.acme_chat.scopes]]
budget = "acme_chat_workspace"
key = ["credential"]

[[platforms.acme_chat.scopes]]
budget = "acme_chat_room"
key = ["credential", "destination"]
window = true
park = true

[budgets.acme_chat_workspace]
limit = 100
scale_ms = 60000
burst = 10

[budgets.acme_chat_room]
limit = 5
scale_ms = 10000
burst = 1
)";

std::string ShippedProfile(std::string_view name) {
  std::ifstream in(SourceRootForTest() + "/config/profiles/" + std::string(name) + ".toml",
                   std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ConfigFiles with the four shipped profiles copied into its profiles/ and an empty extra/
// directory beside it.
class ProfileDirs : public ConfigFiles {
 public:
  ProfileDirs() {
    for (const char* name : {"slack", "discord", "line", "webhook"}) {
      WriteProfile(name, ShippedProfile(name));
    }
    std::filesystem::create_directories(extra_dir());
  }

  std::string extra_dir() const { return dir().Sub("extra"); }
  std::string extra_path(std::string_view name) const {
    return extra_dir() + "/" + std::string(name) + ".toml";
  }

  Result<Config> LoadWithExtra(const std::string& main_text) const {
    Write(main_path(), main_text);
    LoadOptions options = Options();
    options.extra_profiles_dir = extra_dir();
    return LoadConfig(main_path(), options);
  }
};

LoadOptions BuiltinOptions() {
  LoadOptions options;
  options.environment = [] { return Environment(); };
  options.getenv = [](std::string_view) { return std::nullopt; };
  return options;
}

// Verifies a profiles directory with acme_chat.toml defines platform acme_chat: its request,
// auth, response, rules, scopes and budgets as written, what the main file overrides, and a
// credential naming it.
TEST(ProfilePlatformsTest, ProfilesDirDefinesAPlatform) {
  ProfileDirs files;
  files.WriteProfile("acme_chat", kAcmeChat);
  Result<Config> config = files.Load(
      "[platforms.acme_chat]\n"
      "base_url = \"http://127.0.0.1:9/sim\"\n"
      "[budgets.acme_chat_room]\n"
      "limit = 3\n"
      "scale_ms = 10000\n"
      "burst = 1\n"
      "[tenants.acme.credentials.chat]\n"
      "platform = \"acme_chat\"\n"
      "token = \"acme-secret-1\"\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  const std::optional<Platform> acme = ParsePlatform("acme_chat");
  ASSERT_TRUE(acme.has_value());
  EXPECT_GE(static_cast<int>(*acme), kBuiltinPlatformCount);
  EXPECT_TRUE(config->Defines(*acme));
  const std::vector<Platform> platforms = config->Platforms();
  EXPECT_EQ(platforms.size(), 5u);
  EXPECT_EQ(platforms.back(), *acme);
  EXPECT_EQ(config->sources[4], files.profile_path("acme_chat"));

  const PlatformConfig& p = config->platform(*acme);
  EXPECT_EQ(p.base_url, "http://127.0.0.1:9/sim");
  EXPECT_EQ(p.timeout, Millis(10'000));
  EXPECT_EQ(p.connect_timeout, Millis(5'000));
  EXPECT_EQ(p.max_in_flight_per_destination, 1);
  EXPECT_EQ(p.retry.max_attempts, 4);
  EXPECT_EQ(p.retry.throttle_wait, Millis(2'000));
  ASSERT_TRUE(p.profile.has_value());
  const adapters::ProfileSpec& spec = *p.profile;
  EXPECT_EQ(spec.platform, *acme);
  EXPECT_EQ(spec.method, "POST");
  EXPECT_EQ(spec.url.text(), "{base_url}/v1/rooms/{destination}/messages");
  ASSERT_EQ(spec.headers.size(), 1u);
  EXPECT_EQ(spec.headers[0].first, "Idempotency-Key");
  EXPECT_TRUE(spec.headers[0].second.Uses(adapters::ProfileTemplate::Field::kDeliveryId));
  EXPECT_EQ(spec.content_type, "application/json");
  EXPECT_EQ(spec.destination_chars, "a-z0-9_-");
  EXPECT_EQ(spec.destination_max_bytes, 40u);
  EXPECT_EQ(spec.auth_header, "Authorization");
  EXPECT_EQ(spec.auth_value.text(), "Bearer {credential.token}");
  EXPECT_FALSE(spec.oauth2.has_value());
  EXPECT_FALSE(spec.SecretUrl());
  EXPECT_EQ(spec.success_statuses, (std::vector<int>{200, 201}));
  EXPECT_EQ(spec.success_pointer, "");
  EXPECT_EQ(spec.ref_pointer, "/message/id");
  EXPECT_EQ(spec.error_pointer, "/error/message");
  EXPECT_EQ(spec.limit_header, "X-Acme-Limit");
  EXPECT_EQ(spec.remaining_header, "X-Acme-Remaining");
  EXPECT_EQ(spec.reset_header, "X-Acme-Reset");
  EXPECT_EQ(spec.reset_unit, adapters::ResetUnit::kEpochMilliseconds);
  EXPECT_EQ(spec.retry_after_header, "Retry-After");
  EXPECT_EQ(spec.retry_after_pointer, "/error/retry_after_ms");
  EXPECT_EQ(spec.retry_after_unit, adapters::ResetUnit::kMilliseconds);
  ASSERT_EQ(spec.rules.size(), 2u);
  EXPECT_EQ(spec.rules[0].statuses, std::vector<int>{404});
  EXPECT_EQ(spec.rules[0].action, adapters::ProfileAction::kDisableDestination);
  EXPECT_EQ(spec.rules[0].reason, "room_not_found");
  EXPECT_EQ(spec.rules[1].statuses, (std::vector<int>{400, 422}));
  EXPECT_EQ(spec.rules[1].body_contains, "message_too_long");
  EXPECT_EQ(spec.rules[1].action, adapters::ProfileAction::kDead);

  const BudgetName workspace = *pacing::ParseBudgetName("acme_chat_workspace");
  const BudgetName room = *pacing::ParseBudgetName("acme_chat_room");
  ASSERT_EQ(p.scopes.rules.size(), 2u);
  EXPECT_EQ(p.scopes.rules[0].budget, workspace);
  EXPECT_EQ(p.scopes.rules[0].key, std::vector<ScopeKeyPart>{ScopeKeyPart::kCredential});
  EXPECT_FALSE(p.scopes.rules[0].window);
  EXPECT_FALSE(p.scopes.rules[0].park);
  EXPECT_EQ(p.scopes.rules[1].budget, room);
  EXPECT_EQ(p.scopes.rules[1].key,
            (std::vector<ScopeKeyPart>{ScopeKeyPart::kCredential, ScopeKeyPart::kDestination}));
  EXPECT_TRUE(p.scopes.rules[1].window);
  EXPECT_TRUE(p.scopes.rules[1].park);
  EXPECT_EQ(p.scopes.rules[1].when_destination_starts_with, "");
  EXPECT_EQ(config->budget(workspace), (Budget{100, 60000, 10}));
  EXPECT_EQ(config->budget(room), (Budget{3, 10000, 1}));  // the main file's

  const adapters::Credential& credential = config->tenants.at("acme").credentials.at("chat");
  EXPECT_EQ(credential.platform, "acme_chat");
  EXPECT_EQ(credential.token, "acme-secret-1");
}

// Verifies extra_profiles_dir adds the operator's platforms, after the shipped ones: beside a
// profiles_dir, and beside the built-in profiles (Telegram and Teams then defined too).
TEST(ProfilePlatformsTest, ExtraProfilesDirAddsPlatforms) {
  ProfileDirs files;
  ConfigFiles::Write(files.extra_path("acme_chat"), kAcmeChat);
  Result<Config> config = files.LoadWithExtra("");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  const Platform acme = *ParsePlatform("acme_chat");
  EXPECT_TRUE(config->Defines(acme));
  EXPECT_EQ(config->sources.back(), files.main_path());
  EXPECT_EQ(config->sources[4], files.extra_path("acme_chat"));
  // Only the profile platforms of the directories given: Telegram's file is not among them.
  if (std::optional<Platform> telegram = ParsePlatform("telegram")) {
    EXPECT_FALSE(config->Defines(*telegram));
  }

  LoadOptions builtin = BuiltinOptions();
  builtin.extra_profiles_dir = files.extra_dir();
  Result<Config> with_builtin = LoadConfig("", builtin);
  ASSERT_TRUE(with_builtin.has_value()) << with_builtin.error().ToString();
  EXPECT_TRUE(with_builtin->Defines(acme));
  EXPECT_TRUE(with_builtin->Defines(*ParsePlatform("telegram")));
  EXPECT_TRUE(with_builtin->Defines(*ParsePlatform("teams")));
  EXPECT_EQ(with_builtin->Platforms().size(), 7u);
  EXPECT_EQ(with_builtin->sources.back(), files.extra_path("acme_chat"));
  EXPECT_EQ(with_builtin->budget(*pacing::ParseBudgetName("acme_chat_room")),
            (Budget{5, 10000, 1}));
}

// Verifies a platform defined in both directories is an error naming the second file, and a
// missing extra directory is an error naming it.
TEST(ProfilePlatformsTest, PlatformDefinedTwiceIsAnError) {
  ProfileDirs files;
  files.WriteProfile("acme_chat", kAcmeChat);
  ConfigFiles::Write(files.extra_path("acme_chat"), kAcmeChat);
  Result<Config> config = files.LoadWithExtra("");
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(config.error().message(),
            files.extra_path("acme_chat") + ": platform acme_chat is defined already");
  // A shipped profile platform redefined by the operator is refused likewise.
  std::filesystem::remove(files.extra_path("acme_chat"));
  ConfigFiles::Write(files.extra_path("telegram"), ShippedProfile("telegram"));
  LoadOptions builtin = BuiltinOptions();
  builtin.extra_profiles_dir = files.extra_dir();
  Result<Config> twice = LoadConfig("", builtin);
  ASSERT_FALSE(twice.has_value());
  EXPECT_EQ(twice.error().message(),
            files.extra_path("telegram") + ": platform telegram is defined already");
  builtin.extra_profiles_dir = files.dir().Sub("no-such-dir");
  Result<Config> missing = LoadConfig("", builtin);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message().rfind(files.dir().Sub("no-such-dir") + ": cannot read:", 0),
            0u)
      << missing.error().message();
}

// Verifies the main file may not name a platform no profile defines: an unknown name, and a
// profile platform (Telegram) whose file this configuration does not load.
TEST(ProfilePlatformsTest, MainFileNamingAnUndefinedPlatform) {
  ProfileDirs files;
  for (const char* name : {"nochat", "telegram"}) {
    SCOPED_TRACE(name);
    Result<Config> config =
        files.Load(std::string("[platforms.") + name + "]\nbase_url = \"https://x.example\"\n");
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().message(),
              files.main_path() + ":1: platforms." + name +
                  ": unknown platform (known: slack, discord, line, webhook; a new one needs a "
                  "profile file of its own)");
  }
  Result<Config> budget = files.Load("[budgets.telegram_chat]\nlimit = 2\n");
  ASSERT_FALSE(budget.has_value());
  EXPECT_NE(budget.error().message().find(files.main_path() +
                                          ":1: budgets.telegram_chat: unknown budget"),
            std::string::npos)
      << budget.error().message();
}

struct ProfileErrorCase {
  const char* text;   // bad_chat.toml
  const char* error;  // the message after "<bad_chat.toml>:"
};

// The head of a valid profile for platform bad_chat: lines 1 to 5.
constexpr char kBadChatHead[] =
    "[platforms.bad_chat]\n"
    "base_url = \"https://bad.example\"\n"
    "[[platforms.bad_chat.scopes]]\n"
    "budget = \"bad_chat_room\"\n"
    "key = [\"credential\", \"destination\"]\n";

// Verifies each profile error names the profile file, the line and the key.
TEST(ProfilePlatformsTest, ProfileErrorsNameFileLineAndKey) {
  const std::string head = kBadChatHead;
  const std::string url = "[platforms.bad_chat.request]\nurl = \"{base_url}/send/{destination}\"\n";
  const std::string cases[][2] = {
      {head + "[platforms.bad_chat.request]\nurl = \"{base_url}/x\"\nmethd = \"POST\"\n",
       "8: platforms.bad_chat.request.methd: unknown key"},
      {head + "[platforms.bad_chat.request]\nurl = \"{base_url}/{chat}\"\n",
       "7: platforms.bad_chat.request.url: unknown placeholder {chat} (known: base_url, "
       "destination, delivery_id, credential.token, credential.client_id, access_token)"},
      {head + "[platforms.bad_chat.request]\nurl = \"{base_url}/x/{destination\"\n",
       "7: platforms.bad_chat.request.url: a '{' without its '}' (write '{{' for a brace)"},
      {head + "[platforms.bad_chat.request]\nurl = \"ftp://x/{destination}\"\n",
       "7: platforms.bad_chat.request.url: must start with {base_url} or an absolute http(s):// "
       "URL"},
      {head + url + "destination_chars = \"a-z/\"\n",
       "8: platforms.bad_chat.request.destination_chars: may not allow / ? # or %"},
      {head + url + "destination_chars = \"!-~\"\n",
       "8: platforms.bad_chat.request.destination_chars: may not allow / ? # or %"},
      {head + url + "destination_chars = \"z-a\"\n",
       "8: platforms.bad_chat.request.destination_chars: an inverted range in destination_chars"},
      {head + url + "method = \"GET\"\n",
       "8: platforms.bad_chat.request.method: must be POST, PUT or PATCH"},
      {head + url + "[platforms.bad_chat.response]\nreset_unit = \"minutes\"\n",
       "9: platforms.bad_chat.response.reset_unit: must be seconds, milliseconds, epoch_seconds "
       "or epoch_milliseconds"},
      {head + url + "[platforms.bad_chat.response]\nretry_after_unit = \"epoch_seconds\"\n",
       "9: platforms.bad_chat.response.retry_after_unit: must be seconds or milliseconds"},
      {head + url + "[platforms.bad_chat.response]\nsuccess_pointer = \"ok\"\n",
       "9: platforms.bad_chat.response.success_pointer: must be a JSON pointer (\"/a/b\", RFC "
       "6901) of at most 256 bytes"},
      {head + url + "[platforms.bad_chat.response]\nsuccess_status = [200, 700]\n",
       "9: platforms.bad_chat.response.success_status: must be an HTTP status (100 to 599) or a "
       "list of 1 to 32 of them"},
      {head + url + "[platforms.bad_chat.response]\nlimit_header = \"X Limit\"\n",
       "9: platforms.bad_chat.response.limit_header: must be a header name (1 to 64 printable "
       "bytes without separators)"},
      {head + url + "[[platforms.bad_chat.rules]]\nstatus = 403\naction = \"explode\"\n",
       "10: platforms.bad_chat.rules[0].action: must be delivered, retry, throttle, dead, "
       "disable_destination or disable_credential"},
      {head + url + "[[platforms.bad_chat.rules]]\nstatus = 403\n",
       "8: platforms.bad_chat.rules[0].action: missing (delivered, retry, throttle, dead, "
       "disable_destination or disable_credential)"},
      {head + url + "[[platforms.bad_chat.rules]]\naction = \"dead\"\nreason = \"Bad Reason\"\n",
       "10: platforms.bad_chat.rules[0].reason: must be at most 64 of a-z, 0-9 and _"},
      {head + url + "[[platforms.bad_chat.scopes]]\nbudget = \"chat_room\"\nkey = [\"tenant\"]\n",
       "9: platforms.bad_chat.scopes[1].budget: must start with the platform's name: "
       "bad_chat_<name>"},
      {head + url + "[[platforms.bad_chat.scopes]]\nbudget = \"bad_chat_room\"\nkey = [\"user\"]\n",
       "10: platforms.bad_chat.scopes[1].key: each part is tenant, credential or destination"},
      {head + url +
           "[[platforms.bad_chat.scopes]]\nbudget = \"bad_chat_room\"\nkey = [\"tenant\"]\n"
           "shape = \"window\"\n",
       "11: platforms.bad_chat.scopes[1].shape: unknown key"},
      {head + url +
           "[platforms.bad_chat.auth]\nheader = \"Authorization\"\n"
           "value = \"Bearer {access_token}\"\n",
       "1: platforms.bad_chat.oauth2.token_url: missing: {access_token} needs [oauth2] token_url"},
      {head + "[platforms.bad_chat.request]\nmethod = \"POST\"\n",
       "1: platforms.bad_chat.request.url: missing: a profile platform says where its requests go"},
      {"[platforms.bad_chat]\nbase_url = \"https://bad.example\"\n" + url,
       "1: platforms.bad_chat.scopes: missing: a profile platform names at least one scope "
       "([[scopes]])"},
      {head + url + "[platforms.slack]\ntimeout = \"1s\"\n",
       "8: platforms.slack: the bad_chat profile may set only platforms.bad_chat"},
      {head + url + "[server]\nlisten = \"127.0.0.1:1\"\n", "8: server: unknown key"},
      {head + url + "[budgets.slack_channel]\nlimit = 1\n",
       "8: budgets.slack_channel: the bad_chat profile may set only its own platform's budgets"},
  };
  ProfileDirs files;
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(text);
    files.WriteProfile("bad_chat", text);
    Result<Config> config = files.Load("");
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(config.error().message(), files.profile_path("bad_chat") + ":" + error);
  }
}

// Verifies a profile platform's file must define its platform: an empty file, or one with only
// budgets, is an error naming the file.
TEST(ProfilePlatformsTest, ProfileFileThatDefinesNothing) {
  ProfileDirs files;
  for (const char* text : {"", "# nothing yet\n"}) {
    SCOPED_TRACE(text);
    files.WriteProfile("bad_chat", text);
    Result<Config> config = files.Load("");
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().message(),
              files.profile_path("bad_chat") +
                  ": defines no [platforms.bad_chat] (a profile platform's file defines it)");
  }
  // A file whose name is no platform name.
  std::filesystem::remove(files.profile_path("bad_chat"));
  files.WriteProfile("Bad-Chat", kAcmeChat);
  Result<Config> config = files.Load("");
  ASSERT_FALSE(config.has_value());
  EXPECT_NE(config.error().message().find(files.profile_path("Bad-Chat") +
                                          ": the file's name is the platform's"),
            std::string::npos)
      << config.error().message();
}

// Verifies the shipped Telegram profile, from the built-in profiles: its request (the token in
// the URL, chat_id in the body), its body's ok and retry_after, its rules, and its three scopes
// (the group's only for destinations starting with '-', counted as a window).
TEST(ProfilePlatformsTest, TelegramFromTheBuiltinProfiles) {
  Result<Config> config = LoadConfig("", BuiltinOptions());
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  const Platform telegram = *ParsePlatform("telegram");
  ASSERT_TRUE(config->Defines(telegram));
  const PlatformConfig& p = config->platform(telegram);
  EXPECT_EQ(p.base_url, "https://api.telegram.org");
  EXPECT_EQ(p.max_in_flight_per_destination, 1);
  ASSERT_TRUE(p.profile.has_value());
  EXPECT_EQ(p.profile->url.text(), "{base_url}/bot{credential.token}/sendMessage");
  EXPECT_TRUE(p.profile->SecretUrl());
  ASSERT_EQ(p.profile->body_fields.size(), 1u);
  EXPECT_EQ(p.profile->body_fields[0].first, "chat_id");
  EXPECT_EQ(p.profile->success_pointer, "/ok");
  EXPECT_EQ(p.profile->retry_after_pointer, "/parameters/retry_after");
  EXPECT_EQ(p.profile->rules.size(), 3u);
  ASSERT_EQ(p.scopes.rules.size(), 3u);
  const pacing::ScopeRule& group = p.scopes.rules[1];
  EXPECT_EQ(group.budget, *pacing::ParseBudgetName("telegram_group"));
  EXPECT_EQ(group.when_destination_starts_with, "-");
  EXPECT_TRUE(group.window);
  EXPECT_TRUE(p.scopes.rules[2].park);
  EXPECT_EQ(config->budget(group.budget), (Budget{20, 60000, 1}));
  EXPECT_EQ(config->budget(*pacing::ParseBudgetName("telegram_bot")), (Budget{30, 1000, 1}));
}

// Verifies the shipped Teams profile: OAuth2 client credentials against the Bot Framework's
// token endpoint, the Bearer header, five scopes (the app's and four per conversation) with their
// budgets, the 30 s window parked by Retry-After; and that the shipped directory loads the same.
TEST(ProfilePlatformsTest, TeamsFromTheBuiltinProfiles) {
  Result<Config> config = LoadConfig("", BuiltinOptions());
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  const Platform teams = *ParsePlatform("teams");
  ASSERT_TRUE(config->Defines(teams));
  const PlatformConfig& p = config->platform(teams);
  ASSERT_TRUE(p.profile.has_value());
  ASSERT_TRUE(p.profile->oauth2.has_value());
  EXPECT_EQ(p.profile->oauth2->token_url,
            "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token");
  EXPECT_EQ(p.profile->oauth2->scope, "https://api.botframework.com/.default");
  EXPECT_EQ(p.profile->oauth2->refresh_before, Millis(300'000));
  EXPECT_EQ(p.profile->auth_header, "Authorization");
  EXPECT_EQ(p.profile->auth_value.text(), "Bearer {access_token}");
  EXPECT_FALSE(p.profile->SecretUrl());
  EXPECT_EQ(p.profile->ref_pointer, "/id");
  ASSERT_EQ(p.scopes.rules.size(), 5u);
  EXPECT_EQ(p.scopes.rules[0].key, std::vector<ScopeKeyPart>{ScopeKeyPart::kCredential});
  int windows = 0;
  int parks = 0;
  for (const pacing::ScopeRule& rule : p.scopes.rules) {
    windows += rule.window ? 1 : 0;
    parks += rule.park ? 1 : 0;
  }
  EXPECT_EQ(windows, 4);
  EXPECT_EQ(parks, 1);
  EXPECT_TRUE(p.scopes.rules[4].park);     // the 2 s window, the destination's own key
  EXPECT_FALSE(p.scopes.rules[1].window);  // 1,800 per hour: past a window's 1,000
  EXPECT_EQ(config->budget(*pacing::ParseBudgetName("teams_conversation_2s")),
            (Budget{8, 2100, 1}));
  EXPECT_EQ(config->budget(*pacing::ParseBudgetName("teams_app")), (Budget{50, 1000, 1}));

  LoadOptions shipped = BuiltinOptions();
  shipped.profiles_dir = SourceRootForTest() + "/config/profiles";
  Result<Config> from_dir = LoadConfig("", shipped);
  ASSERT_TRUE(from_dir.has_value()) << from_dir.error().ToString();
  EXPECT_EQ(from_dir->budgets, config->budgets);
  ASSERT_TRUE(from_dir->platform(teams).profile.has_value());
  EXPECT_EQ(from_dir->platform(teams).profile->url.text(), p.profile->url.text());
  EXPECT_EQ(from_dir->platform(teams).scopes.rules.size(), 5u);
}

}  // namespace
}  // namespace egress::config
