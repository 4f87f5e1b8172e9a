#include "config/builtin_profiles.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/config/config_files.h"

namespace egress::config {
namespace {

std::string ReadSource(const std::string& relative) {
  std::ifstream in(SourceRootForTest() + "/" + relative, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Verifies the binary carries each shipped profile byte for byte, and nothing for other names.
TEST(BuiltinProfilesTest, SameTextAsTheShippedFiles) {
  ASSERT_EQ(BuiltinProfileNames().size(), 6u);  // the four, teams and telegram
  for (const std::string_view shipped : BuiltinProfileNames()) {
    const std::string name(shipped);
    SCOPED_TRACE(name);
    const std::string file = ReadSource("config/profiles/" + name + ".toml");
    ASSERT_FALSE(file.empty());
    EXPECT_EQ(BuiltinProfile(name), file);
  }
  EXPECT_TRUE(BuiltinProfile("sms").empty());
  EXPECT_TRUE(BuiltinProfile("").empty());
}

// Verifies that without a profiles_dir a config file needs no profiles/ beside it, and loads
// exactly as with the shipped profiles directory.
TEST(BuiltinProfilesTest, LoadConfigUsesThemWithoutProfilesDir) {
  TempDir dir;
  const std::string main = dir.Sub("relay-egress.toml");
  ConfigFiles::Write(main, "[server]\nlisten = \"127.0.0.1:8686\"\n");
  LoadOptions builtin;
  builtin.environment = [] { return Environment(); };
  builtin.getenv = [](std::string_view) { return std::nullopt; };
  LoadOptions shipped = builtin;
  shipped.profiles_dir = SourceRootForTest() + "/config/profiles";
  Result<Config> a = LoadConfig(main, builtin);
  Result<Config> b = LoadConfig(main, shipped);
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_TRUE(b.has_value()) << b.error().ToString();
  EXPECT_EQ(a->budgets, b->budgets);
  for (int i = 0; i < kBuiltinPlatformCount; ++i) {
    EXPECT_EQ(a->platforms[i].base_url, b->platforms[i].base_url);
    EXPECT_EQ(a->platforms[i].retry.schedule, b->platforms[i].retry.schedule);
    EXPECT_EQ(a->platforms[i].retry.max_attempts, b->platforms[i].retry.max_attempts);
    EXPECT_EQ(a->platforms[i].timeout, b->platforms[i].timeout);
  }
  EXPECT_EQ(a->sources.front(), "(built-in) profiles/slack.toml");
  // No file at all: the built-in profiles and defaults.
  Result<Config> none = LoadConfig("", builtin);
  ASSERT_TRUE(none.has_value()) << none.error().ToString();
  EXPECT_EQ(none->budgets, b->budgets);
  EXPECT_EQ(none->server.listen.ToString(), "127.0.0.1:8686");
}

}  // namespace
}  // namespace egress::config
