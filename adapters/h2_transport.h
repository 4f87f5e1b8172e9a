#pragma once

#include <memory>

#include <boost/asio/io_context.hpp>

#include "adapters/curl_transport.h"
#include "adapters/http_transport.h"
#include "dispatcher/base/clock.h"

namespace egress::adapters {

// An HttpTransport that speaks HTTP/2 over TLS itself (libnghttp2 on Asio and OpenSSL) and
// hands everything else to `http1`: plain http://, `http_version = "1.1"`, and every origin that
// chose HTTP/1.1 by ALPN (remembered for the transport's life).
//
// Why not libcurl for HTTP/2: Debian 12's libcurl 7.88 writes each frame of a request as its own
// TLS record (HEADERS, then DATA), follows each answer with a frame of its own, and advances
// streams from its timer callback; measured against nginx on loopback it cost ~41 µs more per
// delivery than its HTTP/1.1 path and delivered 58-67 % of its HTTP/1.1 rate (bench/README.md
// section 7). Here every frame the loop queued in one turn, for all streams of a connection, goes
// out in one write (nghttp2_session_mem_send into one buffer), and a socket read takes in as
// many records as arrived (the TLS stream's buffer), handed to nghttp2 a record at a time.
//
// Same contract as the curl transport (adapters/http_transport.h): peer verification (the
// request's ca_file / ca_path or the transport's, else the system's; the name or IP literal
// checked), client certificates per request, the SSRF policy checked on the address connected
// to for every request (a pooled connection is reused only for requests it allows), the
// request's connect and total timeouts, response bodies capped at max_response_body (the rest
// read and dropped), response headers capped, at most max_host_connections connections per
// origin carrying at most min(max_concurrent_streams, the server's SETTINGS) streams each, at
// most max_total_connections in all. A stream the server refused (REFUSED_STREAM, or above a
// GOAWAY's last stream id) was not processed and is sent again on another connection.
std::unique_ptr<HttpTransport> NewH2Transport(boost::asio::io_context& io, const Clock& clock,
                                              const TransportOptions& options,
                                              std::unique_ptr<HttpTransport> http1);

// The service's transport: NewH2Transport over NewCurlTransport, or the curl transport alone
// when `options.http_version` is HTTP/1.1.
std::unique_ptr<HttpTransport> NewHttpTransport(boost::asio::io_context& io, const Clock& clock,
                                                const TransportOptions& options);

}  // namespace egress::adapters
