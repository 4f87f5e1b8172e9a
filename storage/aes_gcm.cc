#include "storage/aes_gcm.h"

#include <memory>

#include <openssl/evp.h>

namespace egress::storage {
namespace {

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* ctx) const { EVP_CIPHER_CTX_free(ctx); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace

bool AesGcmSeal(const uint8_t* key, std::string_view nonce, std::string_view aad,
                std::string_view plaintext, std::string& out) {
  if (nonce.size() != kAesGcmNonceBytes) {
    return false;
  }
  const size_t start = out.size();
  out.resize(start + plaintext.size() + kAesGcmTagBytes);
  unsigned char* body = reinterpret_cast<unsigned char*>(out.data()) + start;
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  int final_len = 0;
  return ctx != nullptr &&
         EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
         EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kAesGcmNonceBytes, nullptr) == 1 &&
         EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, key, Bytes(nonce)) == 1 &&
         EVP_EncryptUpdate(ctx.get(), nullptr, &len, Bytes(aad), static_cast<int>(aad.size())) ==
             1 &&
         EVP_EncryptUpdate(ctx.get(), body, &len, Bytes(plaintext),
                           static_cast<int>(plaintext.size())) == 1 &&
         EVP_EncryptFinal_ex(ctx.get(), body + len, &final_len) == 1 &&
         EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kAesGcmTagBytes,
                             body + plaintext.size()) == 1;
}

std::optional<std::string> AesGcmOpen(const uint8_t* key, std::string_view nonce,
                                      std::string_view aad, std::string_view body) {
  if (nonce.size() != kAesGcmNonceBytes || body.size() < kAesGcmTagBytes) {
    return std::nullopt;
  }
  const std::string_view cipher = body.substr(0, body.size() - kAesGcmTagBytes);
  std::string tag(body.substr(cipher.size()));
  std::string out(cipher.size(), '\0');
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  int final_len = 0;
  const bool ok =
      ctx != nullptr &&
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, kAesGcmNonceBytes, nullptr) == 1 &&
      EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, key, Bytes(nonce)) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, Bytes(aad), static_cast<int>(aad.size())) == 1 &&
      EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &len,
                        Bytes(cipher), static_cast<int>(cipher.size())) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kAesGcmTagBytes, tag.data()) == 1 &&
      EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + len,
                          &final_len) == 1;
  if (!ok) {
    return std::nullopt;
  }
  return out;
}

}  // namespace egress::storage
