#include "dispatcher/service/api/http_session.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <fmt/format.h>

#include "dispatcher/service/api/proxy_protocol.h"
#include "dispatcher/service/event_log.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// A header is at most this long (431 beyond): Beast's default, nginx's large header buffer.
constexpr uint32_t kHeaderLimit = 8 << 10;
// What one read of a header asks for at most.
constexpr size_t kHeaderRead = 4 << 10;
// What one connection's read buffer may grow to (a body passes through it into the request).
constexpr size_t kBufferLimit = 64 << 10;
// Bytes read at a time while a PROXY header is incomplete: at most its bound in all.
constexpr size_t kProxyRead = 256;
// An idle connection's read buffer over this is given back between requests.
constexpr size_t kIdleBufferKeep = 4 << 10;
// After refusing a request with its body unread, the most read and dropped before closing (into
// one shared buffer: it costs time, not memory): past the largest body a route takes, so that a
// client which reads its answer only after sending its whole body still gets it.
constexpr size_t kLingerBytes = 64 << 20;
constexpr std::chrono::seconds kLingerTime{2};
// The longest a health slot waits for its probe's header.
constexpr std::chrono::seconds kHealthHeaderTimeout{2};
// Freed bodies at least this large ask for a memory release (HttpServerOptions).
constexpr size_t kReleaseAfter = 1 << 20;

HttpResponse PlainError(http::status status, std::string_view code, std::string_view message) {
  HttpResponse res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.body() = fmt::format(R"({{"error":"{}","message":"{}"}})", code, message);
  res.prepare_payload();
  return res;
}

HttpResponse Busy() {
  HttpResponse res = PlainError(http::status::service_unavailable, "server_busy",
                                "the server holds as many request bytes as it may; retry");
  res.set(http::field::retry_after, "1");
  return res;
}

