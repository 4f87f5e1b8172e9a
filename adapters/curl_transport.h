#pragma once

#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "adapters/http_transport.h"
#include "dispatcher/base/clock.h"

namespace egress::adapters {

// Which HTTP versions the transport asks for.
enum class HttpVersion {
  kAuto,    // HTTP/2 over TLS when the server offers it by ALPN, else HTTP/1.1. The default.
  kHttp11,  // HTTP/1.1 only (ALPN offers only http/1.1).
  kHttp2,   // HTTP/2: by ALPN over TLS (HTTP/1.1 when the server does not offer h2); plain
            // http:// asks the server to upgrade (h2c) and stays on HTTP/1.1 when it does not.
};

enum class TlsVersion { kTls12, kTls13 };

struct TransportOptions {
  long max_host_connections = 16;    // Default: 16 connections per host.
  long max_total_connections = 256;  // Default: 256.
  HttpVersion http_version = HttpVersion::kAuto;
  // HTTP/2 streams at most on one connection (CURLMOPT_MAX_CONCURRENT_STREAMS; the server's
  // SETTINGS may allow fewer). Default: 100.
  long max_concurrent_streams = 100;
  TlsVersion min_tls_version = TlsVersion::kTls12;  // Default: TLS 1.2.
  size_t max_response_body = 64 * 1024;  // Bytes kept of a response body. Default: 64 KiB.
  std::string ca_file;                   // PEM bundle for TLS verification. Default: the system's.
  std::string ca_path;                   // Directory of CA certificates. Default: the system's.
  std::string user_agent = "relay-egress/0.1";
};

// An HttpTransport over libcurl's multi interface on `io` (see CurlMulti). Keeps connections
// alive and reuses them, negotiates HTTP/2 over TLS when offered, verifies TLS peers, never
// follows redirects, and captures response headers. `io` and `clock` must outlive the transport;
// all calls run on the thread running `io`.
std::unique_ptr<HttpTransport> NewCurlTransport(boost::asio::io_context& io, const Clock& clock,
                                                const TransportOptions& options);

}  // namespace egress::adapters
