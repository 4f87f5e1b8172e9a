#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "dispatcher/base/status.h"
#include "tests/simulator/sim_message.h"

namespace egress::sim {

struct ServerOptions {
  // Must be a loopback address (127.0.0.0/8 or ::1). Default: 127.0.0.1.
  std::string address = "127.0.0.1";
  // 0 = any free port.
  uint16_t port = 0;
  // Loop threads; each connection runs on its own strand. Default: 2.
  int threads = 2;
};

// Called for every request, from any loop thread; must be thread-safe. The request is valid
// only during the call (the connection reuses it for its next request).
using RequestHandler = std::function<SimResponse(const SimRequest&)>;

// Serves HTTP/1.1 with keep-alive (Beast, after example/http/server/async) until SIGINT or
// SIGTERM. `on_listening` is called once with "ADDRESS:PORT" after the listener is bound.
// InvalidArgument for a non-loopback or malformed address; IoError when binding fails.
Status RunServer(const ServerOptions& options, RequestHandler handler,
                 const std::function<void(const std::string&)>& on_listening);

}  // namespace egress::sim
