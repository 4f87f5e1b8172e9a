#include "adapters/webhook_signer.h"

#include <charconv>
#include <cstring>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "dispatcher/base/check.h"

namespace egress::adapters {
namespace {

constexpr size_t kSha256Block = 64;
constexpr size_t kSha256Bytes = 32;
// base64 of 32 bytes: 44 characters, plus the NUL EVP_EncodeBlock writes.
constexpr size_t kBase64MacChars = 4 * ((kSha256Bytes + 2) / 3);

// SHA-256, fetched once. OpenSSL 3's one-shot HMAC() fetches the digest and builds a MAC
// context on every call, ~23k instructions per signature against ~5k for the hashing itself.
const EVP_MD* Sha256() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
  EGRESS_CHECK(md != nullptr);
  return md;
}

// One digest context per thread, reused: each signature copies a keyed state into it.
EVP_MD_CTX* WorkContext() {
  struct Owner {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Owner() { EVP_MD_CTX_free(ctx); }
  };
  thread_local Owner owner;
  EGRESS_CHECK(owner.ctx != nullptr);
  return owner.ctx;
}

// A new SHA-256 context that has absorbed the 64-byte block k0 ^ `pad`.
EVP_MD_CTX* PaddedKeyState(const unsigned char (&k0)[kSha256Block], unsigned char pad) {
  unsigned char block[kSha256Block];
  for (size_t i = 0; i < kSha256Block; ++i) {
    block[i] = k0[i] ^ pad;
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = ctx != nullptr && EVP_DigestInit_ex2(ctx, Sha256(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx, block, sizeof(block)) == 1;
  OPENSSL_cleanse(block, sizeof(block));
  EGRESS_CHECK(ok);  // SHA-256 over memory cannot fail short of a broken OpenSSL
  return ctx;
}

}  // namespace

// One key's HMAC-SHA256 (RFC 2104) states after the inner and the outer padded key block.
struct WebhookSigner::Keyed {
  EVP_MD_CTX* inner = nullptr;
  EVP_MD_CTX* outer = nullptr;
  ~Keyed() {
    EVP_MD_CTX_free(inner);  // frees (and clears) the provider's state
    EVP_MD_CTX_free(outer);
  }
};

WebhookSigner::WebhookSigner(std::span<const WebhookKey> keys)
    : keys_(new Keyed[keys.size()]), count_(keys.size()) {
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i].bytes;
    unsigned char k0[kSha256Block] = {};
    if (key.size() > kSha256Block) {  // a longer key is hashed first
      EVP_MD_CTX* ctx = WorkContext();
      EGRESS_CHECK(EVP_DigestInit_ex2(ctx, Sha256(), nullptr) == 1 &&
                   EVP_DigestUpdate(ctx, key.data(), key.size()) == 1 &&
                   EVP_DigestFinal_ex(ctx, k0, nullptr) == 1);
    } else {
      std::memcpy(k0, key.data(), key.size());
    }
    keys_[i].inner = PaddedKeyState(k0, 0x36);
    keys_[i].outer = PaddedKeyState(k0, 0x5c);
    OPENSSL_cleanse(k0, sizeof(k0));
  }
}

WebhookSigner::~WebhookSigner() = default;

size_t WebhookSigner::key_count() const { return count_; }

Result<WebhookSignatureHeaders> WebhookSigner::Sign(std::string_view id, WallTime attempt_time,
                                                    std::string_view body) const {
  if (count_ == 0) {
    return Status::InvalidArgument("no webhook signing key");
  }
  if (id.empty() || id.find('.') != std::string_view::npos) {
    return Status::InvalidArgument("webhook-id must be non-empty and contain no '.'");
  }
  const int64_t timestamp = WebhookTimestamp(attempt_time);
  WebhookSignatureHeaders headers{std::string(id), std::to_string(timestamp), ""};
  Append(id, timestamp, body, &headers.signature);
  return headers;
}

void WebhookSigner::Append(std::string_view id, int64_t timestamp, std::string_view body,
                           std::string* out) const {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), timestamp);
  const std::string_view ts(digits, static_cast<size_t>(end - digits));
  const std::string_view parts[] = {id, ".", ts, ".", body};
  out->reserve(out->size() + count_ * (1 + kWebhookSignatureVersion.size() + kBase64MacChars));
  EVP_MD_CTX* ctx = WorkContext();
  for (size_t k = 0; k < count_; ++k) {
    unsigned char inner[kSha256Bytes];
    unsigned char mac[kSha256Bytes];
    // Copying a keyed state costs a small allocation; hashing the key blocks again would cost
    // two SHA-256 compressions.
    bool ok = EVP_MD_CTX_copy_ex(ctx, keys_[k].inner) == 1;
    for (std::string_view part : parts) {
      ok = ok && EVP_DigestUpdate(ctx, part.data(), part.size()) == 1;
    }
    ok = ok && EVP_DigestFinal_ex(ctx, inner, nullptr) == 1 &&
         EVP_MD_CTX_copy_ex(ctx, keys_[k].outer) == 1 &&
         EVP_DigestUpdate(ctx, inner, sizeof(inner)) == 1 &&
         EVP_DigestFinal_ex(ctx, mac, nullptr) == 1;
    EGRESS_CHECK(ok);
    char b64[kBase64MacChars + 1];
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64), mac, sizeof(mac));
    if (k > 0) {
      out->push_back(' ');
    }
    out->append(kWebhookSignatureVersion);
    out->append(b64, static_cast<size_t>(n));
  }
}

}  // namespace egress::adapters
