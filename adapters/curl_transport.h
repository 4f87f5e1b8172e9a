#pragma once

#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "adapters/http_transport.h"
#include "dispatcher/base/clock.h"

namespace egress::adapters {

struct TransportOptions {
  long max_host_connections = 16;        // Default: 16 connections per host.
  long max_total_connections = 256;      // Default: 256.
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
