#pragma once

#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "dispatcher/base/host_port.h"
#include "dispatcher/base/result.h"

namespace egress::service {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
// Sends the response of one request; call exactly once, on the loop thread.
using Respond = std::function<void(HttpResponse&&)>;
// Handles one request; may answer later (after a storage call) through `respond`.
using HttpHandler = std::function<void(HttpRequest&& request, Respond respond)>;

struct HttpServerOptions {
  // Where to listen (ResolveListenAddress); port 0 picks a free one. Default: 127.0.0.1:8686.
  HostPort listen{.host = "127.0.0.1", .port = 8686};
  size_t max_body_bytes = 16 << 20;       // larger bodies get 413. Default: 16 MiB.
  std::chrono::seconds idle_timeout{60};  // Default: 60 s.
};

// Our own HTTP/1.1 server (Boost.Beast, after its http_server_async example): keep-alive,
// one request at a time per connection. Sessions are shared_ptrs kept alive by their pending
// operations. All methods and handlers run on the thread running `io`, which must outlive the
// server.
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

 private:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, HttpHandler handler);
  void Accept();

  boost::asio::io_context& io_;
  const HttpServerOptions options_;
  std::shared_ptr<HttpHandler> handler_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp::endpoint endpoint_;
  std::shared_ptr<bool> draining_;
};

// The address a listener for `listen` binds: an IP literal as it is; a name through the system's
// resolver (/etc/hosts, DNS), its first IPv4 address when it has one ("localhost" is 127.0.0.1,
// as clients that try IPv4 first expect), else its first IPv6 one. Unavailable ("cannot resolve
// host '...': reason") when the name does not resolve. Blocks while a name is resolved; call at
// start only.
Result<boost::asio::ip::tcp::endpoint> ResolveListenAddress(const HostPort& listen);

}  // namespace egress::service
