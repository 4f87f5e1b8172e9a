#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "adapters/api_key.h"
#include "adapters/credential_token.h"
#include "adapters/webhook_signature.h"
#include "config/toml_sections.h"

namespace egress::config {
namespace {

constexpr std::string_view kPlatforms = "slack, discord, line or webhook";

// Secrets are checked without ever echoing them: the message carries ParseWebhookSecret's
// reason, which names the problem, never the value.
Status CheckWebhookSecret(const TomlFields& fields, const toml::node& node, std::string field,
                          const std::string& secret) {
  Result<adapters::WebhookKey> key = adapters::ParseWebhookSecret(secret);
  if (!key) {
    return fields.Error(node, field, fmt::format("<redacted>: {}", key.error().message()));
  }
  return Status::Ok();
}

Status ReadWebhookSecrets(const TomlFields& fields, adapters::Credential& out) {
  const bool one = fields.Has("secret");
  const bool many = fields.Has("secrets");
  if (fields.Has("token")) {
    return fields.Error(*fields.table().get("token"), fields.Field("token"),
                        "webhook credentials sign with secret or secrets, not a token");
  }
  if (one == many) {
    return fields.TableError(fields.Field("secret"),
                             one ? "set secret or secrets, not both"
                                 : "missing (secret = \"whsec_...\" or secrets = [...])");
  }
  if (one) {
    std::string secret;
    if (Status status = fields.ReadSecret("secret", secret); !status.ok()) {
      return status;
    }
    out.secrets = {secret};
    return CheckWebhookSecret(fields, *fields.table().get("secret"), fields.Field("secret"),
                              secret);
  }
  if (Status status = fields.ReadSecretList("secrets", out.secrets); !status.ok()) {
    return status;
  }
  const toml::array& list = *fields.table().get("secrets")->as_array();
  for (size_t i = 0; i < out.secrets.size(); ++i) {
    Status status = CheckWebhookSecret(
        fields, *list.get(i), fmt::format("{}[{}]", fields.Field("secrets"), i), out.secrets[i]);
    if (!status.ok()) {
      return status;
    }
  }
  return Status::Ok();
}

Status ReadCredential(const TomlFields& fields, std::string_view name, adapters::Credential& out) {
  Status status = fields.CheckKeys({"platform", "token", "secret", "secrets"});
  if (!status.ok()) {
    return status;
  }
  out.name = std::string(name);
  if (!fields.Has("platform")) {
    return fields.TableError(fields.Field("platform"), fmt::format("missing ({})", kPlatforms));
  }
  if (status = fields.ReadString("platform", out.platform); !status.ok()) {
    return status;
  }
  if (out.platform == "webhook") {
    return ReadWebhookSecrets(fields, out);
  }
  if (out.platform != "slack" && out.platform != "discord" && out.platform != "line") {
    return fields.Error(*fields.table().get("platform"), fields.Field("platform"),
                        fmt::format("unknown platform \"{}\" ({})", out.platform, kPlatforms));
  }
  for (std::string_view key : {"secret", "secrets"}) {
    if (fields.Has(key)) {
      return fields.Error(
          *fields.table().get(key), fields.Field(key),
          fmt::format("{} credentials use a token, not a signing secret", out.platform));
    }
  }
  if (!fields.Has("token")) {
    return fields.TableError(fields.Field("token"),
                             fmt::format("missing (the {} token)", out.platform));
  }
  if (status = fields.ReadSecret("token", out.token); !status.ok()) {
    return status;
  }
  // Named without its value, as the secrets above.
  if (status = adapters::CheckCredentialToken(out.token); !status.ok()) {
    return fields.Error(*fields.table().get("token"), fields.Field("token"),
                        fmt::format("<redacted>: {}", status.message()));
  }
  return Status::Ok();
}

// api_keys: each entry the key or "sha256:<hex>", kept as its digest only. A key may appear once
// in the whole file: in one tenant, once. Errors name the entry, never its value.
Status ReadApiKeys(const TomlFields& fields, const std::string& tenant,
                   const std::map<std::string, TenantConfig>& tenants, TenantConfig& out) {
  std::vector<std::string> entries;
  if (Status status = fields.ReadSecretList("api_keys", entries); !status.ok()) {
    return status;
  }
  if (entries.empty()) {
    return Status::Ok();
  }
  const toml::array& list = *fields.table().get("api_keys")->as_array();
  std::vector<std::string> digests;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string field = fmt::format("{}[{}]", fields.Field("api_keys"), i);
    Result<std::string> digest = adapters::ParseApiKeyEntry(entries[i]);
    if (!digest) {
      return fields.Error(*list.get(i), field,
                          fmt::format("<redacted>: {}", digest.error().message()));
    }
    if (std::find(digests.begin(), digests.end(), *digest) != digests.end()) {
      return fields.Error(*list.get(i), field, "<redacted>: the same key twice");
    }
    for (const auto& [other, config] : tenants) {
      const auto& theirs = config.api_key_digests;
      if (other != tenant && std::find(theirs.begin(), theirs.end(), *digest) != theirs.end()) {
        return fields.Error(
            *list.get(i), field,
            fmt::format("<redacted>: already a key of tenant \"{}\"; a key belongs to one "
                        "tenant only",
                        other));
      }
    }
    digests.push_back(std::move(*digest));
  }
  out.api_key_digests = std::move(digests);
  return Status::Ok();
}

Status ReadTenant(const TomlFields& fields, const std::string& tenant,
                  const std::map<std::string, TenantConfig>& tenants, TenantConfig& out) {
  Status status = fields.CheckKeys({"weight", "credentials", "api_keys"});
  if (!status.ok()) {
    return status;
  }
  int64_t weight = out.weight;
  if (status = fields.ReadInt("weight", 1, 1'000'000, weight); !status.ok()) {
    return status;
  }
  out.weight = static_cast<uint32_t>(weight);
  if (status = ReadApiKeys(fields, tenant, tenants, out); !status.ok()) {
    return status;
  }
  Result<std::optional<TomlFields>> credentials = fields.Table("credentials");
  if (!credentials) {
    return credentials.error();
  }
  if (!credentials->has_value()) {
    return Status::Ok();
  }
  return (*credentials)->ForEachTable([&](std::string_view name, const TomlFields& sub) {
    adapters::Credential credential;
    Status read = ReadCredential(sub, name, credential);
    if (read.ok()) {
      out.credentials[credential.name] = std::move(credential);
    }
    return read;
  });
}

}  // namespace

Status ReadTenantsSection(const TomlFields& tenants, Config& out) {
  return tenants.ForEachTable([&](std::string_view name, const TomlFields& fields) -> Status {
    if (name.empty()) {
      return tenants.Error(fields.table(), fields.prefix(), "a tenant id must not be empty");
    }
    const std::string tenant(name);
    TenantConfig& config = out.tenants[tenant];
    return ReadTenant(fields, tenant, out.tenants, config);
  });
}

}  // namespace egress::config
