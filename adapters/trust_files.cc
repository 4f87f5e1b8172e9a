#include "adapters/trust_files.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

namespace egress::adapters {

Status CheckTrustFiles(const TransportOptions& options) {
  return CheckTrustFiles("transport", options.ca_file, options.ca_path);
}

Status CheckTrustFiles(std::string_view section, const std::string& ca_file,
                       const std::string& ca_path) {
  if (!ca_file.empty()) {
    BIO* bio = BIO_new_file(ca_file.c_str(), "r");
    if (bio == nullptr) {
      const int err = errno;
      ERR_clear_error();
      return Status::InvalidArgument(fmt::format("{}.ca_file: cannot read '{}': {}", section,
                                                 ca_file,
                                                 err != 0 ? std::strerror(err) : "unknown error"));
    }
    int certificates = 0;
    while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      X509_free(cert);
      ++certificates;
    }
    ERR_clear_error();  // the read that ends the loop leaves "no start line" behind
    BIO_free(bio);
    if (certificates == 0) {
      return Status::InvalidArgument(
          fmt::format("{}.ca_file: '{}' holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                      section, ca_file));
    }
  }
  if (!ca_path.empty()) {
    struct stat st {};
    if (stat(ca_path.c_str(), &st) != 0) {
      return Status::InvalidArgument(
          fmt::format("{}.ca_path: cannot read '{}': {}", section, ca_path, std::strerror(errno)));
    }
    if (!S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(
          fmt::format("{}.ca_path: '{}' is not a directory", section, ca_path));
    }
  }
  return Status::Ok();
}

}  // namespace egress::adapters
