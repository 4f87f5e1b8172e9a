#pragma once

#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>

#include "tests/simulator/http_server.h"
#include "tests/simulator/server_types.h"
#include "tests/simulator/sim_request_parser.h"
#include "tests/simulator/sim_response_format.h"

// The HTTP/1.1 framing of the simulator's server, over plain TCP (Socket) or TLS (TlsStream).
// Internal to the server (http_server.cc); a template only because of the two stream types.
namespace egress::sim::http1_detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// Most bytes asked of one read (Beast's http::read asks the same).
constexpr std::size_t kReadLimit = 64 * 1024;

// One connection: read a request, answer it (after an optional delay), repeat while keep-alive.
// Runs on its own strand; I/O handlers hold this->shared_from_this(), the idle timer a weak_ptr.
// The request, the response and their buffers are reused from one request to the next.
template <typename Stream>
class Http1Session : public std::enable_shared_from_this<Http1Session<Stream>> {
 public:
  Http1Session(Stream&& stream, const RequestHandler& handler, SimProtocol protocol)
      : socket_(std::move(stream)),
        idle_timer_(socket_.get_executor()),
        delay_timer_(socket_.get_executor()),
        handler_(handler) {
    request_.protocol = protocol;
  }

  void Start() {
    asio::dispatch(socket_.get_executor(), [self = this->shared_from_this()] {
      self->ArmIdleTimer();
      self->ReadRequest();
    });
  }

 private:
  // Parses the next request from bytes already here (pipelining) or from the socket.
  void ReadRequest() {
    parser_.emplace(request_);
    parser_->body_limit(kBodyLimit);
    parser_->eager(true);
    if (buffer_.size() > 0) {
      Parse();
    } else {
      ReadSome();
    }
  }

  void ReadSome() {
    socket_.async_read_some(buffer_.prepare(beast::read_size(buffer_, kReadLimit)),
                            [self = this->shared_from_this()](beast::error_code ec, size_t bytes) {
                              self->OnReadSome(ec, bytes);
                            });
  }

  void OnReadSome(beast::error_code ec, size_t bytes) {
    if (ec == asio::error::eof && !parser_->got_some()) {
      CloseSend();
      return;
    }
    if (ec) {
      return;
    }
    active_ = true;
    buffer_.commit(bytes);
    Parse();
  }

  void Parse() {
    while (!parser_->is_done()) {
      if (buffer_.size() == 0) {
        ReadSome();
        return;
      }
      beast::error_code ec;
      size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more || (!ec && used == 0)) {
        ReadSome();
        return;
      }
      if (ec) {
        return;  // malformed or too large: drop the connection
      }
    }
    Respond();
  }

  void Respond() {
    const unsigned version = parser_->version();
    const bool keep_alive = parser_->keep_alive();
    response_ = handler_(request_);
    if (response_.reset_connection && response_.delay_ms <= 0) {
      Reset();
      return;
    }
    out_.clear();
    keep_alive_ = AppendHttpResponse(response_, version, keep_alive, out_);
    if (response_.delay_ms > 0) {
      delay_timer_.expires_after(std::chrono::milliseconds(response_.delay_ms));
      delay_timer_.async_wait(
          [self = this->shared_from_this()](beast::error_code ec) { self->OnDelay(ec); });
      return;
    }
    Write();
  }

  void OnDelay(beast::error_code ec) {
    if (ec) {
      return;
    }
    if (response_.reset_connection) {
      Reset();
      return;
    }
    Write();
  }

  void Write() {
    asio::async_write(socket_, asio::buffer(out_),
                      [self = this->shared_from_this()](beast::error_code ec, size_t /*bytes*/) {
                        self->OnWrite(ec);
                      });
  }

  void OnWrite(beast::error_code ec) {
    if (ec) {
      return;
    }
    if (!keep_alive_) {
      CloseSend();
      return;
    }
    ReadRequest();
  }

  // Every kIdleTimeout: closes the connection when no request arrived since the last tick (the
  // pending read or write then fails and the session ends). One timer wait per period instead
  // of one per read and write.
  void ArmIdleTimer() {
    idle_timer_.expires_after(kIdleTimeout);
    idle_timer_.async_wait([weak = this->weak_from_this()](beast::error_code ec) {
      std::shared_ptr<Http1Session> self = weak.lock();
      if (ec || !self) {
        return;
      }
      if (!self->active_) {
        beast::error_code ignored;
        LowestLayer(self->socket_).close(ignored);
        self->delay_timer_.cancel();
        return;
      }
      self->active_ = false;
      self->ArmIdleTimer();
    });
  }

  // Ends the sending side: a FIN on plain TCP; over TLS a close_notify first, then the socket is
  // closed once the peer answers it (or fails to: the idle timer closes it at the latest).
  void CloseSend() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      socket_.async_shutdown([self = this->shared_from_this()](beast::error_code) {
        beast::error_code ignored;
        LowestLayer(self->socket_).close(ignored);
        self->idle_timer_.cancel();
      });
    } else {
      beast::error_code ignored;
      socket_.shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  // Closes with SO_LINGER 0, so the peer sees a connection reset.
  void Reset() {
    beast::error_code ignored;
    LowestLayer(socket_).set_option(asio::socket_base::linger(true, 0), ignored);
    LowestLayer(socket_).close(ignored);
    idle_timer_.cancel();
  }

  Stream socket_;
  Timer idle_timer_;
  Timer delay_timer_;
  beast::flat_buffer buffer_;
  SimRequest request_;
  std::optional<SimRequestParser> parser_;
  SimResponse response_;
  std::string out_;
  bool keep_alive_ = true;
  bool active_ = false;  // a request arrived since the last idle tick
  const RequestHandler& handler_;
};

}  // namespace egress::sim::http1_detail

namespace egress::sim {
using http1_detail::Http1Session;
}  // namespace egress::sim
