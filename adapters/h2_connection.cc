#include "adapters/h2_connection.h"

#include <netdb.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <netinet/in.h>
#include <openssl/x509.h>

namespace egress::adapters::h2 {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using ErrorCode = boost::system::error_code;

// Most bytes of frames gathered for one write.
constexpr size_t kWriteChunk = 64 * 1024;
// Response header bytes and fields one stream may receive: libcurl's CURL_MAX_HTTP_HEADER.
constexpr size_t kMaxResponseHeaderBytes = 100 * 1024;
constexpr size_t kMaxResponseFields = 512;
// Our receive windows: a stream's and the connection's. Answers are small; with these nghttp2
// sends a WINDOW_UPDATE once per 8 MiB received rather than after every answer.
constexpr int32_t kStreamWindow = 1 << 20;
constexpr int32_t kConnectionWindow = 16 << 20;

// Request headers HTTP/2 does not carry (RFC 9113 section 8.2.2), or that the transport writes
// itself (:authority for Host, content-length from the body).
bool SkippedRequestHeader(std::string_view lower, std::string_view value) {
  return lower == "host" || lower == "connection" || lower == "keep-alive" ||
         lower == "proxy-connection" || lower == "transfer-encoding" || lower == "upgrade" ||
         (lower == "te" && value != "trailers") || lower == "expect" || lower == "content-length";
}

nghttp2_nv Nv(std::string_view name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

size_t H2Connection::Capacity() const {
  auto cap = static_cast<size_t>(std::max(1L, transport_->options().max_concurrent_streams));
  if (session_ != nullptr) {
    cap = std::min<size_t>(cap, nghttp2_session_get_remote_settings(
                                    session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS));
  }
  return cap;
}

void H2Connection::Start(const std::optional<SsrfPolicy>& policy, SteadyTime connect_deadline) {
  connect_deadline_ = connect_deadline;
  const Target& target = pool_->target;
  if (Result<IpAddress> literal = IpAddress::Parse(target.host); literal.has_value()) {
    ErrorCode ec;
    const auto address = asio::ip::make_address(target.host, ec);
    OnResolved(ec, {tcp::endpoint(address, target.port_number)}, policy);
    return;
  }
  asio::post(transport_->lookups(), [weak = weak_from_this(), host = target.host,
                                     port = target.port, policy, &io = transport_->io()] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rv = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    std::vector<tcp::endpoint> endpoints;
    for (addrinfo* a = found; rv == 0 && a != nullptr; a = a->ai_next) {
      if (a->ai_family == AF_INET || a->ai_family == AF_INET6) {
        tcp::endpoint ep;
        std::memcpy(ep.data(), a->ai_addr, a->ai_addrlen);
        endpoints.push_back(ep);
      }
    }
    if (found != nullptr) {
      freeaddrinfo(found);
    }
    ErrorCode ec = rv == 0 ? ErrorCode() : asio::error::host_not_found;
    asio::post(io, [weak, ec, endpoints = std::move(endpoints), policy] {
      if (std::shared_ptr<H2Connection> self = weak.lock()) {
        self->OnResolved(ec, endpoints, policy);
      }
    });
  });
}

void H2Connection::OnResolved(const ErrorCode& ec, const std::vector<tcp::endpoint>& results,
                              const std::optional<SsrfPolicy>& policy) {
  if (transport_ == nullptr || closed()) {
    return;
  }
  if (ec) {
    Close(Status::Unavailable(fmt::format("{}: could not resolve host {}: {}", Where(),
                                          pool_->target.host, ec.message())));
    return;
  }
  // Only addresses the policy allows are tried (the connection itself may be the harm).
  std::vector<tcp::endpoint> allowed;
  Status refused;
  for (const tcp::endpoint& ep : results) {
    Result<IpAddress> address =
        IpAddress::FromSockaddr(ep.data(), static_cast<socklen_t>(ep.size()));
    if (!address.has_value()) {
      continue;
    }
    resolved_.push_back(*address);
    if (policy) {
      if (Status s = CheckDestination(*address, ep.port(), *policy); !s.ok()) {
        refused = std::move(s);
        continue;
      }
    }
    allowed.push_back(ep);
  }
  if (allowed.empty()) {
    Close(!refused.ok()
              ? refused
              : Status::Unavailable(fmt::format("{}: no address to connect to", Where())));
    return;
  }
  asio::async_connect(stream_.lowest_layer(), allowed,
                      [self = shared_from_this()](const ErrorCode& e, const tcp::endpoint& ep) {
                        self->OnConnected(e, ep);
                      });
}

void H2Connection::OnConnected(const ErrorCode& ec, const tcp::endpoint& endpoint) {
  if (transport_ == nullptr || closed()) {
    return;
  }
  if (ec) {
    Close(Status::Unavailable(fmt::format("{}: could not connect: {}", Where(), ec.message())));
    return;
  }
  transport_->CountOpened();
  ErrorCode ignored;
  stream_.lowest_layer().set_option(tcp::no_delay(true), ignored);
  Result<IpAddress> address =
      IpAddress::FromSockaddr(endpoint.data(), static_cast<socklen_t>(endpoint.size()));
  if (address.has_value()) {
    remote_ = *address;
  }
  remote_port_ = endpoint.port();
  transport_->contexts().PrepareConnection(stream_.native_handle(), pool_->target.host, pool_->key);
  stream_.async_handshake(
      ssl::stream_base::client,
      [self = shared_from_this()](const ErrorCode& e) { self->OnHandshake(e); });
}

void H2Connection::OnHandshake(const ErrorCode& ec) {
  if (transport_ == nullptr || closed()) {
    return;
  }
  if (ec) {
    const long verify = SSL_get_verify_result(stream_.native_handle());
    if (verify != X509_V_OK) {
      Close(Status::Rejected(fmt::format("{}: SSL peer certificate was not OK: {}", Where(),
                                         X509_verify_cert_error_string(verify))));
    } else {
      Close(
          Status::Unavailable(fmt::format("{}: TLS handshake failed: {}", Where(), ec.message())));
    }
    return;
  }
  const unsigned char* alpn = nullptr;
  unsigned int alpn_len = 0;
  SSL_get0_alpn_selected(stream_.native_handle(), &alpn, &alpn_len);
  if (std::string_view(reinterpret_cast<const char*>(alpn), alpn_len) != "h2") {
    transport_->SpeaksHttp1(*this);
    return;
  }
  if (Status s = StartSession(); !s.ok()) {
    Close(s);
    return;
  }
  state_ = State::kReady;
  idle_since_ = transport_->clock().Now();
  Read();
  transport_->Pump(*pool_);
  ScheduleFlush();
}

Status H2Connection::StartSession() {
  nghttp2_session_callbacks* cbs = nullptr;
  if (nghttp2_session_callbacks_new(&cbs) != 0) {
    return Status::Unavailable("nghttp2: out of memory");
  }
  nghttp2_session_callbacks_set_on_header_callback(cbs, &H2Connection::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &H2Connection::OnFrame);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &H2Connection::OnData);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &H2Connection::OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &H2Connection::OnFrameSent);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // Until the server's SETTINGS say otherwise, assume no more streams than we would open.
  nghttp2_option_set_peer_max_concurrent_streams(
      opt, static_cast<uint32_t>(std::max(1L, transport_->options().max_concurrent_streams)));
  const int rv = nghttp2_session_client_new2(&session_, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) {
    session_ = nullptr;
    return Status::Unavailable(fmt::format("nghttp2: {}", nghttp2_strerror(rv)));
  }
  const std::array<nghttp2_settings_entry, 3> settings = {{
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(kStreamWindow)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<uint32_t>(kMaxResponseHeaderBytes)},
  }};
  if (nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size()) != 0 ||
      nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow) !=
          0) {
    return Status::Unavailable("nghttp2: could not submit the connection's settings");
  }
  return Status::Ok();
}

