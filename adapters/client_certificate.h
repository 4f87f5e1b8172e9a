#pragma once

#include <string>

#include "dispatcher/base/status.h"

namespace egress::adapters {

// Checks a credential's client certificate for mTLS (client_cert_file, client_key_file) before
// any delivery depends on it: the certificate file must be readable and hold a PEM certificate;
// the key file must be a regular file that no one but its owner and group may read or write
// (mode 0600 or 0640: a world-readable key is refused), readable, holding an unencrypted PEM
// private key that matches the certificate. InvalidArgument naming the file (by path) and the
// problem otherwise; never any byte of the key. Reads the files (blocking): call at load only.
Status CheckClientCertificate(const std::string& cert_file, const std::string& key_file);

}  // namespace egress::adapters
