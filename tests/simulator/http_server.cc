#include "tests/simulator/http_server.h"

#include <algorithm>
#include <csignal>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/error.hpp>
#include <fmt/format.h>

#include "dispatcher/base/clock.h"
#include "tests/simulator/h2_session.h"
#include "tests/simulator/http1_session.h"
#include "tests/simulator/server_types.h"
#include "tests/simulator/tls_context.h"

namespace egress::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = boost::asio::ip::tcp;

// A handshake that has not completed in this long is dropped.
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);

// The TLS handshake of one connection, then the framing ALPN chose: HTTP/2 for "h2", HTTP/1.1
// otherwise. Runs on the connection's strand; handlers hold shared_from_this().
class TlsHandshake : public std::enable_shared_from_this<TlsHandshake> {
 public:
  TlsHandshake(Socket&& socket, asio::ssl::context& ctx, const RequestHandler& handler,
               const H2Limits& limits)
      : stream_(std::move(socket), ctx),
        timer_(stream_.get_executor()),
        handler_(handler),
        limits_(limits) {}

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->timer_.expires_after(kHandshakeTimeout);
      self->timer_.async_wait([weak = self->weak_from_this()](beast::error_code ec) {
        std::shared_ptr<TlsHandshake> me = weak.lock();
        if (!ec && me) {
          beast::error_code ignored;
          LowestLayer(me->stream_).close(ignored);
        }
      });
      self->stream_.async_handshake(asio::ssl::stream_base::server,
                                    [self](beast::error_code ec) { self->OnHandshake(ec); });
    });
  }

 private:
  void OnHandshake(beast::error_code ec) {
    timer_.cancel();
    if (ec) {
      return;  // a client that refused our certificate, or not TLS at all
    }
    if (NegotiatedH2(stream_.native_handle())) {
      StartH2Session(std::move(stream_), handler_, limits_);
      return;
    }
    std::make_shared<Http1Session<TlsStream>>(std::move(stream_), handler_, SimProtocol::kHttp1Tls)
        ->Start();
  }

  TlsStream stream_;
  Timer timer_;
  const RequestHandler& handler_;
  const H2Limits limits_;
};

// Accepts connections and starts a session (plain HTTP/1.1) or a TLS handshake on a fresh
// strand for each.
class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(asio::io_context& ioc, tcp::acceptor&& acceptor, const RequestHandler& handler,
           TlsServerContext* tls, const H2Limits& limits)
      : ioc_(ioc), acceptor_(std::move(acceptor)), handler_(handler), tls_(tls), limits_(limits) {}

  void DoAccept() {
    acceptor_.async_accept(asio::make_strand(ioc_),
                           [self = shared_from_this()](beast::error_code ec, Socket socket) {
                             self->OnAccept(ec, std::move(socket));
                           });
  }

 private:
  void OnAccept(beast::error_code ec, Socket socket) {
    if (ec == asio::error::operation_aborted) {
      return;
    }
    if (!ec) {
      beast::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      if (tls_ != nullptr) {
        std::make_shared<TlsHandshake>(std::move(socket), tls_->context(), handler_, limits_)
            ->Start();
      } else {
        std::make_shared<Http1Session<Socket>>(std::move(socket), handler_, SimProtocol::kHttp1)
            ->Start();
      }
    }
    DoAccept();
  }

  asio::io_context& ioc_;
  tcp::acceptor acceptor_;
  const RequestHandler& handler_;
  TlsServerContext* tls_;  // null: plain HTTP
  const H2Limits limits_;
};

Status Bind(asio::io_context& ioc, const ServerOptions& options, tcp::acceptor& acceptor) {
  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(options.address, ec);
  if (ec) {
    return Status::InvalidArgument("not an IP address: " + options.address);
  }
  if (!address.is_loopback()) {
    return Status::InvalidArgument("the simulator binds loopback only, not " + options.address);
  }
  tcp::endpoint endpoint(address, options.port);
  acceptor = tcp::acceptor(asio::make_strand(ioc));
  if (acceptor.open(endpoint.protocol(), ec); ec) {
    return Status::IoError("open: " + ec.message());
  }
  if (acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec) {
    return Status::IoError("reuse_address: " + ec.message());
  }
  if (acceptor.bind(endpoint, ec); ec) {
    return Status::IoError(
        fmt::format("bind {}:{}: {}", options.address, options.port, ec.message()));
  }
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return Status::IoError("listen: " + ec.message());
  }
  return Status::Ok();
}

}  // namespace

Status RunServer(const ServerOptions& options, RequestHandler handler,
                 const std::function<void(const std::string&)>& on_listening) {
  const int threads = std::max(1, options.threads);
  std::unique_ptr<TlsServerContext> tls;
  if (options.tls.has_value()) {
    Result<std::unique_ptr<TlsServerContext>> made = TlsServerContext::Create(*options.tls);
    if (!made.has_value()) {
      return made.error();
    }
    tls = std::move(*made);
  }
  if (options.h2_max_concurrent_streams == 0) {
    return Status::InvalidArgument("h2 max concurrent streams must be at least 1");
  }
  asio::io_context ioc(threads);
  tcp::acceptor acceptor(ioc);
  if (Status s = Bind(ioc, options, acceptor); !s.ok()) {
    return s;
  }
  tcp::endpoint bound = acceptor.local_endpoint();
  std::string host = bound.address().is_v6() ? "[" + bound.address().to_string() + "]"
                                             : bound.address().to_string();
  on_listening(fmt::format("{}:{}", host, bound.port()));
  std::make_shared<Listener>(ioc, std::move(acceptor), handler, tls.get(),
                             H2Limits{.max_concurrent_streams = options.h2_max_concurrent_streams})
      ->DoAccept();
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&ioc](const beast::error_code&, int) { ioc.stop(); });
  asio::steady_timer late_timer(ioc);
  std::function<void()> arm_late = [&] {
    late_timer.expires_after(options.late_tick);
    late_timer.async_wait([&, due = late_timer.expiry()](const beast::error_code& ec) {
      if (ec) {
        return;
      }
      options.on_loop_late(std::max(std::chrono::nanoseconds(0), SystemClock().Now() - due));
      arm_late();
    });
  };
  if (options.on_loop_late) {
    arm_late();
  }
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) {
    pool.emplace_back([&ioc] { ioc.run(); });
  }
  ioc.run();
  for (std::thread& t : pool) {
    t.join();
  }
  return Status::Ok();
}

}  // namespace egress::sim