void H2Connection::Submit(Stream& s) {
  const HttpRequest& r = s.request;
  if (r.ssrf) {
    // The pooled connection may have been opened for a request whose policy allowed its address.
    if (Status refused = CheckDestination(remote_, remote_port_, *r.ssrf); !refused.ok()) {
      transport_->Fail(s, refused);
      return;
    }
  }
  const bool with_body = !r.body.empty() || r.method == "POST" || r.method == "PUT";
  const std::string length = std::to_string(r.body.size());
  names_.clear();
  names_.reserve(r.headers.size());
  nva_.clear();
  nva_.push_back(Nv(":method", r.method));
  nva_.push_back(Nv(":scheme", "https"));
  nva_.push_back(Nv(":authority", s.target.authority));
  nva_.push_back(Nv(":path", s.target.path));
  bool user_agent = false;
  bool accept = false;
  for (const HttpHeader& h : r.headers) {
    names_.push_back(ToLowerAscii(h.name));
    const std::string& name = names_.back();
    if (SkippedRequestHeader(name, h.value)) {
      continue;
    }
    if (nghttp2_check_header_name(reinterpret_cast<const uint8_t*>(name.data()), name.size()) ==
            0 ||
        nghttp2_check_header_value(reinterpret_cast<const uint8_t*>(h.value.data()),
                                   h.value.size()) == 0) {
      transport_->Fail(s, Status::InvalidArgument(fmt::format("{} {}: header {} cannot be sent",
                                                              r.method, ShownUrl(r), h.name)));
      return;
    }
    user_agent = user_agent || name == "user-agent";
    accept = accept || name == "accept";
    nva_.push_back(Nv(name, h.value));
  }
  if (!user_agent && !transport_->options().user_agent.empty()) {
    nva_.push_back(Nv("user-agent", transport_->options().user_agent));
  }
  if (!accept) {
    nva_.push_back(Nv("accept", "*/*"));  // libcurl's default, kept for receivers that look
  }
  if (with_body) {
    nva_.push_back(Nv("content-length", length));
  }
  nghttp2_data_provider body{};
  body.read_callback = &H2Connection::ReadBody;
  const int32_t id = nghttp2_submit_request(session_, nullptr, nva_.data(), nva_.size(),
                                            with_body && !r.body.empty() ? &body : nullptr, &s);
  if (id < 0) {
    if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE) {
      going_away_ = true;  // ids used up: a new connection takes it
      transport_->Requeue(s);
      return;
    }
    transport_->Fail(s, Status::Unavailable(
                            fmt::format("{} {}: {}", r.method, ShownUrl(r), nghttp2_strerror(id))));
    return;
  }
  s.connection = this;
  s.id = id;
  streams_.insert(&s);
  ScheduleFlush();
}