bool IsHealthProbe(const HttpRequestHeader& header) {
  if (header.method() != http::verb::get) {
    return false;
  }
  beast::string_view target = header.target();
  target = target.substr(0, target.find('?'));
  return target == "/healthz" || target == "/readyz";
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, std::shared_ptr<HttpServerShared> shared, std::string address_key,
          bool health_only)
      : stream_(std::move(socket)),
        buffer_(kBufferLimit),
        shared_(std::move(shared)),
        address_key_(std::move(address_key)),
        health_only_(health_only) {
    boost::system::error_code ec;
    const tcp::endpoint remote = stream_.socket().remote_endpoint(ec);
    if (!ec) {
      peer_ = remote.address();
    }
    ++shared_->stats.open;
    ++shared_->stats.accepted;
    if (health_only_) {
      ++shared_->health_open;
    }
  }

  ~Session() {
    ChargeHeader(0);
    ReleaseBody();
    --shared_->stats.open;
    if (health_only_) {
      --shared_->health_open;
    }
    if (!address_key_.empty()) {
      auto it = shared_->per_address.find(address_key_);
      if (it != shared_->per_address.end() && --it->second == 0) {
        shared_->per_address.erase(it);
      }
    }
  }

  void Run() {
    stream_.expires_after(health_only_ ? std::min<std::chrono::milliseconds>(
                                             options().header_timeout, kHealthHeaderTimeout)
                                       : options().header_timeout);
    header_started_ = true;  // a new connection's deadline runs from its accept
    if (options().proxy_protocol && options().trusted_proxies.Trusts(peer_)) {
      ReadProxyHeader();  // within the same deadline
      return;
    }
    StartRequest();
  }

 private:
  const HttpServerOptions& options() const { return shared_->options; }

  // A new request: its header is read a part at a time, so that what the connection holds is
  // counted (max_header_bytes_in_flight) and nothing of the body is read before the gate.
  void StartRequest() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    // The gate's limit is set once the header is read. Not boost::none, which Beast 1.81 means
    // as "no limit" but compares as less than any length when the header ends (every
    // Content-Length body is then over it).
    parser_->body_limit(std::numeric_limits<uint64_t>::max());
    in_header_ = true;
    if (!header_started_) {
      // A kept-alive connection: idle until its next request starts (maybe already buffered).
      if (buffer_.size() > 0) {
        header_started_ = true;
        stream_.expires_after(options().header_timeout);
      } else {
        stream_.expires_after(options().idle_timeout);
      }
    }
    ParseHeader();
  }

  // A trusted proxy's connection starts with a PROXY protocol header (server.proxy_protocol):
  // read until it is whole, then its source is the peer and HTTP starts after it. A connection
  // without one, or with a malformed one, is closed unanswered (the proxy would not read an
  // answer in HTTP), counted in proxy_header_refused.
  void ReadProxyHeader() {
    const std::string_view held(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    Result<std::optional<ProxyHeader>> header = ParseProxyHeader(held);
    if (!header) {
      ++shared_->stats.proxy_header_refused;
      Close();
      return;
    }
    if (*header) {
      buffer_.consume((*header)->size);
      if ((*header)->source) {
        peer_ = *(*header)->source;
      }
      StartRequest();
      return;
    }
    stream_.async_read_some(buffer_.prepare(kProxyRead),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->buffer_.commit(n);
                              if (ec) {
                                self->Close();
                                return;
                              }
                              self->ReadProxyHeader();
                            });
  }

  // Beast's http::async_read_some would read on until the whole header has come (its parser
  // takes a header only whole), holding what came meanwhile uncounted; so the header's bytes
  // are read here and offered to the parser after each read.
  void ReadHeaderPart() {
    const size_t room = std::min<size_t>(kHeaderRead, buffer_.max_size() - buffer_.size());
    if (room == 0) {
      OnReadError(http::error::header_limit);
      return;
    }
    stream_.async_read_some(buffer_.prepare(room),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->buffer_.commit(n);
                              self->OnHeaderPart(ec);
                            });
  }

  void OnHeaderPart(beast::error_code ec) {
    if (ec) {
      OnReadError(ec);
      return;
    }
    if (!header_started_) {
      header_started_ = true;  // its first bytes came: the header has header_timeout from now
      stream_.expires_after(options().header_timeout);
    }
    ParseHeader();
  }

  // Offers what the buffer holds to the parser: the header once it is whole, else another read,
  // with what the connection holds for it counted first.
  void ParseHeader() {
    if (buffer_.size() > 0) {
      beast::error_code ec;
      buffer_.consume(parser_->put(buffer_.data(), ec));
      if (ec && ec != http::error::need_more) {
        OnReadError(ec);
        return;
      }
    }
    if (!parser_->is_header_done()) {
      if (!ChargeHeader(buffer_.capacity())) {
        ++shared_->stats.busy;
        Refuse(Busy());
        return;
      }
      ReadHeaderPart();
      return;
    }
    ChargeHeader(0);
    in_header_ = false;
    OnHeader();
  }

  // Counts `bytes` held for this connection's header; false when that passes the budget.
  bool ChargeHeader(size_t bytes) {
    size_t& total = shared_->stats.header_bytes;
    total -= header_charge_;
    header_charge_ = 0;
    if (bytes > 0 && total + bytes > options().max_header_bytes_in_flight) {
      return false;
    }
    total += bytes;
    header_charge_ = bytes;
    return true;
  }

  void OnHeader() {
    const HttpRequestHeader& header = parser_->get();
    if (health_only_ && !IsHealthProbe(header)) {
      ++shared_->stats.busy;
      Refuse(PlainError(http::status::service_unavailable, "server_busy",
                        "every connection slot is taken; retry"));
      return;
    }
    if (options().gate) {
      auto decided = options().gate(header, peer_);
      if (auto* refusal = std::get_if<HttpResponse>(&decided)) {
        ++shared_->stats.refused_at_header;
        Refuse(std::move(*refusal));
        return;
      }
      admission_ = std::move(std::get<Admission>(decided));
    } else {
      admission_ = Admission{.client = peer_, .body_limit = options().max_body_bytes};
    }
    if (admission_.body_owner.empty()) {
      admission_.body_owner = "@" + AddressKey(admission_.client);
    }
    const boost::optional<uint64_t> length = parser_->content_length();
    if (length && *length > admission_.body_limit) {
      RefuseTooLarge();
      return;
    }
    parser_->body_limit(admission_.body_limit);
    if (length && *length > 0 && !TakeBody(*length)) {
      return;
    }
    stream_.expires_after(options().read_timeout);
    const bool has_body = parser_->chunked() || (length && *length > 0);
    auto expect = header.find(http::field::expect);
    if (has_body && expect != header.end() &&
        beast::iequals(expect->value(), beast::string_view("100-continue"))) {
      // The client waits for this before it sends the body (curl: 1 s without it).
      auto go_on = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
      http::async_write(stream_, *go_on,
                        [self = shared_from_this(), go_on](beast::error_code ec, size_t) {
                          if (ec) {
                            self->OnReadError(ec);
                            return;
                          }
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  // Counts `n` more body bytes for this request; false (and the request refused) over budget.
  bool TakeBody(size_t n) {
    if (!shared_->TakeBodyBytes(admission_.body_owner, n)) {
      ++shared_->stats.busy;
      Refuse(Busy());
      return false;
    }
    body_charge_ += n;
    return true;
  }

  void ReleaseBody() {
    if (body_charge_ > 0) {
      shared_->GiveBodyBytes(admission_.body_owner, body_charge_);
      body_charge_ = 0;
    }
  }

  void ReadBody() {
    if (parser_->is_done()) {
      Dispatch();
      return;
    }
    http::async_read_some(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBodyPart(ec); });
  }

  void OnBodyPart(beast::error_code ec) {
    if (ec) {
      OnReadError(ec);
      return;
    }
    // A chunked body grows as it comes (a declared length was counted whole, and the body
    // reserved it at once).
    const size_t held = parser_->get().body().capacity();
    if (held > body_charge_ && !TakeBody(held - body_charge_)) {
      return;
    }
    ReadBody();
  }

  void OnReadError(beast::error_code ec) {
    if (ec == beast::error::timeout) {
      if (in_header_ && header_started_ && (parser_->got_some() || buffer_.size() > 0)) {
        ++shared_->stats.header_timeouts;  // stalled within a header, not merely idle
      } else if (!in_header_) {
        ++shared_->stats.read_timeouts;
      }
      Close();
      return;
    }
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof ||
        ec == asio::error::broken_pipe) {
      Close();
      return;
    }
    if (ec == http::error::body_limit) {
      RefuseTooLarge();
      return;
    }
    if (ec == http::error::header_limit) {
      Refuse(PlainError(http::status::request_header_fields_too_large, "header_too_large",
                        "the request's header is over 8 KiB"));
      return;
    }
    Refuse(PlainError(http::status::bad_request, "bad_request", "malformed HTTP request"));
  }

  void RefuseTooLarge() {
    Refuse(PlainError(http::status::payload_too_large, "payload_too_large",
                      "request body is over the server's limit"));
  }

  // Answers without reading (more of) the body; the connection closes after it.
  void Refuse(HttpResponse&& res) {
    keep_alive_ = false;
    linger_ = true;
    Write(std::move(res));
  }

  void Dispatch() {
    HttpRequest req = parser_->release();
    keep_alive_ = req.keep_alive() && !shared_->draining && !health_only_;
    if (buffer_.size() == 0 && buffer_.capacity() > kIdleBufferKeep) {
      buffer_.shrink_to_fit();  // an idle kept-alive connection holds no large buffer
    }
    stream_.expires_never();  // the handler may take a while (fsync); the client waits
    const uint64_t request = ++request_;
    answered_ = false;
    Respond respond = [self = shared_from_this(), request](HttpResponse&& res) {
      self->Answer(request, std::move(res));
    };
    // The guard of last resort: no request can end the process. A handler that throws (a bug:
    // handlers return errors as values) gets a 500 envelope and an error event, and the
    // connection closes; a late answer to that request is dropped.
    try {
      shared_->handler(std::move(req), admission_, std::move(respond));
    } catch (const std::exception& e) {
      HandlerFailed(request, e.what());
    } catch (...) {
      HandlerFailed(request, "unknown exception");
    }
  }

  // The one answer to request number `request`; any other is dropped.
  void Answer(uint64_t request, HttpResponse&& res) {
    if (request != request_ || answered_) {
      return;
    }
    answered_ = true;
    Write(std::move(res));
  }

  void HandlerFailed(uint64_t request, std::string_view what) {
    LogEvent(LogLevel::kError, "handler_failed", {{"error", std::string(what)}});
    keep_alive_ = false;
    Answer(request, PlainError(http::status::internal_server_error, "internal",
                               "the server failed on this request; the event is logged"));
  }

  void Write(HttpResponse&& res) {
    res.keep_alive(keep_alive_);
    auto owned = std::make_shared<HttpResponse>(std::move(res));
    stream_.expires_after(options().write_timeout);
    http::async_write(stream_, *owned,
                      [self = shared_from_this(), owned](beast::error_code ec, size_t) mutable {
                        const size_t bytes = owned->body().size();
                        owned.reset();  // the answer is sent: free it before the next request
                        self->shared_->ReleaseAfter(bytes);
                        self->OnWrite(ec);
                      });
  }

  void OnWrite(beast::error_code ec) {
    ReleaseBody();  // the request is answered: its body is the handler's to free
    if (ec == beast::error::timeout) {
      ++shared_->stats.write_timeouts;
    }
    if (ec || !keep_alive_) {
      Close();
      if (!ec && linger_) {
        Linger();
      }
      return;
    }
    header_started_ = false;
    StartRequest();
  }

  // After refusing a request whose body was not read: reads and drops what the client still
  // sends, until its FIN, kLingerBytes or kLingerTime, so that closing a socket with unread data
  // (which sends RST, and the client may then lose the answer before reading it) only happens to
  // a client that keeps sending. nginx's lingering_close does the same.
  void Linger() {
    if (!linger_started_) {
      linger_started_ = true;
      stream_.expires_after(kLingerTime);
    }
    if (lingered_ >= kLingerBytes) {
      return;  // the socket closes with this session
    }
    stream_.async_read_some(asio::buffer(shared_->discard),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (!ec) {
                                self->Linger();
                              }
                            });
  }

  // Sends FIN; the socket itself closes when the last operation holding the session ends (at
  // once when none is pending). After a timeout the stream has closed the socket already.
  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<HttpServerShared> shared_;
  const std::string address_key_;  // counted in per_address; empty: not counted
  const bool health_only_;
  Admission admission_;
  bool in_header_ = true;        // reading a header (else a body, or answering)
  bool header_started_ = false;  // the header deadline runs (else idle between requests)
  size_t header_charge_ = 0;     // counted in stats.header_bytes
  size_t body_charge_ = 0;       // counted for admission_.body_owner
  bool keep_alive_ = true;
  bool linger_ = false;          // the request was refused with its body (maybe) unread
  bool linger_started_ = false;  // Linger's deadline is set
  size_t lingered_ = 0;          // bytes Linger dropped
  uint64_t request_ = 0;         // the number of the request being answered
  asio::ip::address peer_;       // the client's address; unspecified when it could not be read
  bool answered_ = false;
};

}  // namespace

