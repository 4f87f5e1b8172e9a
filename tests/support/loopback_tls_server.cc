#include "tests/support/loopback_tls_server.h"

#include <poll.h>
#include <unistd.h>

#include <random>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

namespace egress {

struct LoopbackTlsServer::State {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  SSL_CTX* ctx = nullptr;
  ~State() {
    SSL_CTX_free(ctx);
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    throw std::runtime_error(std::string("LoopbackTlsServer: ") + what);
  }
}

void AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr && X509_add_ext(cert, ext, -1) == 1, "extension");
  X509_EXTENSION_free(ext);
}

}  // namespace

LoopbackTlsServer::LoopbackTlsServer() : state_(new State) {
  // A P-256 key and a certificate valid from an hour ago for a day.
  state_->key = EVP_EC_gen("P-256");
  Check(state_->key != nullptr, "key");
  X509* cert = state_->cert = X509_new();
  Check(cert != nullptr, "certificate");
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert),
                   static_cast<long>(std::random_device{}() & 0x7fffffff));
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, state_->key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  AddExtension(cert, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  AddExtension(cert, NID_basic_constraints, "critical,CA:TRUE");
  Check(X509_sign(cert, state_->key, EVP_sha256()) > 0, "sign");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  cert_pem_.assign(data, static_cast<size_t>(n));
  BIO_free(bio);

  state_->ctx = SSL_CTX_new(TLS_server_method());
  Check(state_->ctx != nullptr, "context");
  Check(SSL_CTX_use_certificate(state_->ctx, cert) == 1, "use certificate");
  Check(SSL_CTX_use_PrivateKey(state_->ctx, state_->key) == 1, "use key");

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
    if (SSL_accept(ssl) == 1) {
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
