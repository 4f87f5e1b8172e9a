#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "adapters/http_header.h"
#include "adapters/ssrf_guard.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"

namespace egress::adapters {

struct HttpRequest {
  std::string method = "POST";
  std::string url;  // absolute http:// or https:// URL
  HttpHeaders headers;
  std::string body;
  // Whole request, connect included. Default: 15 s.
  Millis timeout{15'000};
  // Default: 5 s.
  Millis connect_timeout{5'000};
  // When set, the address the connection would use is checked before connecting (customer
  // webhook URLs). Unset for operator-configured platform base URLs. Default: unset.
  std::optional<SsrfPolicy> ssrf;
  // A client certificate (PEM file) and its private key (PEM file) presented to servers that
  // ask for one (mTLS); both or neither. The key is a secret: its path may be logged, never its
  // content. Default: none.
  std::string client_cert_file;
  std::string client_key_file;
  // The CAs this request's server must chain to, instead of the transport's
  // (TransportOptions::ca_file and ca_path) when either is set: a PEM bundle and a directory
  // ([platforms.<p>] ca_file, ca_path). Connections are reused only between requests with the
  // same trust (and client certificate). Default: none (the transport's).
  std::string ca_file;
  std::string ca_path;
  // The URL holds a secret (a bot token in its path: a profile platform's {credential.token}):
  // messages and logs show its origin only (ShownUrl). Default: false.
  bool secret_url = false;
};

// The request's URL as errors and logs may show it: its origin alone when it holds a secret.
inline std::string ShownUrl(const HttpRequest& request) {
  if (!request.secret_url) {
    return request.url;
  }
  const size_t scheme = request.url.find("://");
  const size_t path = scheme == std::string::npos ? 0 : request.url.find('/', scheme + 3);
  return (path == std::string::npos ? request.url : request.url.substr(0, path)) + "/(redacted)";
}

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;  // of the final response, in arrival order
  std::string body;     // at most TransportOptions::max_response_body bytes
  bool body_truncated = false;
  Millis elapsed{0};      // request start to completion
  std::string remote_ip;  // the address actually connected to
  bool http2 = false;     // answered over HTTP/2 (its connection multiplexes)
};

// Called once per request, on the transport's loop thread. Errors:
// TimedOut (connect or total timeout), Unavailable (refused, reset, DNS failure, empty reply,
// TLS handshake failure), Rejected (SSRF guard refused the address, certificate invalid),
// InvalidArgument (malformed URL, unsupported scheme), Cancelled (transport shut down).
// Any HTTP status, including 4xx and 5xx, is a response, not an error.
using HttpCallback = std::function<void(Result<HttpResponse>)>;

// Sends HTTP requests. All methods run on the transport's loop thread.
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual void Send(HttpRequest request, HttpCallback done) = 0;
  // Requests started and not yet completed.
  virtual size_t InFlight() const = 0;
  // Fails every request in flight with Cancelled (their callbacks are posted, not run inline).
  virtual void CancelAll() = 0;
  // Connections opened so far (new TCP connections, each with its TLS handshake for https://):
  // small next to the requests sent while connections are reused. Default: 0 (not counted).
  virtual uint64_t ConnectionsOpened() const { return 0; }
};

}  // namespace egress::adapters
