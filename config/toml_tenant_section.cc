#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "adapters/api_key.h"
#include "adapters/attempt_reports.h"
#include "adapters/client_certificate.h"
#include "adapters/credential_token.h"
#include "adapters/webhook_signature.h"
#include "config/toml_sections.h"

namespace egress::config {
namespace {

// The platforms a credential may name: the compiled-in four and the profile platforms loaded.
std::string KnownPlatforms(const std::vector<Platform>& platforms) {
  std::string names;
  for (const Platform p : platforms) {
    names += names.empty() ? "" : ", ";
    names += PlatformString(p);
  }
  return names;
}

// OAuth2 client credentials (a profile platform with [oauth2]): client_id and client_secret.
Status ReadClientCredentials(const TomlFields& fields, adapters::Credential& out) {
  for (std::string_view key :
       {"token", "token_file", "token_env", "secret", "secrets", "secret_file", "secret_env"}) {
    if (fields.Has(key)) {
      return fields.Error(*fields.table().get(key), fields.Field(key),
                          "a credential with a client_id uses client_secret, not a token");
    }
  }
  if (Status status = fields.ReadString("client_id", out.client_id); !status.ok()) {
    return status;
  }
  if (out.client_id.empty() || out.client_id.size() > 256) {
    return fields.Error(*fields.table().get("client_id"), fields.Field("client_id"),
                        "must be 1 to 256 bytes");
  }
  if (!fields.Has("client_secret")) {
    return fields.TableError(fields.Field("client_secret"), "missing (goes with client_id)");
  }
  if (Status status = fields.ReadSecret("client_secret", out.client_secret); !status.ok()) {
    return status;
  }
  if (out.client_secret.size() > 1024) {
    return fields.Error(*fields.table().get("client_secret"), fields.Field("client_secret"),
                        "<redacted>: longer than 1024 bytes");
  }
  return Status::Ok();
}

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

// Reads the referenced value into `out` (at load; SIGHUP reads it again), the error naming the
// field and the reference, never the value.
Status ResolveRefs(const TomlFields& fields, std::string_view key,
                   const adapters::CredentialRefs& refs, adapters::Credential& out) {
  if (Status s = adapters::ResolveCredentialRefs(refs, out); !s.ok()) {
    return fields.Error(*fields.table().get(key), fields.Field(key), s.message());
  }
  return Status::Ok();
}

Status ReadWebhookSecrets(const TomlFields& fields, adapters::Credential& out,
                          adapters::CredentialRefs& refs) {
  const bool one = fields.Has("secret");
  const bool many = fields.Has("secrets");
  for (std::string_view key : {"token", "token_file", "token_env"}) {
    if (fields.Has(key)) {
      return fields.Error(*fields.table().get(key), fields.Field(key),
                          "webhook credentials sign with secret or secrets, not a token");
    }
  }
  if (Status s = ReadSecretRefField(fields, "secret", refs.secret); !s.ok()) {
    return s;
  }
  if (refs.secret) {
    if (one || many) {
      return fields.TableError(fields.Field("secret"),
                               "set exactly one of secret, secrets, secret_file or secret_env");
    }
    return ResolveRefs(
        fields,
        refs.secret->kind == adapters::SecretRef::Kind::kFile ? "secret_file" : "secret_env", refs,
        out);
  }
  if (one == many) {
    return fields.TableError(fields.Field("secret"),
                             one ? "set secret or secrets, not both"
                                 : "missing (secret = \"whsec_...\", secrets = [...], "
                                   "secret_file or secret_env)");
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

// client_cert_file and client_key_file (mTLS): both or neither, checked now
// (adapters::CheckClientCertificate: a world-readable key is refused), errors naming the path,
// never the key's content.
Status ReadClientCertificate(const TomlFields& fields, adapters::Credential& out) {
  if (Status s = fields.ReadString("client_cert_file", out.client_cert_file); !s.ok()) {
    return s;
  }
  if (Status s = fields.ReadString("client_key_file", out.client_key_file); !s.ok()) {
    return s;
  }
  if (out.client_cert_file.empty() && out.client_key_file.empty()) {
    return Status::Ok();
  }
  for (std::string_view key : {"client_cert_file", "client_key_file"}) {
    const std::string& value =
        key == "client_cert_file" ? out.client_cert_file : out.client_key_file;
    if (value.empty()) {
      return fields.TableError(
          fields.Field(key),
          "missing (client_cert_file and client_key_file go together, neither empty)");
    }
  }
  if (Status s = adapters::CheckClientCertificate(out.client_cert_file, out.client_key_file);
      !s.ok()) {
    return fields.Error(*fields.table().get("client_key_file"), fields.Field("client_key_file"),
                        s.message());
  }
  return Status::Ok();
}

Status ReadCredential(const TomlFields& fields, const std::vector<Platform>& platforms,
                      std::string_view name, adapters::Credential& out,
                      adapters::CredentialRefs& refs) {
  Status status = fields.CheckKeys({"platform", "token", "secret", "secrets", "token_file",
                                    "token_env", "secret_file", "secret_env", "client_cert_file",
                                    "client_key_file", "client_id", "client_secret"});
  if (!status.ok()) {
    return status;
  }
  out.name = std::string(name);
  if (status = ReadClientCertificate(fields, out); !status.ok()) {
    return status;
  }
  if (!fields.Has("platform")) {
    return fields.TableError(fields.Field("platform"),
                             fmt::format("missing ({})", KnownPlatforms(platforms)));
  }
  if (status = fields.ReadString("platform", out.platform); !status.ok()) {
    return status;
  }
  if (out.platform == "webhook") {
    return ReadWebhookSecrets(fields, out, refs);
  }
  const std::optional<Platform> platform = ParsePlatform(out.platform);
  if (!platform || std::find(platforms.begin(), platforms.end(), *platform) == platforms.end()) {
    return fields.Error(
        *fields.table().get("platform"), fields.Field("platform"),
        fmt::format("unknown platform \"{}\" ({})", adapters::Printable(out.platform, 40),
                    KnownPlatforms(platforms)));
  }
  if (fields.Has("client_id") || fields.Has("client_secret")) {
    if (!fields.Has("client_id")) {
      return fields.TableError(fields.Field("client_id"), "missing (goes with client_secret)");
    }
    return ReadClientCredentials(fields, out);
  }
  for (std::string_view key : {"secret", "secrets", "secret_file", "secret_env"}) {
    if (fields.Has(key)) {
      return fields.Error(
          *fields.table().get(key), fields.Field(key),
          fmt::format("{} credentials use a token, not a signing secret", out.platform));
    }
  }
  if (status = ReadSecretRefField(fields, "token", refs.token); !status.ok()) {
    return status;
  }
  if (refs.token) {
    if (fields.Has("token")) {
      return fields.TableError(fields.Field("token"),
                               "set exactly one of token, token_file or token_env");
    }
    return ResolveRefs(
        fields, refs.token->kind == adapters::SecretRef::Kind::kFile ? "token_file" : "token_env",
        refs, out);
  }
  if (!fields.Has("token")) {
    return fields.TableError(
        fields.Field("token"),
        fmt::format("missing (the {} token: token, token_file or token_env)", out.platform));
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

Status ReadNetworkPolicy(const TomlFields& fields, TenantConfig& out) {
  if (fields.Has("allow_private_networks")) {
    bool allow = false;
    if (Status s = fields.ReadBool("allow_private_networks", allow); !s.ok()) {
      return s;
    }
    out.allow_private_networks = allow;
  }
  if (!fields.Has("allowed_cidrs")) {
    return Status::Ok();
  }
  const toml::node& node = *fields.table().get("allowed_cidrs");
  const toml::array* list = node.as_array();
  if (list == nullptr) {
    return fields.Error(node, fields.Field("allowed_cidrs"),
                        "must be a list of CIDR strings, e.g. [\"10.20.0.0/16\"]");
  }
  out.allowed_cidrs.clear();
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string field = fmt::format("{}[{}]", fields.Field("allowed_cidrs"), i);
    const toml::node& item = *list->get(i);
    const auto* text = item.as_string();
    if (text == nullptr) {
      return fields.Error(item, field, "must be a string such as \"10.20.0.0/16\"");
    }
    Result<adapters::IpNetwork> network = adapters::IpNetwork::Parse(text->get());
    if (!network) {
      return fields.Error(item, field, network.error().message());
    }
    out.allowed_cidrs.push_back(*network);
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
                  const std::map<std::string, TenantConfig>& tenants,
                  const std::vector<Platform>& platforms, TenantConfig& out) {
  Status status = fields.CheckKeys({"weight", "max_in_flight", "credentials", "api_keys",
                                    "allow_private_networks", "allowed_cidrs", "tier", "quotas",
                                    "max_stored_bytes"});
  if (!status.ok()) {
    return status;
  }
  if (fields.Has("tier")) {
    if (status = fields.ReadString("tier", out.tier); !status.ok()) {
      return status;
    }
  }
  if (Result<std::optional<TomlFields>> quotas = fields.Table("quotas"); !quotas) {
    return quotas.error();
  } else if (quotas->has_value()) {
    if (status = ReadQuotasTable(**quotas, out.quotas); !status.ok()) {
      return status;
    }
  }
  if (status = ReadNetworkPolicy(fields, out); !status.ok()) {
    return status;
  }
  int64_t weight = out.weight;
  if (status = fields.ReadInt("weight", 1, 1'000'000, weight); !status.ok()) {
    return status;
  }
  out.weight = static_cast<uint32_t>(weight);
  int64_t max_in_flight = out.max_in_flight;
  if (status = fields.ReadInt("max_in_flight", 1, 100'000, max_in_flight); !status.ok()) {
    return status;
  }
  out.max_in_flight = static_cast<int>(max_in_flight);
  int64_t max_stored_bytes = static_cast<int64_t>(out.max_stored_bytes);
  if (status = fields.ReadInt("max_stored_bytes", 0, kMaxStoredBytesBound, max_stored_bytes);
      !status.ok()) {
    return status;
  }
  out.max_stored_bytes = static_cast<uint64_t>(max_stored_bytes);
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
    adapters::CredentialRefs refs;
    Status read = ReadCredential(sub, platforms, name, credential, refs);
    if (read.ok()) {
      if (!refs.empty()) {
        out.credential_refs[credential.name] = refs;
      }
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
    if (Status s = ReadTenant(fields, tenant, out.tenants, out.Platforms(), config); !s.ok()) {
      return s;
    }
    if (!config.tier.empty() && !out.tiers.contains(config.tier)) {
      std::string known;
      for (const auto& [name, tier] : out.tiers) {
        known += (known.empty() ? "" : ", ") + name;
      }
      return fields.Error(*fields.table().get("tier"), fields.Field("tier"),
                          fmt::format("unknown tier \"{}\" (declared: {})", config.tier,
                                      known.empty() ? "none" : known));
    }
    return Status::Ok();
  });
}

}  // namespace egress::config
