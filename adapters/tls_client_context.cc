#include "adapters/tls_client_context.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include "adapters/ip_address.h"

namespace egress::adapters {
namespace {

namespace ssl = boost::asio::ssl;

// ALPN: h2 first, HTTP/1.1 when the server offers no h2 (RFC 7301 wire format).
constexpr unsigned char kAlpn[] = "\x02h2\x08http/1.1";

// What a connection's SSL carries for the new-session callback: whose cache, and which key.
struct SessionSlot {
  TlsClientContexts* owner;
  std::string key;
};

void FreeSlot(void* /*parent*/, void* ptr, CRYPTO_EX_DATA* /*ad*/, int /*idx*/, long /*argl*/,
              void* /*argp*/) {
  delete static_cast<SessionSlot*>(ptr);
}

int SlotIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, &FreeSlot);
  return index;
}

// The first queued OpenSSL error as text ("" when none), and the queue cleared.
std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) {
    return "";
  }
  char text[256];
  ERR_error_string_n(e, text, sizeof(text));
  return text;
}

// What the files of `identity` are now: modification time and size of each ("-" when absent).
std::string Stamp(const TlsIdentity& identity) {
  std::string out;
  for (const std::string* path : {&identity.ca_file, &identity.ca_path, &identity.client_cert_file,
                                  &identity.client_key_file}) {
    struct stat st {};
    if (path->empty() || stat(path->c_str(), &st) != 0) {
      out += "-;";
      continue;
    }
    out += fmt::format("{}.{}:{};", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
  }
  return out;
}

}  // namespace

TlsClientContexts::~TlsClientContexts() {
  for (auto& [key, session] : sessions_) {
    SSL_SESSION_free(session);
  }
}

Result<ssl::context*> TlsClientContexts::For(const TlsIdentity& identity) {
  std::string stamp = Stamp(identity);
  if (auto it = contexts_.find(identity); it != contexts_.end()) {
    if (it->second.stamp == stamp) {
      return it->second.context.get();
    }
    contexts_.erase(it);  // live connections keep the old one (OpenSSL counts its references)
  }
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  SSL_CTX* native = ctx->native_handle();
  SSL_CTX_set_min_proto_version(native, tls13_only_ ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_verify(native, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_alpn_protos(native, kAlpn, sizeof(kAlpn) - 1);
  // Sessions go to OnNewSession (kept per origin), not to OpenSSL's internal store, which a
  // client does not search.
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(native, &TlsClientContexts::OnNewSession);
  if (identity.ca_file.empty() && identity.ca_path.empty()) {
    if (SSL_CTX_set_default_verify_paths(native) != 1) {
      return Status::Rejected("the system's CA certificates cannot be loaded: " + OpenSslError());
    }
  } else if (SSL_CTX_load_verify_locations(
                 native, identity.ca_file.empty() ? nullptr : identity.ca_file.c_str(),
                 identity.ca_path.empty() ? nullptr : identity.ca_path.c_str()) != 1) {
    return Status::Rejected(fmt::format("CA file {} / directory {} cannot be loaded: {}",
                                        identity.ca_file, identity.ca_path, OpenSslError()));
  }
  if (!identity.client_cert_file.empty() && !identity.client_key_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(native, identity.client_cert_file.c_str()) != 1) {
      return Status::Unavailable(fmt::format("client certificate {} cannot be used: {}",
                                             identity.client_cert_file, OpenSslError()));
    }
    if (SSL_CTX_use_PrivateKey_file(native, identity.client_key_file.c_str(), SSL_FILETYPE_PEM) !=
            1 ||
        SSL_CTX_check_private_key(native) != 1) {
      ERR_clear_error();  // the key's error text is not repeated: it could quote the file
      return Status::Unavailable(fmt::format("client key {} cannot be used with {}",
                                             identity.client_key_file, identity.client_cert_file));
    }
  }
  ssl::context* out = ctx.get();
  contexts_.emplace(identity, Made{std::move(stamp), std::move(ctx)});
  return out;
}

void TlsClientContexts::PrepareConnection(SSL* ssl, const std::string& host,
                                          const std::string& session_key) {
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (IpAddress::Parse(host).has_value()) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
    SSL_set_tlsext_host_name(ssl, host.c_str());
  }
  SSL_set_ex_data(ssl, SlotIndex(), new SessionSlot{this, session_key});
  if (auto it = sessions_.find(session_key); it != sessions_.end()) {
    SSL_set_session(ssl, it->second);
  }
}

int TlsClientContexts::OnNewSession(SSL* ssl, SSL_SESSION* session) {
  auto* slot = static_cast<SessionSlot*>(SSL_get_ex_data(ssl, SlotIndex()));
  if (slot == nullptr) {
    return 0;  // not ours to keep: OpenSSL frees it
  }
  auto& sessions = slot->owner->sessions_;
  if (auto it = sessions.find(slot->key); it != sessions.end()) {
    SSL_SESSION_free(it->second);
    it->second = session;
    return 1;
  }
  if (sessions.size() >= kMaxSessions) {
    for (auto& [key, kept] : sessions) {
      SSL_SESSION_free(kept);  // all at once: the next connection to each makes a new one
    }
    sessions.clear();
  }
  sessions.emplace(slot->key, session);
  return 1;  // the reference is ours now
}

}  // namespace egress::adapters
