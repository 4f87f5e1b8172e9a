#include "storage/setting_seal.h"

#include <openssl/rand.h>

#include "dispatcher/base/redact.h"
#include "storage/aes_gcm.h"

namespace egress::storage {

bool IsSealed(std::string_view value) { return !value.empty() && value[0] == kSealVersion; }

Result<std::string> SealSetting(const SecretsKey& key, std::string_view setting_key,
                                std::string_view plaintext) {
  std::string out(1 + kAesGcmNonceBytes, '\0');
  out[0] = kSealVersion;
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()) + 1, kAesGcmNonceBytes) != 1) {
    return Status::IoError("no random bytes for a nonce");
  }
  const std::string nonce = out.substr(1);
  out.reserve(out.size() + plaintext.size() + kAesGcmTagBytes);
  if (!AesGcmSeal(key.bytes().data(), nonce, setting_key, plaintext, out)) {
    return Status::IoError("sealing a setting failed");
  }
  return out;
}

Result<std::string> OpenSetting(const SecretsKey& key, std::string_view setting_key,
                                std::string_view sealed) {
  std::optional<std::string> opened;
  if (IsSealed(sealed) && sealed.size() >= 1 + kAesGcmNonceBytes + kAesGcmTagBytes) {
    opened = AesGcmOpen(key.bytes().data(), sealed.substr(1, kAesGcmNonceBytes), setting_key,
                        sealed.substr(1 + kAesGcmNonceBytes));
  }
  if (!opened) {
    return Status::Corruption("setting " + RedactText(setting_key) +
                              ": does not open with the secrets key (a different key, or the "
                              "record was altered)");
  }
  return std::move(*opened);
}

}  // namespace egress::storage
