#pragma once

#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include "dispatcher/base/result.h"
#include "tests/simulator/http_server.h"

namespace egress::sim {

// The simulator's server-side TLS: an OpenSSL context with the certificate and key, TLS 1.2 at
// least, and an ALPN callback that picks the first of the server's protocols the client offers
// (no common protocol, or no ALPN from the client: no protocol, which is HTTP/1.1).
class TlsServerContext {
 public:
  // InvalidArgument for a certificate or key OpenSSL cannot use, a key that does not match the
  // certificate, an empty ALPN list or a protocol other than "h2" and "http/1.1".
  static Result<std::unique_ptr<TlsServerContext>> Create(const TlsServerOptions& options);

  boost::asio::ssl::context& context() { return context_; }

 private:
  TlsServerContext();

  boost::asio::ssl::context context_;
  std::string alpn_wire_;  // the offered protocols, length-prefixed (RFC 7301 section 3.1)
};

// True when the TLS connection `ssl` (an OpenSSL SSL*) negotiated "h2" by ALPN.
bool NegotiatedH2(void* ssl);

}  // namespace egress::sim