void H2Connection::Abandon(Stream& s) {
  streams_.erase(&s);
  s.connection = nullptr;
  if (session_ != nullptr && s.id > 0) {
    nghttp2_session_set_stream_user_data(session_, s.id, nullptr);
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_CANCEL);
    ScheduleFlush();
  }
  if (streams_.empty()) {
    idle_since_ = transport_->clock().Now();
  }
}

void H2Connection::Read() {
  stream_.async_read_some(
      asio::buffer(in_),
      [self = shared_from_this()](const ErrorCode& ec, size_t n) { self->OnRead(ec, n); });
}

void H2Connection::OnRead(const ErrorCode& ec, size_t n) {
  if (transport_ == nullptr || closed()) {
    return;
  }
  if (ec) {
    Close(Status::Unavailable(fmt::format("{}: connection closed: {}", Where(), ec.message())));
    return;
  }
  const ssize_t used = nghttp2_session_mem_recv(session_, in_.data(), n);
  if (used < 0) {
    Close(Status::Unavailable(
        fmt::format("{}: HTTP/2 error: {}", Where(), nghttp2_strerror(static_cast<int>(used)))));
    Settle();
    return;
  }
  Settle();
  if (closed() || transport_ == nullptr) {
    return;
  }
  ScheduleFlush();
  Read();
}

// Frames go out once per loop turn: what every request submitted in this turn queued, together.
void H2Connection::ScheduleFlush() {
  if (flush_posted_ || writing_ || closed()) {
    return;
  }
  flush_posted_ = true;
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    self->flush_posted_ = false;
    self->Flush();
  });
}

