#include "tests/support/loopback_tls_server.h"

#include <poll.h>
#include <unistd.h>

#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include "tests/support/test_certificates.h"

namespace egress {

struct LoopbackTlsServer::State {
  SSL_CTX* ctx = nullptr;
  ~State() { SSL_CTX_free(ctx); }
};

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    throw std::runtime_error(std::string("LoopbackTlsServer: ") + what);
  }
}

}  // namespace

namespace {

// Selects h2 whatever the client offers (it must offer it: the tests' client does).
int SelectH2(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* /*in*/,
             unsigned int /*inlen*/, void*) {
  static const unsigned char kH2[] = {'h', '2'};
  *out = kH2;
  *outlen = sizeof(kH2);
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

LoopbackTlsServer::LoopbackTlsServer(const Options& options)
    : state_(new State), options_(options) {
  // A CA made for this server alone, and a leaf it signed for 127.0.0.1 and localhost.
  Result<TestPki> pki = MakeTestPki({.names = {"127.0.0.1", "localhost"}});
  Check(pki.has_value(), "certificates");
  cert_pem_ = pki->ca_cert_pem;
  BIO* cert_bio =
      BIO_new_mem_buf(pki->leaf_cert_pem.data(), static_cast<int>(pki->leaf_cert_pem.size()));
  X509* cert = PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr);
  BIO_free(cert_bio);
  BIO* key_bio =
      BIO_new_mem_buf(pki->leaf_key_pem.data(), static_cast<int>(pki->leaf_key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr);
  BIO_free(key_bio);
  state_->ctx = SSL_CTX_new(TLS_server_method());
  const bool ok = cert != nullptr && key != nullptr && state_->ctx != nullptr &&
                  SSL_CTX_use_certificate(state_->ctx, cert) == 1 &&
                  SSL_CTX_use_PrivateKey(state_->ctx, key) == 1;
  X509_free(cert);
  EVP_PKEY_free(key);
  Check(ok, "context");
  if (!options_.h2_reply.empty()) {
    SSL_CTX_set_alpn_select_cb(state_->ctx, &SelectH2, nullptr);
  }

  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  Check(listen_fd_ >= 0, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  Check(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0, "bind");
  Check(listen(listen_fd_, 64) == 0, "listen");
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

LoopbackTlsServer::~LoopbackTlsServer() {
  stop_ = true;
  thread_.join();
  close(listen_fd_);
  delete state_;
}

std::string LoopbackTlsServer::Url(const std::string& path) const {
  return "https://127.0.0.1:" + std::to_string(port_) + path;
}

void LoopbackTlsServer::Serve() {
  while (!stop_) {
    pollfd p{.fd = listen_fd_, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, 50) <= 0) {
      continue;
    }
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      continue;
    }
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    SSL* ssl = SSL_new(state_->ctx);
    SSL_set_fd(ssl, fd);
    const bool accepted = SSL_accept(ssl) == 1;
    if (accepted && !options_.h2_reply.empty()) {
      ++handshakes_;
      SSL_write(ssl, options_.h2_reply.data(), static_cast<int>(options_.h2_reply.size()));
      char buf[4096];
      while (SSL_read(ssl, buf, sizeof(buf)) > 0) {
      }
    } else if (accepted) {
      ++handshakes_;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const int n = SSL_read(ssl, buf, sizeof(buf));
        if (n <= 0) {
          break;
        }
        request.append(buf, static_cast<size_t>(n));
      }
      constexpr char kAnswer[] =
          "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
      SSL_write(ssl, kAnswer, sizeof(kAnswer) - 1);
      SSL_shutdown(ssl);
    }
    ERR_clear_error();
    SSL_free(ssl);
    close(fd);
  }
}

}  // namespace egress
