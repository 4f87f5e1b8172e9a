#include "adapters/client_certificate.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include "dispatcher/base/result.h"

namespace egress::adapters {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

// Refuses to ask for a passphrase (OpenSSL would prompt on the terminal): an encrypted key
// fails to load instead.
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*user*/) { return -1; }

Result<std::unique_ptr<BIO, BioFree>> Open(const std::string& path) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_file(path.c_str(), "r"));
  if (bio == nullptr) {
    const int err = errno;
    ERR_clear_error();
    return Status::InvalidArgument(
        fmt::format("cannot read '{}': {}", path, err != 0 ? std::strerror(err) : "unknown error"));
  }
  return bio;
}

}  // namespace

Status CheckClientCertificate(const std::string& cert_file, const std::string& key_file) {
  auto cert_bio = Open(cert_file);
  if (!cert_bio) {
    return cert_bio.error();
  }
  std::unique_ptr<X509, X509Free> cert(
      PEM_read_bio_X509(cert_bio->get(), nullptr, &NoPassphrase, nullptr));
  ERR_clear_error();
  if (cert == nullptr) {
    return Status::InvalidArgument(
        fmt::format("'{}' holds no PEM certificate (-----BEGIN CERTIFICATE-----)", cert_file));
  }
  struct stat st {};
  if (stat(key_file.c_str(), &st) != 0) {
    return Status::InvalidArgument(
        fmt::format("cannot read '{}': {}", key_file, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(fmt::format("'{}' is not a regular file", key_file));
  }
  if ((st.st_mode & S_IRWXO) != 0) {
    return Status::InvalidArgument(fmt::format(
        "'{}' is open to every user (mode {:04o}): a private key must be readable by its owner "
        "(and group) only, e.g. chmod 600",
        key_file, st.st_mode & 07777));
  }
  auto key_bio = Open(key_file);
  if (!key_bio) {
    return key_bio.error();
  }
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_bio_PrivateKey(key_bio->get(), nullptr, &NoPassphrase, nullptr));
  ERR_clear_error();
  if (key == nullptr) {
    return Status::InvalidArgument(fmt::format(
        "'{}' holds no unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)", key_file));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(
        fmt::format("'{}' is not the private key of the certificate in '{}'", key_file, cert_file));
  }
  return Status::Ok();
}

}  // namespace egress::adapters
