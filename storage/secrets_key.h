#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"

namespace egress::storage {

// The key that seals secret settings at rest (setting_seal.h): 32 random bytes. Written as 64
// hex digits or as the standard base64 of the 32 bytes (44 characters with its padding); white
// space around it (a trailing newline) is ignored. A secret: never log it.
class SecretsKey {
 public:
  static constexpr size_t kBytes = 32;

  // InvalidArgument saying which form was expected, never echoing the text.
  static Result<SecretsKey> Parse(std::string_view text);
  // 32 bytes from OpenSSL's RAND_bytes; IoError when it fails.
  static Result<SecretsKey> Generate();

  const std::array<uint8_t, kBytes>& bytes() const { return bytes_; }
  // 64 lowercase hex digits: the form written to a generated key file.
  std::string Hex() const;

 private:
  std::array<uint8_t, kBytes> bytes_{};
};

// Where the key came from, for the start-up log line (never the key).
enum class SecretsKeySource { kFile, kEnv, kDataDirFile, kGenerated };

struct LoadedSecretsKey {
  SecretsKey key;
  SecretsKeySource source;
  std::string path;  // the file read or written; empty for kEnv
};

// The key in this order: `key_file` when not empty (server.secrets_key_file), else `env_text`
// when not empty (RELAY_EGRESS_SECRETS_KEY), else `data_dir`/secrets.key when it exists, else a
// new key written there (mode 0600, the directory created 0700 first). Errors name the file or
// the variable and what is wrong with it, never the key. Blocking (file I/O).
Result<LoadedSecretsKey> LoadOrCreateSecretsKey(const std::string& key_file,
                                                const std::string& env_text,
                                                const std::string& data_dir);

// The name of the generated key file inside the data directory.
inline constexpr std::string_view kSecretsKeyFileName = "secrets.key";

}  // namespace egress::storage
