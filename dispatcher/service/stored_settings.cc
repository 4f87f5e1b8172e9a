#include "dispatcher/service/stored_settings.h"

#include <nlohmann/json.hpp>

namespace egress::service {
namespace {

Status NotParsed(const std::string& key, const std::string& why) {
  return Status::Corruption("stored setting " + key + why);
}

}  // namespace

Result<StoredSettings> ReadStoredSettings(storage::QueueStore& store) {
  StoredSettings out;
  // First: a PutSetting after it moves the version past it, so that the next read sees it.
  auto version = store.SettingsVersion();
  if (!version) {
    return version.error();
  }
  out.version = *version;

  auto overrides = store.ListSettings(std::string(kOverridesPrefix));
  if (!overrides) {
    return overrides.error();
  }
  for (const auto& [key, text] : *overrides) {
    auto parsed = ParseRateLimitSettings(nlohmann::json::parse(text, nullptr, false));
    if (!parsed) {
      return NotParsed(key, ": " + parsed.error().message);
    }
    const std::string tenant = key.substr(kOverridesPrefix.size());
    out.overrides[tenant] = std::move(parsed->enforced);
    if (!parsed->shadow.empty()) {
      out.shadow[tenant] = std::move(parsed->shadow);
    }
  }

  auto quotas = store.ListSettings(std::string(kQuotasPrefix));
  if (!quotas) {
    return quotas.error();
  }
  for (const auto& [key, text] : *quotas) {
    auto parsed = ParseQuotas(nlohmann::json::parse(text, nullptr, false));
    if (!parsed) {
      return NotParsed(key, ": " + parsed.error().message);
    }
    out.quotas[key.substr(kQuotasPrefix.size())] = std::move(*parsed);
  }

  auto credentials = store.ListSettings(std::string(kCredentialsPrefix));
  if (!credentials) {
    return credentials.error();
  }
  for (const auto& [key, text] : *credentials) {
    const std::string rest = key.substr(kCredentialsPrefix.size());
    const size_t sep = rest.find('\x1f');
    if (sep == std::string::npos) {
      return NotParsed(key, " is not a credential");
    }
    auto c = CredentialFromJson(rest.substr(sep + 1), nlohmann::json::parse(text, nullptr, false));
    if (!c) {
      return NotParsed(key, " is not a credential");
    }
    out.credentials.emplace_back(rest.substr(0, sep), std::move(*c));
  }

  auto api_keys = store.ListSettings(std::string(kApiKeysPrefix));
  if (!api_keys) {
    return api_keys.error();
  }
  for (const auto& [key, text] : *api_keys) {
    auto digests = ApiKeysFromSetting(text);
    if (!digests) {
      return NotParsed(key, " is not a list of API key digests");
    }
    out.api_keys[key.substr(kApiKeysPrefix.size())] = std::move(*digests);
  }

  auto pauses = store.ListSettings(std::string(kPausesPrefix));
  if (!pauses) {
    return pauses.error();
  }
  for (const auto& [key, text] : *pauses) {
    auto pause = PauseFromSetting(key, text);
    if (!pause) {
      return pause.error();
    }
    out.pauses.push_back(std::move(*pause));
  }
  return out;
}

}  // namespace egress::service
