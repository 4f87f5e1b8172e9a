#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "adapters/platform_adapter.h"
#include "config/tenant_config.h"
#include "dispatcher/base/result.h"
#include "dispatcher/service/pause_book.h"
#include "dispatcher/service/tenant_settings.h"
#include "storage/queue_store.h"

namespace egress::service {

// Every setting the admin API keeps in the store (QueueStore::PutSetting; the keys and record
// kinds are tenant_settings.h's), parsed: what a node puts in force at start and again whenever
// the store's settings changed (Service::ApplySettings).
struct StoredSettings {
  // The store's SettingsVersion, read before the settings: they are at least this new.
  uint64_t version = 0;
  std::map<std::string, BudgetOverrides> overrides;  // "overrides/<tenant>", by tenant
  std::map<std::string, BudgetOverrides> shadow;     // its shadow entries, by tenant
  std::map<std::string, config::QuotaMap> quotas;    // "quotas/<tenant>", by tenant
  // "credentials/<tenant>\x1f<name>": (tenant, credential), in key order.
  std::vector<std::pair<std::string, adapters::Credential>> credentials;
  // "api_keys/<tenant>": each tenant's digests (an empty list: the tenant has no key).
  std::map<std::string, std::vector<std::string>> api_keys;
  std::vector<Pause> pauses;  // "pauses/<id>"
};

// Reads the version, then every prefix, and parses each setting. Blocks on the store: call it
// from the storage pool (or at start). Errors: the store's (Unavailable while it cannot be
// reached; a sealed setting that does not open), or Corruption naming the first setting that
// does not parse, by its key (never its value, which may hold a secret).
Result<StoredSettings> ReadStoredSettings(storage::QueueStore& store);

}  // namespace egress::service
