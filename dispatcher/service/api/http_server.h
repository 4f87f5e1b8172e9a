#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include "dispatcher/base/host_port.h"
#include "dispatcher/base/result.h"

namespace egress::service {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// Sends the response of one request; call exactly once, on the loop thread.
using Respond = std::function<void(HttpResponse&&)>;
// Handles one request from `peer` (the client's address, unspecified when it could not be
// read); may answer later (after a storage call) through `respond`.
using HttpHandler = std::function<void(HttpRequest&& request, const boost::asio::ip::address& peer,
                                       Respond respond)>;

// The largest body a request may have, given its method and target (read before the body).
using BodyLimit = std::function<size_t(boost::beast::http::verb method, std::string_view target)>;

struct HttpServerOptions {
  // Where to listen (ResolveListenAddress); port 0 picks a free one. Default: 127.0.0.1:8686.
  HostPort listen{.host = "127.0.0.1", .port = 8686};
  // Larger bodies get 413 and the connection closes. `body_limit`, when set, decides per request
  // instead. Default: 1 MiB.
  size_t max_body_bytes = 1 << 20;
  BodyLimit body_limit;
  // Connections open at once; a connection accepted over it is closed at once (counted in
  // HttpServerStats::refused). Default: 4096.
  size_t max_connections = 4096;
  // The longest a connection may take to send the whole of its next request, from its accept or
  // the end of its last answer; then it is closed. Default: 60 s.
  std::chrono::milliseconds read_timeout{60'000};
  // The longest the writing of one answer may take (a client that stops reading); then the
  // connection is closed. Default: 30 s.
  std::chrono::milliseconds write_timeout{30'000};
  // The first wait before accepting again after accept() failed (out of file descriptors or
  // memory); it doubles on each failure in a row, up to 1 s. Default: 50 ms.
  std::chrono::milliseconds accept_backoff{50};
};

// What the server counted since it started; read on the loop thread.
struct HttpServerStats {
  size_t open = 0;               // connections open now
  uint64_t accepted = 0;         // connections accepted and served
  uint64_t refused = 0;          // connections closed at once, over max_connections
  uint64_t accept_failures = 0;  // accept() errors (EMFILE, ENFILE, ENOMEM, ...)
  uint64_t read_timeouts = 0;    // connections closed by read_timeout within a request
  uint64_t write_timeouts = 0;   // connections closed by write_timeout
};

// Our own HTTP/1.1 server (Boost.Beast, after its http_server_async example): keep-alive,
// one request at a time per connection. Sessions are shared_ptrs kept alive by their pending
// operations. All methods and handlers run on the thread running `io`, which must outlive the
// server.
//
// Bounded against hostile clients: at most max_connections open (more are closed at once), a
// deadline on reading each request and on writing each answer (a stalled or slow connection
// costs one socket and its buffers until its deadline, never the loop), a body limit read from
// the request line, and a back-off when accept() fails, so a process out of file descriptors
// does not spin (the pending connections wait in the listen backlog).
class HttpServer {
 public:
  // Resolves options.listen (ResolveListenAddress), binds and listens. Unavailable when the
  // host does not resolve or the address cannot be bound (port taken, not a local address).
  static Result<std::unique_ptr<HttpServer>> Start(boost::asio::io_context& io,
                                                   const HttpServerOptions& options,
                                                   HttpHandler handler);
  ~HttpServer();

  // The bound endpoint (with the real port when 0 was asked for).
  boost::asio::ip::tcp::endpoint endpoint() const { return endpoint_; }
  // Stops accepting; open connections finish their current request and close.
  void StopAccepting();
  const HttpServerStats& stats() const;

 private:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, HttpHandler handler);
  void Accept();
  void OnAcceptFailed(const boost::system::error_code& ec);

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp::endpoint endpoint_;
  // What sessions share with the server; they may outlive it.
  std::shared_ptr<struct HttpServerShared> shared_;
  boost::asio::steady_timer backoff_timer_;
  std::chrono::milliseconds backoff_{0};  // 0: accepting normally
};

// The address a listener for `listen` binds: an IP literal as it is; a name through the system's
// resolver (/etc/hosts, DNS), its first IPv4 address when it has one ("localhost" is 127.0.0.1,
// as clients that try IPv4 first expect), else its first IPv6 one. Unavailable ("cannot resolve
// host '...': reason") when the name does not resolve. Blocks while a name is resolved; call at
// start only.
Result<boost::asio::ip::tcp::endpoint> ResolveListenAddress(const HostPort& listen);

}  // namespace egress::service
