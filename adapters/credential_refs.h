#pragma once

#include <optional>
#include <string>

#include "adapters/platform_adapter.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

// Where a credential's secret is read from when the config does not hold it
// (token_file / token_env / secret_file / secret_env; docs/configuration.md).
struct SecretRef {
  enum class Kind { kFile, kEnv };
  Kind kind = Kind::kFile;
  std::string where;  // the file's path or the variable's name: never secret, may be logged

  // "token_file /run/secrets/bot" style text naming the reference (never its value).
  std::string Describe(std::string_view field) const;
};

// A credential's references: `token` for Slack, Discord and LINE, `secret` for webhooks.
struct CredentialRefs {
  std::optional<SecretRef> token;
  std::optional<SecretRef> secret;

  bool empty() const { return !token && !secret; }
};

// The largest secret file read. Default: 64 KiB (a token is at most kMaxTokenBytes).
inline constexpr size_t kMaxSecretFileBytes = 64 << 10;

// The value a reference holds: the file's content or the variable's value, without leading or
// trailing white space. NotFound (missing file or unset variable), IoError, or InvalidArgument
// (empty, too large), each naming the reference and never the value. Blocking (reads a file).
Result<std::string> ReadSecretRef(const SecretRef& ref);

// Fills `credential` (platform already set) from `refs`: the token (checked as
// CheckCredentialToken does) or the webhook secrets (one per line: several while rotating, each
// checked as ParseWebhookSecret does). Errors name the reference, never the value. Blocking.
Status ResolveCredentialRefs(const CredentialRefs& refs, Credential& credential);

}  // namespace egress::adapters
