#include "tests/simulator/tls_context.h"

#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace egress::sim {
namespace {

namespace ssl = boost::asio::ssl;

// Server preference: the first protocol of ours that the client listed.
int SelectAlpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
               const unsigned char* in, unsigned int inlen, void* arg) {
  const auto* ours = static_cast<const std::string*>(arg);
  unsigned char* selected = nullptr;
  const int rc =
      SSL_select_next_proto(&selected, outlen, reinterpret_cast<const unsigned char*>(ours->data()),
                            static_cast<unsigned int>(ours->size()), in, inlen);
  if (rc != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // no common protocol: go on without ALPN (HTTP/1.1)
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

TlsServerContext::TlsServerContext() : context_(ssl::context::tls_server) {}

Result<std::unique_ptr<TlsServerContext>> TlsServerContext::Create(
    const TlsServerOptions& options) {
  std::unique_ptr<TlsServerContext> out(new TlsServerContext());
  if (options.alpn.empty()) {
    return Status::InvalidArgument("tls: the ALPN list is empty (offer h2, http/1.1 or both)");
  }
  for (const std::string& protocol : options.alpn) {
    if (protocol != "h2" && protocol != "http/1.1") {
      return Status::InvalidArgument("tls: unknown ALPN protocol '" + protocol +
                                     "' (h2 or http/1.1)");
    }
    out->alpn_wire_.push_back(static_cast<char>(protocol.size()));
    out->alpn_wire_ += protocol;
  }
  boost::system::error_code ec;
  ssl::context& ctx = out->context_;
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                      ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                      ssl::context::single_dh_use,
                  ec);
  if (ec) {
    return Status::InvalidArgument("tls: options: " + ec.message());
  }
  if (ctx.use_certificate_chain(boost::asio::buffer(options.cert_pem), ec); ec) {
    return Status::InvalidArgument("tls: certificate: " + ec.message());
  }
  if (ctx.use_private_key(boost::asio::buffer(options.key_pem), ssl::context::pem, ec); ec) {
    return Status::InvalidArgument("tls: private key: " + ec.message());
  }
  SSL_CTX* native = ctx.native_handle();
  if (SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("tls: the private key does not match the certificate");
  }
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_alpn_select_cb(native, SelectAlpn, &out->alpn_wire_);
  return out;
}

bool NegotiatedH2(void* ssl) {
  const unsigned char* protocol = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(static_cast<SSL*>(ssl), &protocol, &length);
  return length == 2 && std::memcmp(protocol, "h2", 2) == 0;
}

}  // namespace egress::sim
