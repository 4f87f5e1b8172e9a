#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dispatcher/base/status.h"
#include "tests/simulator/sim_message.h"

namespace egress::sim {

// TLS for every connection of the server. ALPN picks the framing: "h2" is HTTP/2 (libnghttp2),
// "http/1.1" or no ALPN at all is HTTP/1.1 over TLS.
struct TlsServerOptions {
  std::string cert_pem;  // the server's certificate (then any intermediates), PEM
  std::string key_pem;   // its private key, PEM
  // Protocols offered, in the server's order of preference; each "h2" or "http/1.1".
  // Default: h2, then http/1.1.
  std::vector<std::string> alpn = {"h2", "http/1.1"};
};

struct ServerOptions {
  // Must be a loopback address (127.0.0.0/8 or ::1). Default: 127.0.0.1.
  std::string address = "127.0.0.1";
  // 0 = any free port.
  uint16_t port = 0;
  // Loop threads; each connection runs on its own strand. Default: 2.
  int threads = 2;
  // Unset: plain HTTP/1.1. Default: unset.
  std::optional<TlsServerOptions> tls;
  // HTTP/2: streams one connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS);
  // more are refused by the protocol. Default: 100 (nginx's http2_max_concurrent_streams is 128).
  uint32_t h2_max_concurrent_streams = 100;
  // Called from a loop thread every `late_tick` with how late that tick's timer ran: the time a
  // request may wait on this server before it is handled and stamped (a stalled process, a busy
  // loop). A platform counts arrivals; the simulator can only count what it handles. Unset: no
  // timer. Default: unset, 10 ms.
  std::function<void(std::chrono::nanoseconds)> on_loop_late;
  std::chrono::nanoseconds late_tick{10'000'000};
};

// Called for every request, from any loop thread; must be thread-safe. The request is valid
// only during the call (the connection reuses it for its next request).
using RequestHandler = std::function<SimResponse(const SimRequest&)>;

// Serves HTTP/1.1 with keep-alive (Beast, after example/http/server/async), over TLS when
// options.tls is set, and then HTTP/2 too (one handler, two framings), until SIGINT or SIGTERM.
// `on_listening` is called once with "ADDRESS:PORT" after the listener is bound.
// InvalidArgument for a non-loopback or malformed address, an unusable certificate or key or an
// unknown ALPN protocol; IoError when binding fails.
Status RunServer(const ServerOptions& options, RequestHandler handler,
                 const std::function<void(const std::string&)>& on_listening);

}  // namespace egress::sim
