#include "tests/support/test_certificates.h"

#include <memory>
#include <random>

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace egress {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
  void operator()(X509* c) const { X509_free(c); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;
using Bio = std::unique_ptr<BIO, BioFree>;

Status OpenSslError(const char* what) {
  const unsigned long code = ERR_get_error();
  char text[256] = "no OpenSSL error queued";
  if (code != 0) {
    ERR_error_string_n(code, text, sizeof(text));
  }
  ERR_clear_error();
  return Status::Unavailable(std::string("test certificates: ") + what + ": " + text);
}

bool IsIp(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

Status CheckNames(const std::vector<std::string>& names) {
  if (names.empty()) {
    return Status::InvalidArgument("test certificates: the leaf needs at least one name");
  }
  for (const std::string& name : names) {
    if (name.empty() || name.size() > 253) {
      return Status::InvalidArgument("test certificates: a name must hold 1 to 253 characters");
    }
    for (char ch : name) {
      if (ch == ',' || static_cast<unsigned char>(ch) < 0x21 || ch == 0x7f) {
        return Status::InvalidArgument(
            "test certificates: name holds a comma, space or control "
            "character");
      }
    }
  }
  return Status::Ok();
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) {
    return OpenSslError("extension");
  }
  const bool added = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return added ? Status::Ok() : OpenSslError("add extension");
}

// An unsigned certificate for `key` named `cn`, issued by `issuer` (itself when null: then a CA
// with its extensions), valid from an hour ago for `validity`.
Result<Cert> NewCertificate(EVP_PKEY* key, const std::string& cn, X509* issuer,
                            std::chrono::seconds validity) {
  Cert cert(X509_new());
  if (!cert) {
    return OpenSslError("X509_new");
  }
  X509_set_version(cert.get(), 2);
  std::random_device random;
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), static_cast<long>(random() & 0x7fffffff));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(validity.count()));
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("relay-egress tests"), -1, -1,
                             0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  if (issuer == nullptr) {
    if (Status s = AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
        !s.ok()) {
      return s;
    }
    if (Status s = AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
        !s.ok()) {
      return s;
    }
    if (Status s = AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash"); !s.ok()) {
      return s;
    }
  }
  return cert;
}

Status SignWith(X509* cert, EVP_PKEY* key) {
  return X509_sign(cert, key, EVP_sha256()) > 0 ? Status::Ok() : OpenSslError("sign");
}

Result<std::string> BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  if (n <= 0 || data == nullptr) {
    return OpenSslError("PEM");
  }
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return OpenSslError("write certificate");
  }
  return BioText(bio.get());
}

Result<std::string> KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslError("write key");
  }
  return BioText(bio.get());
}

}  // namespace

Result<TestPki> MakeTestPki(const TestPkiOptions& options) {
  if (Status s = CheckNames(options.names); !s.ok()) {
    return s;
  }
  Key ca_key(EVP_EC_gen("P-256"));
  Key leaf_key(EVP_EC_gen("P-256"));
  if (!ca_key || !leaf_key) {
    return OpenSslError("P-256 key");
  }
  Result<Cert> ca = NewCertificate(ca_key.get(), "relay-egress test CA", nullptr, options.validity);
  if (!ca.has_value()) {
    return ca.error();
  }
  if (Status s = SignWith(ca->get(), ca_key.get()); !s.ok()) {
    return s;
  }
  Result<Cert> leaf =
      NewCertificate(leaf_key.get(), options.names.front(), ca->get(), options.validity);
  if (!leaf.has_value()) {
    return leaf.error();
  }
  std::string san;
  for (const std::string& name : options.names) {
    san += (san.empty() ? "" : ",") + std::string(IsIp(name) ? "IP:" : "DNS:") + name;
  }
  for (auto [nid, value] : {std::pair<int, std::string>{NID_subject_alt_name, san},
                            {NID_basic_constraints, "critical,CA:FALSE"},
                            {NID_key_usage, "critical,digitalSignature"},
                            {NID_ext_key_usage, "serverAuth"},
                            {NID_authority_key_identifier, "keyid:always"}}) {
    if (Status s = AddExtension(leaf->get(), ca->get(), nid, value); !s.ok()) {
      return s;
    }
  }
  if (Status s = SignWith(leaf->get(), ca_key.get()); !s.ok()) {
    return s;
  }
  TestPki pki;
  for (auto [out, text] : {std::pair{&pki.ca_cert_pem, CertPem(ca->get())},
                           {&pki.leaf_cert_pem, CertPem(leaf->get())},
                           {&pki.leaf_key_pem, KeyPem(leaf_key.get())}}) {
    if (!text.has_value()) {
      return text.error();
    }
    *out = std::move(*text);
  }
  return pki;
}

}  // namespace egress
