#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace egress {

// An HTTPS server on 127.0.0.1 for integration tests: a certificate for "127.0.0.1" (IP SAN) and
// "localhost" signed by a CA made at construction (MakeTestPki), TLS by OpenSSL, no ALPN
// (HTTP/1.1), one connection at a time on its own thread; each request (read up to the end of its
// header) gets 200 "ok". A client that does not trust the certificate fails its handshake; one
// given cert_pem() as its CA file succeeds. Test-only: no keep-alive, bodies ignored.
//
// With Options::h2_reply the server is a hostile HTTP/2 peer instead: it selects h2 by ALPN,
// writes those bytes as soon as the handshake is done, whatever the client sends, and then reads
// (and drops) until the client closes or 5 s pass.
class LoopbackTlsServer {
 public:
  struct Options {
    std::string h2_reply;  // empty: the HTTP/1.1 server above
  };
  LoopbackTlsServer() : LoopbackTlsServer(Options{}) {}
  explicit LoopbackTlsServer(const Options& options);
  ~LoopbackTlsServer();
  LoopbackTlsServer(const LoopbackTlsServer&) = delete;
  LoopbackTlsServer& operator=(const LoopbackTlsServer&) = delete;

  int port() const { return port_; }
  std::string Url(const std::string& path) const;
  // The CA certificate, PEM: write it to a file to trust the server (TransportOptions::ca_file).
  const std::string& cert_pem() const { return cert_pem_; }
  // Handshakes that completed (a client that rejects the certificate completes none).
  int handshakes() const { return handshakes_.load(); }

 private:
  void Serve();

  struct State;
  State* state_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  std::string cert_pem_;
  Options options_;
  std::atomic<bool> stop_{false};
  std::atomic<int> handshakes_{0};
  std::thread thread_;
};

}  // namespace egress
