#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include <boost/asio/ssl/context.hpp>
#include <openssl/ssl.h>

#include "dispatcher/base/result.h"

namespace egress::adapters {

// What a TLS client connection trusts and presents: the CAs its server must chain to (a PEM
// bundle and a directory; both empty for the system's), a client certificate and key (PEM files,
// both or neither), and the lowest TLS version it accepts. Connections are pooled only between
// requests with the same TlsIdentity.
struct TlsIdentity {
  std::string ca_file;
  std::string ca_path;
  std::string client_cert_file;
  std::string client_key_file;
  bool operator<(const TlsIdentity& o) const {
    return std::tie(ca_file, ca_path, client_cert_file, client_key_file) <
           std::tie(o.ca_file, o.ca_path, o.client_cert_file, o.client_key_file);
  }
};

// OpenSSL client contexts for the HTTP/2 transport (adapters/h2_transport.h), one per
// TlsIdentity, made on first use and kept: peer verification on, ALPN offering h2 then
// http/1.1, the minimum TLS version, and a client-side session cache so that a new connection to
// an origin resumes the last session made with it (no full handshake per connection).
// Single-threaded: the transport's loop thread.
class TlsClientContexts {
 public:
  explicit TlsClientContexts(bool tls13_only) : tls13_only_(tls13_only) {}
  TlsClientContexts(const TlsClientContexts&) = delete;
  TlsClientContexts& operator=(const TlsClientContexts&) = delete;
  ~TlsClientContexts();

  // The context for `identity`. Rejected naming the file when a CA bundle or directory cannot be
  // loaded (as libcurl's CURLE_SSL_CACERT_BADFILE), Unavailable when the client certificate or
  // key cannot be used; never the key's bytes. A failed identity is tried again next time. A
  // context is made again when one of its files changed (modification time or size), so a
  // replaced certificate, key or CA bundle is used from the next connection on, without a reload,
  // as libcurl reads them for each new connection.
  Result<boost::asio::ssl::context*> For(const TlsIdentity& identity);

  // Prepares `ssl` (not yet connected) for `host` (a DNS name or an IP literal without
  // brackets): the name or address its certificate must match, SNI for a name, and the last
  // session kept for `session_key` when there is one. Sessions the server issues on this
  // connection are kept under `session_key`.
  void PrepareConnection(SSL* ssl, const std::string& host, const std::string& session_key);

  // Sessions kept, at most one per session key (all dropped at once past kMaxSessions).
  size_t sessions() const { return sessions_.size(); }
  static constexpr size_t kMaxSessions = 1024;

 private:
  static int OnNewSession(SSL* ssl, SSL_SESSION* session);

  const bool tls13_only_;
  struct Made {
    std::string stamp;  // the files' modification times and sizes when it was made
    std::unique_ptr<boost::asio::ssl::context> context;
  };
  std::map<TlsIdentity, Made> contexts_;
  std::map<std::string, SSL_SESSION*> sessions_;  // owned references
};

}  // namespace egress::adapters
