#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "dispatcher/base/result.h"

namespace egress {

// A throwaway public-key infrastructure for tests and the simulator, made in memory with
// OpenSSL each time it is asked for: a P-256 certificate authority and a P-256 leaf it signed.
// Nothing is written to disk here; callers write the PEMs where they need them.
struct TestPki {
  std::string ca_cert_pem;    // the CA certificate: what a client trusts (ca_file)
  std::string leaf_cert_pem;  // the server certificate, signed by the CA
  std::string leaf_key_pem;   // the server's private key (PKCS#8 PEM, unencrypted)
};

struct TestPkiOptions {
  // Subject alternative names of the leaf: entries that parse as an IPv4 or IPv6 address become
  // IP names, the rest DNS names. Default: localhost, 127.0.0.1, ::1.
  std::vector<std::string> names = {"localhost", "127.0.0.1", "::1"};
  // Both certificates are valid from an hour ago (clock skew) for this long. Default: one day.
  std::chrono::seconds validity{86'400};
};

// InvalidArgument for an empty or malformed name list (a name that is empty, longer than 253
// characters or holds a comma or a control character); Unavailable when OpenSSL fails.
Result<TestPki> MakeTestPki(const TestPkiOptions& options = {});

}  // namespace egress
