#include "adapters/credential_refs.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "adapters/credential_token.h"
#include "adapters/webhook_signature.h"

namespace egress::adapters {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string Trim(std::string text) {
  size_t end = text.size();
  while (end > 0 && IsSpace(text[end - 1])) {
    --end;
  }
  size_t begin = 0;
  while (begin < end && IsSpace(text[begin])) {
    ++begin;
  }
  return text.substr(begin, end - begin);
}

Result<std::string> ReadSmallFile(const std::string& path, const std::string& what) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    return err == ENOENT ? Status::NotFound(what + ": no such file")
                         : Status::IoError(fmt::format("{}: {}", what, std::strerror(err)));
  }
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    out.append(buf, n);
    if (out.size() > kMaxSecretFileBytes) {
      std::fclose(f);
      return Status::InvalidArgument(
          fmt::format("{}: larger than {} bytes", what, kMaxSecretFileBytes));
    }
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) {
    return Status::IoError(what + ": read failed");
  }
  return out;
}

}  // namespace

std::string SecretRef::Describe(std::string_view field) const {
  return fmt::format("{}_{} {}", field, kind == Kind::kFile ? "file" : "env", where);
}

Result<std::string> ReadSecretRef(const SecretRef& ref) {
  const std::string what =
      ref.kind == SecretRef::Kind::kFile ? "file " + ref.where : "variable " + ref.where;
  std::string value;
  if (ref.kind == SecretRef::Kind::kFile) {
    Result<std::string> text = ReadSmallFile(ref.where, what);
    if (!text) {
      return text.error();
    }
    value = std::move(*text);
  } else {
    const char* env = std::getenv(ref.where.c_str());
    if (env == nullptr) {
      return Status::NotFound(what + ": not set");
    }
    value = env;
    if (value.size() > kMaxSecretFileBytes) {
      return Status::InvalidArgument(
          fmt::format("{}: larger than {} bytes", what, kMaxSecretFileBytes));
    }
  }
  value = Trim(std::move(value));
  if (value.empty()) {
    return Status::InvalidArgument(what + ": empty");
  }
  return value;
}

Status ResolveCredentialRefs(const CredentialRefs& refs, Credential& credential) {
  if (refs.token) {
    Result<std::string> token = ReadSecretRef(*refs.token);
    if (!token) {
      return token.error();
    }
    if (Status s = CheckCredentialToken(*token); !s.ok()) {
      return Status::InvalidArgument(
          fmt::format("{}: <redacted>: {}", refs.token->Describe("token"), s.message()));
    }
    credential.token = std::move(*token);
  }
  if (refs.secret) {
    Result<std::string> text = ReadSecretRef(*refs.secret);
    if (!text) {
      return text.error();
    }
    std::vector<std::string> secrets;
    size_t pos = 0;
    while (pos < text->size()) {
      size_t end = text->find('\n', pos);
      if (end == std::string::npos) {
        end = text->size();
      }
      std::string line = Trim(text->substr(pos, end - pos));
      pos = end + 1;
      if (line.empty()) {
        continue;
      }
      if (Result<WebhookKey> key = ParseWebhookSecret(line); !key) {
        return Status::InvalidArgument(fmt::format("{}: line {}: <redacted>: {}",
                                                   refs.secret->Describe("secret"),
                                                   secrets.size() + 1, key.error().message()));
      }
      secrets.push_back(std::move(line));
    }
    credential.secrets = std::move(secrets);
  }
  return Status::Ok();
}

}  // namespace egress::adapters