void H2Connection::Flush() {
  if (writing_ || closed() || transport_ == nullptr || session_ == nullptr) {
    return;
  }
  out_.clear();
  while (out_.size() < kWriteChunk) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      Close(Status::Unavailable(
          fmt::format("{}: HTTP/2 error: {}", Where(), nghttp2_strerror(static_cast<int>(n)))));
      Settle();
      return;
    }
    if (n == 0) {
      break;
    }
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  Settle();
  if (closed() || transport_ == nullptr) {
    return;
  }
  if (out_.empty()) {
    if (nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0) {
      Close(Status::Unavailable(fmt::format("{}: the server ended the connection", Where())));
    }
    return;
  }
  writing_ = true;
  asio::async_write(stream_, asio::buffer(out_),
                    [self = shared_from_this()](const ErrorCode& ec, size_t) {
                      self->writing_ = false;
                      if (self->transport_ == nullptr || self->closed()) {
                        return;
                      }
                      if (ec) {
                        self->Close(Status::Unavailable(
                            fmt::format("{}: write failed: {}", self->Where(), ec.message())));
                        return;
                      }
                      self->Flush();
                    });
}

// Runs the callbacks of the streams that ended inside nghttp2.
void H2Connection::Settle() {
  if (ended_.empty()) {
    if (transport_ != nullptr && !pool_->waiting.empty()) {
      transport_->Pump(*pool_);  // the server's SETTINGS may have made room
    }
    return;
  }
  std::vector<Ended> ended;
  ended.swap(ended_);
  auto self = shared_from_this();
  for (Ended& e : ended) {
    if (transport_ == nullptr) {
      return;
    }
    if (e.retry) {
      transport_->Requeue(*e.stream);
    } else {
      transport_->Complete(*e.stream, std::move(e.result));
    }
  }
  if (transport_ == nullptr) {
    return;
  }
  if (streams_.empty()) {
    idle_since_ = transport_->clock().Now();
  }
  transport_->Pump(*pool_);  // room on this connection, or (closed) a new one needed
}

void H2Connection::Close(const Status& why) {
  if (closed()) {
    return;
  }
  const bool before_ready = state_ == State::kConnecting;
  if (!before_ready) {
    KeepSessionResumable();
  }
  state_ = State::kClosed;
  ErrorCode ignored;
  stream_.lowest_layer().close(ignored);
  std::vector<Stream*> open(streams_.begin(), streams_.end());
  streams_.clear();
  DeleteSession();
  auto self = shared_from_this();
  for (Stream* s : open) {
    s->connection = nullptr;
    if (transport_ == nullptr) {
      break;
    }
    if (!s->headers_sent && s->retries < kMaxRetries) {
      ++s->retries;
      transport_->Requeue(*s);  // the server never saw it
    } else {
      transport_->Complete(*s, transport_->ForStream(*s, why));
    }
  }
  if (transport_ != nullptr) {
    transport_->Closed(*this, why, before_ready);
  }
}

