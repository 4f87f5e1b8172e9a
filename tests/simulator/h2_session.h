#pragma once

#include <cstdint>
#include <memory>

#include "tests/simulator/http_server.h"
#include "tests/simulator/server_types.h"

namespace egress::sim {

// Limits of one HTTP/2 connection. Memory per connection is bounded by them: at most
// `max_concurrent_streams` streams, each with at most kH2HeaderBytes of header fields and
// kBodyLimit of body, and at most kH2ConnectionBodyBytes of request bodies held at once.
struct H2Limits {
  uint32_t max_concurrent_streams = 100;
};

// Header field bytes (names and values) one request may carry; more resets the stream.
constexpr size_t kH2HeaderBytes = 64 * 1024;
// Request body bytes one connection may hold across its open streams; a stream that would go
// over is reset (ENHANCE_YOUR_CALM), as one over kBodyLimit is.
constexpr size_t kH2ConnectionBodyBytes = 32 * 1024 * 1024;

// Serves HTTP/2 (RFC 9113) with libnghttp2 on a TLS stream that negotiated "h2": each complete
// request goes to `handler` (protocol kHttp2Tls) and its SimResponse is sent back on its stream,
// after `delay_ms` if set; `reset_connection` resets the stream (RST_STREAM INTERNAL_ERROR)
// rather than the connection, which other streams share. Protocol errors from the peer end the
// connection with GOAWAY (nghttp2's handling); nothing the peer sends can crash it.
// Runs on the stream's strand; I/O and timer handlers hold shared_from_this(). `handler` must
// outlive the session.
class H2Session;

// Starts a session on `stream` (its TLS handshake done). The session keeps itself alive.
void StartH2Session(TlsStream&& stream, const RequestHandler& handler, const H2Limits& limits);

}  // namespace egress::sim
