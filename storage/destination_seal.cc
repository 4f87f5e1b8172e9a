#include "storage/destination_seal.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "dispatcher/base/hex.h"
#include "dispatcher/base/redact.h"
#include "storage/aes_gcm.h"
#include "storage/delivery.h"

namespace egress::storage {
namespace {

// Associated data: a sealed destination opens only as a destination.
constexpr std::string_view kAad = "relay-egress destination";

bool Hmac256(const unsigned char* key, size_t key_len, std::string_view data, unsigned char* out) {
  unsigned int len = 0;
  return HMAC(EVP_sha256(), key, static_cast<int>(key_len),
              reinterpret_cast<const unsigned char*>(data.data()), data.size(), out,
              &len) != nullptr &&
         len == 32;
}

// Splits a destination key into its first three parts (with their separators) and the
// destination; false when it has fewer than four parts.
bool SplitLast(std::string_view key, std::string_view& head, std::string_view& destination) {
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    pos = key.find('\x1f', pos);
    if (pos == std::string_view::npos) {
      return false;
    }
    ++pos;
  }
  head = key.substr(0, pos);
  destination = key.substr(pos);
  return true;
}

// Which destinations are looked at for a secret: the bytes MayNeedRedaction looked for when stores
// were first sealed (a control byte, / ? @ # :). A destination's stored key follows from it, so
// it must not change without a new seal marker and a pass that seals again (RocksDB) and a
// migration (PostgreSQL): a record stored under its plain key would no longer be found. So a
// destination whose only secret-bearing byte is a '%' (a percent-encoded bot token's ':', which
// MayNeedRedaction now counts) is stored as it is, as before; it is redacted wherever it is shown.
bool MayHoldSecretAtRest(std::string_view destination) {
  for (char c : destination) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '/' || c == '?' || c == '@' || c == '#' || c == ':') {
      return true;
    }
  }
  return false;
}

}  // namespace

DestinationSeal::DestinationSeal(const std::optional<SecretsKey>& key) {
  if (!key) {
    return;
  }
  const unsigned char* master = key->bytes().data();
  has_key_ = Hmac256(master, SecretsKey::kBytes, "relay-egress destination seal key", enc_key_) &&
             Hmac256(master, SecretsKey::kBytes, "relay-egress destination nonce key", nonce_key_);
}

bool DestinationSeal::HoldsSecret(std::string_view destination) {
  return destination.starts_with(kSealedDestinationPrefix) ||
         (MayHoldSecretAtRest(destination) && RedactDestination(destination) != destination);
}

std::string DestinationSeal::Stored(std::string_view destination) const {
  if (!has_key_ || !HoldsSecret(destination)) {
    return std::string(destination);
  }
  unsigned char mac[32];
  std::string sealed;
  if (Hmac256(nonce_key_, sizeof nonce_key_, destination, mac)) {
    const std::string nonce(reinterpret_cast<const char*>(mac), kAesGcmNonceBytes);
    sealed = nonce;
    if (!AesGcmSeal(enc_key_, nonce, kAad, destination, sealed)) {
      sealed.clear();
    }
  }
  // OpenSSL failing on memory alone: keep the destination (it is also protected by the store's
  // file modes) rather than lose the delivery.
  if (sealed.empty()) {
    return std::string(destination);
  }
  return std::string(kSealedDestinationPrefix) + HexEncode(sealed);
}

Result<std::string> DestinationSeal::Open(std::string_view stored) const {
  if (!stored.starts_with(kSealedDestinationPrefix)) {
    return std::string(stored);
  }
  if (!has_key_) {
    return Status::FailedPrecondition(
        "a sealed destination needs the secrets key (server.secrets_key_file)");
  }
  std::optional<std::string> bytes = HexDecode(stored.substr(kSealedDestinationPrefix.size()));
  std::optional<std::string> opened;
  if (bytes && bytes->size() >= kAesGcmNonceBytes + kAesGcmTagBytes) {
    opened = AesGcmOpen(enc_key_, std::string_view(*bytes).substr(0, kAesGcmNonceBytes), kAad,
                        std::string_view(*bytes).substr(kAesGcmNonceBytes));
  }
  if (!opened) {
    return Status::Corruption(
        "a sealed destination does not open with the secrets key (a different key, or the "
        "record was altered)");
  }
  return std::move(*opened);
}

std::string DestinationSeal::StoredKey(std::string_view destination_key) const {
  std::string_view head;
  std::string_view destination;
  if (!has_key_ || !SplitLast(destination_key, head, destination) || !HoldsSecret(destination)) {
    return std::string(destination_key);
  }
  return std::string(head) + Stored(destination);
}

Result<std::string> DestinationSeal::OpenKey(std::string_view stored_key) const {
  std::string_view head;
  std::string_view destination;
  if (!SplitLast(stored_key, head, destination) ||
      !destination.starts_with(kSealedDestinationPrefix)) {
    return std::string(stored_key);
  }
  Result<std::string> opened = Open(destination);
  if (!opened) {
    return opened.error();
  }
  return std::string(head) + *opened;
}

}  // namespace egress::storage
