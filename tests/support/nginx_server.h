#pragma once

#include <memory>
#include <string>

#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

namespace egress {

// A self-signed certificate (CA:TRUE, so it is its own CA) for "127.0.0.1" (IP SAN) and
// "localhost", with its P-256 key, both PEM, valid from an hour ago for a day.
struct TestCertificate {
  std::string cert_pem;
  std::string key_pem;
};
TestCertificate MakeTestCertificate(const std::string& common_name);

// Debian's nginx on 127.0.0.1 for integration tests, started with a config of its own in a temp
// dir: one worker, every POST or GET under /hooks/ answered 200 "ok" after its body was read,
// under /whoami/ 200 "<client certificate subject> <connection number>" (nginx's
// $ssl_client_s_dn, e.g. "CN=a", empty without one, and $connection).
// Over TLS it offers HTTP/2 and HTTP/1.1 by ALPN with a fresh certificate (ca_file() trusts
// it). Stopped (SIGTERM) by the destructor.
class NginxServer {
 public:
  struct Options {
    bool tls = true;
    std::string tls_protocols = "TLSv1.2 TLSv1.3";  // nginx's ssl_protocols
    // When set, a client certificate signed by this PEM certificate is required.
    std::string client_ca_pem;
  };

  // The nginx binary, or "" when none is installed (tests then skip).
  static std::string Binary();

  explicit NginxServer(const Options& options);
  NginxServer() : NginxServer(Options{}) {}

  // 0 when nginx did not start (error() says why).
  int port() const { return port_; }
  const std::string& error() const { return error_; }
  // "https://127.0.0.1:PORT" + path (http:// without TLS).
  std::string Url(const std::string& path) const;
  // A file holding the server's certificate: the CA file to trust it.
  std::string ca_file() const { return dir_.Sub("server.pem"); }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
  bool tls_;
  int port_ = 0;
  std::string error_;
  ChildProcess process_;
};

}  // namespace egress