// Closing the socket without a TLS shutdown makes OpenSSL drop the connection's session as
// "bad" when the SSL is freed (ssl_clear_bad_session: not resumable from then on), and the
// session kept for the origin may be that one (a resumed connection holds the session it
// resumed). The connection is done with TLS either way: mark it shut down so its session stays
// resumable. No close_notify is sent (the socket closes at once).
void H2Connection::KeepSessionResumable() {
  SSL_set_shutdown(stream_.native_handle(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
}

void H2Connection::Detach() {
  if (state_ == State::kReady) {
    KeepSessionResumable();
  }
  state_ = State::kClosed;
  transport_ = nullptr;
  ErrorCode ignored;
  stream_.lowest_layer().close(ignored);
  streams_.clear();
  ended_.clear();
  DeleteSession();
}

void H2Connection::DeleteSession() {
  if (session_ != nullptr) {
    nghttp2_session_del(session_);  // calls no callback
    session_ = nullptr;
  }
}

int H2Connection::OnHeader(nghttp2_session* session, const nghttp2_frame* frame,
                           const uint8_t* name, size_t namelen, const uint8_t* value,
                           size_t valuelen, uint8_t /*flags*/, void* /*user*/) {
  if (frame->hd.type != NGHTTP2_HEADERS) {
    return 0;
  }
  auto* s =
      static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
  if (s == nullptr || (s->final_status && frame->headers.cat == NGHTTP2_HCAT_HEADERS)) {
    return 0;  // an abandoned stream, or trailers (not kept, as with libcurl)
  }
  s->header_bytes += namelen + valuelen;
  if (++s->fields > kMaxResponseFields || s->header_bytes > kMaxResponseHeaderBytes) {
    s->error = Status::Unavailable(fmt::format("{} {}: response headers over {} fields or {} bytes",
                                               s->request.method, ShownUrl(s->request),
                                               kMaxResponseFields, kMaxResponseHeaderBytes));
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // nghttp2 resets the stream
  }
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":status") {
    int status = 0;
    for (char c : v) {
      status = status * 10 + (c - '0');  // nghttp2 checked: three digits
    }
    s->response.headers.clear();  // a new response (after a 1xx)
    s->response.status = status;
    s->final_status = status >= 200;
    return 0;
  }
  if (!n.empty() && n.front() != ':') {
    s->response.headers.push_back({std::string(n), std::string(v)});
  }
  return 0;
}

int H2Connection::OnFrame(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
  H2Connection& self = Self(user);
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
        auto* s = static_cast<Stream*>(
            nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
        if (s != nullptr && s->final_status) {
          s->complete = true;
        }
      }
      break;
    case NGHTTP2_GOAWAY:
      // Streams above its last id are closed by nghttp2 with REFUSED_STREAM and sent again;
      // new ones go to another connection.
      self.going_away_ = true;
      break;
    default:
      break;
  }
  return 0;
}

int H2Connection::OnFrameSent(nghttp2_session* session, const nghttp2_frame* frame, void*) {
  if (frame->hd.type == NGHTTP2_HEADERS) {
    auto* s =
        static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
    if (s != nullptr) {
      s->headers_sent = true;
    }
  }
  return 0;
}

int H2Connection::OnData(nghttp2_session* session, uint8_t /*flags*/, int32_t id,
                         const uint8_t* data, size_t len, void* /*user*/) {
  auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
  if (s == nullptr) {
    return 0;
  }
  const size_t room = s->body_cap - std::min(s->body_cap, s->response.body.size());
  s->response.body.append(reinterpret_cast<const char*>(data), std::min(room, len));
  s->response.body_truncated = s->response.body_truncated || len > room;
  return 0;
}

int H2Connection::OnStreamClose(nghttp2_session* session, int32_t id, uint32_t error_code,
                                void* user) {
  H2Connection& self = Self(user);
  auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
  if (s == nullptr) {
    return 0;
  }
  self.streams_.erase(s);
  s->connection = nullptr;
  if (s->complete) {
    s->response.remote_ip = self.remote_.ToString();
    // The whole answer arrived; a reset after it (the server did not want the rest of the
    // body, RFC 9113 section 8.1) does not take it back.
    self.ended_.push_back({s, std::move(s->response), false});
  } else if (error_code == NGHTTP2_REFUSED_STREAM && s->error.ok() && s->response.status == 0 &&
             s->retries < kMaxRetries) {
    ++s->retries;
    self.ended_.push_back({s, HttpResponse{}, true});  // not processed: safe to send again
  } else if (!s->error.ok()) {
    self.ended_.push_back({s, s->error, false});
  } else {
    self.ended_.push_back(
        {s,
         Status::Unavailable(fmt::format("{} {}: HTTP/2 stream closed before the whole answer ({})",
                                         s->request.method, ShownUrl(s->request),
                                         nghttp2_http2_strerror(error_code))),
         false});
  }
  return 0;
}

ssize_t H2Connection::ReadBody(nghttp2_session* session, int32_t id, uint8_t* buf, size_t length,
                               uint32_t* flags, nghttp2_data_source*, void*) {
  auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
  if (s == nullptr) {
    return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  }
  const std::string& body = s->request.body;
  const size_t n = std::min(length, body.size() - s->body_sent);
  std::copy_n(body.data() + s->body_sent, n, buf);
  s->body_sent += n;
  if (s->body_sent == body.size()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
  }
  return static_cast<ssize_t>(n);
}

}  // namespace egress::adapters::h2
