#include "storage/setting_seal.h"

#include <memory>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "dispatcher/base/redact.h"

namespace egress::storage {
namespace {

constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* ctx) const { EVP_CIPHER_CTX_free(ctx); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

unsigned char* Bytes(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }

}  // namespace

bool IsSealed(std::string_view value) { return !value.empty() && value[0] == kSealVersion; }

Result<std::string> SealSetting(const SecretsKey& key, std::string_view setting_key,
                                std::string_view plaintext) {
  std::string out(1 + kNonceBytes + plaintext.size() + kTagBytes, '\0');
  out[0] = kSealVersion;
  unsigned char* nonce = Bytes(out) + 1;
  if (RAND_bytes(nonce, kNonceBytes) != 1) {
    return Status::IoError("no random bytes for a nonce");
  }
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  int final_len = 0;
  unsigned char* body = nonce + kNonceBytes;
  const bool ok =
      ctx != nullptr &&
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, key.bytes().data(), nonce) == 1 &&
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, Bytes(setting_key),
                        static_cast<int>(setting_key.size())) == 1 &&
      EVP_EncryptUpdate(ctx.get(), body, &len, Bytes(plaintext),
                        static_cast<int>(plaintext.size())) == 1 &&
      EVP_EncryptFinal_ex(ctx.get(), body + len, &final_len) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes, body + plaintext.size()) == 1;
  if (!ok) {
    return Status::IoError("sealing a setting failed");
  }
  return out;
}

Result<std::string> OpenSetting(const SecretsKey& key, std::string_view setting_key,
                                std::string_view sealed) {
  auto fail = [&] {
    return Status::Corruption("setting " + RedactText(setting_key) +
                              ": does not open with the secrets key (a different key, or the "
                              "record was altered)");
  };
  if (!IsSealed(sealed) || sealed.size() < 1 + kNonceBytes + kTagBytes) {
    return fail();
  }
  const std::string_view nonce = sealed.substr(1, kNonceBytes);
  const std::string_view body =
      sealed.substr(1 + kNonceBytes, sealed.size() - 1 - kNonceBytes - kTagBytes);
  std::string tag(sealed.substr(sealed.size() - kTagBytes));
  std::string out(body.size(), '\0');
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  int final_len = 0;
  const bool ok =
      ctx != nullptr &&
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, key.bytes().data(), Bytes(nonce)) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, Bytes(setting_key),
                        static_cast<int>(setting_key.size())) == 1 &&
      EVP_DecryptUpdate(ctx.get(), Bytes(out), &len, Bytes(body), static_cast<int>(body.size())) ==
          1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) == 1 &&
      EVP_DecryptFinal_ex(ctx.get(), Bytes(out) + len, &final_len) == 1;
  if (!ok) {
    return fail();
  }
  return out;
}

}  // namespace egress::storage
