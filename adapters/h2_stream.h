#pragma once

// What the HTTP/2 client (adapters/h2_transport.h) keeps per request and per origin: private to
// the adapters' h2_* files.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "adapters/http_transport.h"
#include "adapters/tls_client_context.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"

namespace egress::adapters::h2 {

// Times a request is sent again after a server refused it unprocessed (REFUSED_STREAM, above a
// GOAWAY's last stream id, or queued on a connection that closed before its HEADERS left), as
// libcurl's retry of a request on a dead reused connection is bounded.
constexpr int kMaxRetries = 5;

// An https:// URL split for a request: where to connect and what to ask for.
struct Target {
  std::string origin;  // "https://authority", lower-case: the pool's key
  std::string host;    // name or IP literal, without brackets
  std::string port;    // decimal
  uint16_t port_number = 443;
  std::string authority;  // as sent in :authority
  std::string path;       // path and query, "/" when empty
};

// `url` (an https:// URL) split, or InvalidArgument naming what this client does not take:
// user information, a host that is not a plain name or IP literal, a malformed or out-of-range
// port (such URLs go to libcurl, whose parser decides).
Result<Target> ParseHttpsTarget(std::string_view url);

class H2Connection;
struct Pool;

// One request, from Send to its callback.
struct Stream {
  HttpRequest request;
  HttpCallback done;
  Target target;
  Pool* pool = nullptr;
  SteadyTime started;
  SteadyTime deadline;
  HttpResponse response;
  size_t body_cap = 0;
  size_t body_sent = 0;
  size_t header_bytes = 0;
  size_t fields = 0;
  bool final_status = false;  // a non-1xx :status arrived
  bool complete = false;      // ... and then END_STREAM: the whole answer
  Status error;               // why the stream was reset by us (headers over the cap)
  H2Connection* connection = nullptr;
  int32_t id = -1;
  bool headers_sent = false;  // its HEADERS frame left: the server may have seen it
  int retries = 0;            // sent again after the server refused it unprocessed
};

// The connections and waiting requests of one origin with one TLS identity.
struct Pool {
  std::string key;
  Target target;  // of the first request: host, port, authority
  TlsIdentity identity;
  std::vector<std::shared_ptr<H2Connection>> connections;
  std::deque<Stream*> waiting;
};

}  // namespace egress::adapters::h2