bool HttpServerShared::TakeBodyBytes(const std::string& owner, size_t n) {
  const size_t budget = options.max_body_bytes_in_flight;
  size_t& held = body_owners[owner];
  if (stats.body_bytes + n > budget || held + n > std::max<size_t>(1, budget / 2)) {
    if (held == 0) {
      body_owners.erase(owner);
    }
    return false;
  }
  held += n;
  stats.body_bytes += n;
  return true;
}

void HttpServerShared::GiveBodyBytes(const std::string& owner, size_t n) {
  stats.body_bytes -= std::min(n, stats.body_bytes);
  auto it = body_owners.find(owner);
  if (it != body_owners.end()) {
    it->second -= std::min(n, it->second);
    if (it->second == 0) {
      body_owners.erase(it);
    }
  }
  ReleaseAfter(n);
}

void HttpServerShared::ReleaseAfter(size_t n) {
  if (n < kReleaseAfter || !options.release_free_memory || release_armed || draining) {
    return;
  }
  // Once a second at most: a release walks the allocator's free lists.
  release_armed = true;
  release_timer.expires_after(std::chrono::seconds(1));
  release_timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    self->release_armed = false;
    if (!ec && !self->draining) {
      self->options.release_free_memory();
    }
  });
}

void StartSession(tcp::socket&& socket, std::shared_ptr<HttpServerShared> shared,
                  std::string address_key, bool health_only) {
  std::make_shared<Session>(std::move(socket), std::move(shared), std::move(address_key),
                            health_only)
      ->Run();
}

}  // namespace egress::service
