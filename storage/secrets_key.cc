#include "storage/secrets_key.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include "dispatcher/base/hex.h"

namespace egress::storage {
namespace {

namespace fs = std::filesystem;

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::strchr(" \t\r\n", text.front()) != nullptr) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::strchr(" \t\r\n", text.back()) != nullptr) {
    text.remove_suffix(1);
  }
  return text;
}

Result<std::string> ReadKeyFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    return err == ENOENT ? Status::NotFound(path + ": no such file")
                         : Status::IoError(fmt::format("{}: {}", path, std::strerror(err)));
  }
  std::string text(256, '\0');
  const size_t n = std::fread(text.data(), 1, text.size(), f);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) {
    return Status::IoError(path + ": read failed");
  }
  if (n == text.size()) {
    return Status::InvalidArgument(path + ": too long for a secrets key");
  }
  text.resize(n);
  return text;
}

Status WriteNewKeyFile(const std::string& path, const SecretsKey& key) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IoError(fmt::format("{}: {}", path, std::strerror(errno)));
  }
  const std::string text = key.Hex() + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    return Status::IoError(path + ": could not write the secrets key");
  }
  return Status::Ok();
}

}  // namespace

Result<SecretsKey> SecretsKey::Parse(std::string_view text) {
  text = Trim(text);
  SecretsKey key;
  if (text.size() == 2 * kBytes) {
    std::optional<std::string> bytes = HexDecode(text);
    if (!bytes) {
      return Status::InvalidArgument("a 64-character secrets key must be hex digits");
    }
    std::memcpy(key.bytes_.data(), bytes->data(), kBytes);
    return key;
  }
  if (text.size() == 44 && text.back() == '=' && text[42] != '=') {
    unsigned char out[33] = {};
    const int n = EVP_DecodeBlock(out, reinterpret_cast<const unsigned char*>(text.data()), 44);
    // EVP_DecodeBlock counts the padding as zero bytes: 32 bytes + 1 pad = 33.
    bool base64 = n == 33;
    for (char c : text.substr(0, 43)) {
      base64 = base64 && (std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/');
    }
    if (base64) {
      std::memcpy(key.bytes_.data(), out, kBytes);
      return key;
    }
  }
  return Status::InvalidArgument(
      "a secrets key must be 32 bytes written as 64 hex digits or 44 characters of base64");
}

Result<SecretsKey> SecretsKey::Generate() {
  SecretsKey key;
  if (RAND_bytes(key.bytes_.data(), static_cast<int>(kBytes)) != 1) {
    return Status::IoError("no random bytes for a secrets key");
  }
  return key;
}

std::string SecretsKey::Hex() const {
  return HexEncode({reinterpret_cast<const char*>(bytes_.data()), kBytes});
}

Result<LoadedSecretsKey> LoadOrCreateSecretsKey(const std::string& key_file,
                                                const std::string& env_text,
                                                const std::string& data_dir) {
  auto from_file = [](const std::string& path,
                      SecretsKeySource source) -> Result<LoadedSecretsKey> {
    Result<std::string> text = ReadKeyFile(path);
    if (!text) {
      const std::string message = "secrets key file " + text.error().message();
      return text.error().code() == Status::Code::kNotFound ? Status::NotFound(message)
                                                            : Status::IoError(message);
    }
    Result<SecretsKey> key = SecretsKey::Parse(*text);
    if (!key) {
      return Status::InvalidArgument(
          fmt::format("secrets key file {}: {}", path, key.error().message()));
    }
    return LoadedSecretsKey{*key, source, path};
  };
  if (!key_file.empty()) {
    return from_file(key_file, SecretsKeySource::kFile);
  }
  if (!env_text.empty()) {
    Result<SecretsKey> key = SecretsKey::Parse(env_text);
    if (!key) {
      return Status::InvalidArgument("RELAY_EGRESS_SECRETS_KEY: " + key.error().message());
    }
    return LoadedSecretsKey{*key, SecretsKeySource::kEnv, ""};
  }
  const std::string path = (fs::path(data_dir) / kSecretsKeyFileName).string();
  std::error_code ec;
  if (fs::exists(path, ec)) {
    return from_file(path, SecretsKeySource::kDataDirFile);
  }
  fs::create_directories(data_dir, ec);
  if (ec) {
    return Status::IoError(fmt::format("data_dir {}: {}", data_dir, ec.message()));
  }
  ::chmod(data_dir.c_str(), 0700);
  Result<SecretsKey> key = SecretsKey::Generate();
  if (!key) {
    return key.error();
  }
  if (Status s = WriteNewKeyFile(path, *key); !s.ok()) {
    return s;
  }
  return LoadedSecretsKey{*key, SecretsKeySource::kGenerated, path};
}

}  // namespace egress::storage
