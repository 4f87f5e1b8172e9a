#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include "dispatcher/base/host_port.h"
#include "dispatcher/base/result.h"
#include "dispatcher/service/api/client_address.h"
#include "dispatcher/service/api/principal.h"
#include "dispatcher/service/api/response_body.h"

namespace egress::service {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<ResponseBody>;
// A request as far as its header: what the gate decides on. An HttpRequest is one.
using HttpRequestHeader = boost::beast::http::request_header<>;

// What the gate found from a request's header, handed to the handler with the whole request.
struct Admission {
  Principal principal;              // who the request acts as
  boost::asio::ip::address client;  // the client (TrustedProxies::ClientOf); may be unspecified
  size_t body_limit = 0;            // the largest body the request may have
  // Who the request's body bytes are counted against in HttpServerOptions'
  // max_body_bytes_in_flight (a tenant may hold half of it); empty: the request's client.
  std::string body_owner;
};

// Sends the response of one request; call exactly once, on the loop thread.
using Respond = std::function<void(HttpResponse&&)>;
// Decides on a request from its header and `peer` (the TCP peer, unspecified when it could not
// be read), before any of its body is read: an Admission, or the answer to send instead. A
// refused request's body is never read: the connection closes once the answer is written, after
// reading and dropping at most 64 MiB (2 s) of what the client still sends.
using HttpGate = std::function<std::variant<Admission, HttpResponse>(
    const HttpRequestHeader& header, const boost::asio::ip::address& peer)>;
// Handles one admitted request; may answer later (after a storage call) through `respond`.
using HttpHandler =
    std::function<void(HttpRequest&& request, const Admission& admission, Respond respond)>;

struct HttpServerOptions {
  // Where to listen (ResolveListenAddress); port 0 picks a free one. Default: 127.0.0.1:8686.
  HostPort listen{.host = "127.0.0.1", .port = 8686};
  // Decides on every request from its header (see HttpGate). Unset: every request is admitted
  // as Principal::kAnyone from its peer, with a body limit of max_body_bytes.
  HttpGate gate;
  // The body limit without a gate. Larger bodies get 413 and the connection closes.
  // Default: 1 MiB.
  size_t max_body_bytes = 1 << 20;
  // Connections open at once; a connection accepted over it is closed at once (counted in
  // HttpServerStats::refused), unless a health slot is free. Default: 4096.
  size_t max_connections = 4096;
  // Connections accepted over max_connections that may ask for GET /healthz or /readyz only:
  // each is answered once and closed (anything else gets 503 server_busy), so a probe gets an
  // answer while every slot is taken. Default: 8.
  size_t health_connections = 8;
  // Connections one client may hold open at once, counted by address (an IPv6 one by its /64:
  // one host holds a whole /64); over it a connection is closed as it arrives (counted in
  // HttpServerStats::refused_per_address). Connections from trusted_proxies are not counted
  // here: a proxy carries many clients. 0: no cap. Default: 64.
  size_t max_connections_per_address = 64;
  // The peers whose Forwarded / X-Forwarded-For name the client. Default: none.
  TrustedProxies trusted_proxies;
  // A connection from a trusted proxy starts with a PROXY protocol header (proxy_protocol.h),
  // whose source is the connection's peer from then on; one without is closed. Default: false.
  bool proxy_protocol = false;
  // The longest a new connection may take to send the whole header of its first request, and a
  // kept-alive one to finish a header once its first byte came; then it is closed.
  // Default: 10 s.
  std::chrono::milliseconds header_timeout{10'000};
  // The longest a kept-alive connection may stay idle waiting for its next request. Default: 60 s.
  std::chrono::milliseconds idle_timeout{60'000};
  // The longest a request's body may take to arrive, from the end of its header. Default: 60 s.
  std::chrono::milliseconds read_timeout{60'000};
  // The longest the writing of one answer may take (a client that stops reading); then the
  // connection is closed. Default: 30 s.
  std::chrono::milliseconds write_timeout{30'000};
  // The first wait before accepting again after accept() failed (out of file descriptors or
  // memory); it doubles on each failure in a row, up to 1 s. Default: 50 ms.
  std::chrono::milliseconds accept_backoff{50};
  // Bytes of request bodies read or being read and not yet answered, over every connection; one
  // owner (Admission::body_owner) may hold half of it. A request whose body would pass either is
  // answered 503 server_busy with Retry-After: 1 and its connection closed. Default: 256 MiB.
  size_t max_body_bytes_in_flight = 256 << 20;
  // Bytes the connections hold for requests whose header is still arriving (nobody is
  // authenticated yet), over every connection: a connection that needs more while they are
  // over it is closed. Each holds at most 8 KiB of header (431 beyond). Default: 16 MiB.
  size_t max_header_bytes_in_flight = 16 << 20;
  // Called on the loop, at most once a second, after request bodies or answers of 1 MiB or
  // more were freed (HttpServer::Freed too): gives free memory back to the system (the
  // allocator's release call). Default: none.
  std::function<void()> release_free_memory;
};

// What the server counted since it started; read on the loop thread.
struct HttpServerStats {
  size_t open = 0;                       // connections open now (health slots included)
  uint64_t accepted = 0;                 // connections accepted and served
  uint64_t refused = 0;                  // connections closed at once, over max_connections
  uint64_t refused_per_address = 0;      // closed at once, over max_connections_per_address
  uint64_t health_slot_connections = 0;  // accepted over max_connections into a health slot
  uint64_t accept_failures = 0;          // accept() errors (EMFILE, ENFILE, ENOMEM, ...)
  uint64_t header_timeouts = 0;          // closed by header_timeout within a request's header
  uint64_t read_timeouts = 0;            // closed by read_timeout within a request's body
  uint64_t write_timeouts = 0;           // connections closed by write_timeout
  uint64_t refused_at_header = 0;        // requests the gate refused (their body never read)
  uint64_t busy = 0;                     // requests refused over a bytes-in-flight budget
  uint64_t proxy_header_refused = 0;     // proxy_protocol: closed without a valid PROXY header
  size_t header_bytes = 0;               // held now for headers still arriving
  size_t body_bytes = 0;                 // held now for bodies read and not yet answered
};

// Our own HTTP/1.1 server (Boost.Beast, after its http_server_async example): keep-alive,
// one request at a time per connection. Sessions are shared_ptrs kept alive by their pending
// operations. All methods and handlers run on the thread running `io`, which must outlive the
// server.
//
// Bounded against hostile clients (docs/security.md, "The API's front door"): at most
// max_connections open and max_connections_per_address per client, health slots beyond them; a
// deadline on each request's header, on its body and on writing each answer (a stalled or slow
// connection costs one socket and its buffers until its deadline, never the loop); the gate
// decides on the header alone, so nothing is read of a body nobody authenticated; the bytes of
// headers and of bodies held at once each have a budget over every connection; a back-off when
// accept() fails, so a process out of file descriptors does not spin (the pending connections
// wait in the listen backlog).
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
  // `bytes` of an answer's text were freed elsewhere (a /metrics text at the end of its time):
  // when they are 1 MiB or more, asks for release_free_memory as after a large answer (on the
  // loop, at most once a second).
  void Freed(size_t bytes);

 private:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, HttpHandler handler);
  void Accept();
  void OnAccepted(boost::asio::ip::tcp::socket&& socket);
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
