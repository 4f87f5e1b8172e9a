// The bounds of the bytes tenants keep in the store: server.tenant_max_stored_bytes (the
// deployment's) and [tenants.<tenant>] max_stored_bytes; and of the memory the embedded store
// holds: [store] memtable_mb and block_cache_mb (docs/configuration.md).

#include <gtest/gtest.h>

#include "config/load_config.h"
#include "tests/config/config_files.h"

namespace egress::config {
namespace {

// Verifies that both keys are unbounded (0) by default, that each reaches its field (the
// largest allowed included), and that 0 for a tenant reads as "the deployment's".
TEST(StorageBoundConfigTest, ReadsDeploymentAndTenantBounds) {
  ConfigFiles files;
  Result<Config> defaults = files.Load("[tenants.acme]\nweight = 2\n");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().ToString();
  EXPECT_EQ(defaults->server.tenant_max_stored_bytes, 0u);
  EXPECT_EQ(defaults->tenants.at("acme").max_stored_bytes, 0u);

  Result<Config> config = files.Load(
      "[server]\n"
      "tenant_max_stored_bytes = 10737418240\n"
      "[tenants.acme]\n"
      "max_stored_bytes = 1048576\n"
      "[tenants.globex]\n"
      "max_stored_bytes = 1125899906842624\n"
      "[tenants.initech]\n"
      "max_stored_bytes = 0\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.tenant_max_stored_bytes, 10'737'418'240u);
  EXPECT_EQ(config->tenants.at("acme").max_stored_bytes, 1'048'576u);
  EXPECT_EQ(config->tenants.at("globex").max_stored_bytes, uint64_t{1} << 50);
  EXPECT_EQ(config->tenants.at("initech").max_stored_bytes, 0u);
}

// Verifies that the deployment's bound can be set from the environment like every [server] key.
TEST(StorageBoundConfigTest, ReadsTheDeploymentBoundFromTheEnvironment) {
  ConfigFiles files;
  Result<Config> config =
      files.Load("", {{"RELAY_EGRESS_SERVER_TENANT_MAX_STORED_BYTES", "5000000"}});
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->server.tenant_max_stored_bytes, 5'000'000u);
}

// Verifies that negative, absurd (over 1 PiB) and mistyped bounds are refused, each naming its
// key and line.
TEST(StorageBoundConfigTest, RefusesNegativeAbsurdAndMistypedBounds) {
  ConfigFiles files;
  const std::string range = "must be an integer from 0 to 1125899906842624";
  const std::pair<const char*, std::string> cases[] = {
      {"[server]\ntenant_max_stored_bytes = -1\n", "2: server.tenant_max_stored_bytes: " + range},
      {"[server]\ntenant_max_stored_bytes = 1125899906842625\n",
       "2: server.tenant_max_stored_bytes: " + range},
      {"[server]\ntenant_max_stored_bytes = \"10GiB\"\n",
       "2: server.tenant_max_stored_bytes: " + range},
      {"[tenants.acme]\nmax_stored_bytes = -5\n", "2: tenants.acme.max_stored_bytes: " + range},
      {"[tenants.acme]\nweight = 1\nmax_stored_bytes = 9223372036854775807\n",
       "3: tenants.acme.max_stored_bytes: " + range},
      {"[tenants.acme]\nmax_stored_bytes = 1.5e9\n", "2: tenants.acme.max_stored_bytes: " + range},
  };
  for (const auto& [text, error] : cases) {
    SCOPED_TRACE(text);
    Result<Config> config = files.Load(text);
    ASSERT_FALSE(config.has_value());
    EXPECT_EQ(config.error().code(), Status::Code::kInvalidArgument);
    EXPECT_EQ(config.error().message(), files.main_path() + ":" + error);
  }
}

// Verifies that [store] memtable_mb and block_cache_mb default to 32 and 8, are read (also from
// the environment), and that values out of range are refused naming the key.
TEST(StorageBoundConfigTest, ReadsTheStoreMemoryBounds) {
  ConfigFiles files;
  Result<Config> defaults = files.Load("");
  ASSERT_TRUE(defaults.has_value()) << defaults.error().ToString();
  EXPECT_EQ(defaults->store.memtable_mb, 32);
  EXPECT_EQ(defaults->store.block_cache_mb, 8);

  Result<Config> config = files.Load("[store]\nmemtable_mb = 16\nblock_cache_mb = 0\n");
  ASSERT_TRUE(config.has_value()) << config.error().ToString();
  EXPECT_EQ(config->store.memtable_mb, 16);
  EXPECT_EQ(config->store.block_cache_mb, 0);
  Result<Config> env = files.Load("", {{"RELAY_EGRESS_STORE_MEMTABLE_MB", "4096"}});
  ASSERT_TRUE(env.has_value()) << env.error().ToString();
  EXPECT_EQ(env->store.memtable_mb, 4096);

  const std::pair<const char*, const char*> refused[] = {
      {"[store]\nmemtable_mb = 15\n", "2: store.memtable_mb: must be an integer from 16 to 4096"},
      {"[store]\nmemtable_mb = 4097\n", "2: store.memtable_mb: must be an integer from 16 to 4096"},
      {"[store]\nblock_cache_mb = -1\n",
       "2: store.block_cache_mb: must be an integer from 0 to 65536"},
  };
  for (const auto& [text, message] : refused) {
    Result<Config> r = files.Load(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_NE(r.error().message().find(message), std::string::npos) << r.error().ToString();
  }
}

}  // namespace
}  // namespace egress::config
