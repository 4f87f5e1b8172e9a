#include "adapters/h2_transport.h"

#include <netdb.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/x509.h>

#include "adapters/ip_address.h"
#include "adapters/tls_client_context.h"
#include "adapters/url_parts.h"

namespace egress::adapters {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using ErrorCode = boost::system::error_code;

// Name lookups (getaddrinfo) at once. Asio's resolver runs every lookup of the process on one
// thread, so one tenant's name with an unresponsive nameserver would hold up every connect; these
// threads each take one lookup. IP literals are not looked up.
constexpr int kLookupThreads = 8;
// Bytes asked of the TLS stream per read (it hands over what its records held, up to this).
constexpr size_t kReadChunk = 64 * 1024;
// Times a request is sent again after a server refused it unprocessed (REFUSED_STREAM, above a
// GOAWAY's last stream id, or queued on a connection that closed before its HEADERS left), as
// libcurl's retry of a request on a dead reused connection is bounded.
constexpr int kMaxRetries = 5;
// Most bytes of frames gathered for one write.
constexpr size_t kWriteChunk = 64 * 1024;
// Response header bytes and fields one stream may receive: libcurl's CURL_MAX_HTTP_HEADER.
constexpr size_t kMaxResponseHeaderBytes = 100 * 1024;
constexpr size_t kMaxResponseFields = 512;
// Our receive windows: a stream's and the connection's. Answers are small; with these nghttp2
// sends a WINDOW_UPDATE once per 8 MiB received rather than after every answer.
constexpr int32_t kStreamWindow = 1 << 20;
constexpr int32_t kConnectionWindow = 16 << 20;
// A connection carrying no stream for this long is closed (libcurl's CURLOPT_MAXAGE_CONN is 118 s;
// servers close idle HTTP/2 connections sooner: nginx after 3 min, many at 60 s).
constexpr Millis kIdleClose{60'000};
// How often deadlines are checked while requests are in flight (timeouts fire within this), and
// while only idle connections are kept.
constexpr Millis kSweepBusy{25};
constexpr Millis kSweepIdle{1'000};

// An https:// URL split for a request: where to connect and what to ask for.
struct Target {
  std::string origin;  // "https://authority", lower-case: the pool's key
  std::string host;    // name or IP literal, without brackets
  std::string port;    // decimal
  uint16_t port_number = 443;
  std::string authority;  // as sent in :authority
  std::string path;       // path and query, "/" when empty
};

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
         c == ':';
}

std::string Lower(std::string_view in) {
  std::string out(in);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

// `url` (checked by IsHttpsUrl) split, or InvalidArgument naming what is wrong with it.
Result<Target> ParseTarget(std::string_view url) {
  constexpr std::string_view kScheme = "https://";
  if (!IsHttpsUrl(url) || !IsHttpUrl(url)) {
    return Status::InvalidArgument(fmt::format("{}: not an https:// URL", url));
  }
  std::string_view rest = url.substr(kScheme.size());
  const size_t end = rest.find_first_of("/?#");
  const std::string authority = Lower(rest.substr(0, end));
  std::string_view path = end == std::string_view::npos ? "" : rest.substr(end);
  path = path.substr(0, path.find('#'));
  if (authority.find('@') != std::string::npos) {
    return Status::InvalidArgument(fmt::format("{}: user information in the URL", url));
  }
  Target t;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) {
      return Status::InvalidArgument(fmt::format("{}: unclosed IPv6 literal", url));
    }
    t.host = authority.substr(1, close - 1);
    std::string_view after = std::string_view(authority).substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      return Status::InvalidArgument(fmt::format("{}: malformed host", url));
    }
    port = after.empty() ? "" : after.substr(1);
    if (!IpAddress::Parse(t.host).has_value()) {
      return Status::InvalidArgument(fmt::format("{}: malformed IPv6 literal", url));
    }
  } else {
    const size_t colon = authority.find(':');
    t.host = authority.substr(0, colon);
    port = colon == std::string::npos ? "" : std::string_view(authority).substr(colon + 1);
    if (t.host.empty() || !std::all_of(t.host.begin(), t.host.end(), IsHostChar) ||
        t.host.find(':') != std::string::npos) {
      return Status::InvalidArgument(fmt::format("{}: malformed host", url));
    }
  }
  if (port.empty()) {
    t.port = "443";
  } else {
    int value = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || value > 65535) {
        return Status::InvalidArgument(fmt::format("{}: malformed port", url));
      }
      value = value * 10 + (c - '0');
    }
    if (value < 1 || value > 65535) {
      return Status::InvalidArgument(fmt::format("{}: port out of range", url));
    }
    t.port = std::to_string(value);
    t.port_number = static_cast<uint16_t>(value);
  }
  t.authority = authority;
  t.origin = "https://" + authority;
  t.path = path.empty() ? "/" : path.front() == '?' ? "/" + std::string(path) : std::string(path);
  return t;
}

// Request headers HTTP/2 does not carry (RFC 9113 section 8.2.2), or that the transport writes
// itself (:authority for Host, content-length from the body).
bool SkippedRequestHeader(std::string_view lower, std::string_view value) {
  return lower == "host" || lower == "connection" || lower == "keep-alive" ||
         lower == "proxy-connection" || lower == "transfer-encoding" || lower == "upgrade" ||
         (lower == "te" && value != "trailers") || lower == "expect" || lower == "content-length";
}

// `status` with "<context>: " before its message, the code kept.
Status WithContext(const Status& status, std::string_view context) {
  std::string message = fmt::format("{}: {}", context, status.message());
  switch (status.code()) {
    case Status::Code::kTimedOut:
      return Status::TimedOut(std::move(message));
    case Status::Code::kRejected:
      return Status::Rejected(std::move(message));
    case Status::Code::kInvalidArgument:
      return Status::InvalidArgument(std::move(message));
    case Status::Code::kCancelled:
      return Status::Cancelled(std::move(message));
    default:
      return Status::Unavailable(std::move(message));  // what else a transport reports
  }
}

nghttp2_nv Nv(std::string_view name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

class Connection;
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
  Connection* connection = nullptr;
  int32_t id = -1;
  bool headers_sent = false;  // its HEADERS frame left: the server may have seen it
  int retries = 0;            // sent again after the server refused it unprocessed
};

// The connections and waiting requests of one origin with one TLS identity.
struct Pool {
  std::string key;
  Target target;  // of the first request: host, port, authority
  TlsIdentity identity;
  std::vector<std::shared_ptr<Connection>> connections;
  std::deque<Stream*> waiting;
};

class H2Transport;

// One TLS connection carrying HTTP/2 streams. Owned by its pool (and by its pending handlers);
// Detach cuts it from the transport.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(H2Transport& transport, Pool& pool, ssl::context& ctx, asio::io_context& io)
      : transport_(&transport), pool_(&pool), stream_(io, ctx) {}
  ~Connection() { DeleteSession(); }

  void Start(const std::optional<SsrfPolicy>& policy, SteadyTime connect_deadline);

  bool ready() const { return state_ == State::kReady && !going_away_; }
  bool connecting() const { return state_ == State::kConnecting; }
  bool closed() const { return state_ == State::kClosed; }
  size_t active() const { return streams_.size(); }
  // Streams this connection may carry at once.
  size_t Capacity() const;
  Pool& pool() const { return *pool_; }
  const IpAddress& remote() const { return remote_; }
  uint16_t remote_port() const { return remote_port_; }
  const std::vector<IpAddress>& resolved() const { return resolved_; }
  SteadyTime connect_deadline() const { return connect_deadline_; }
  SteadyTime idle_since() const { return idle_since_; }

  void Submit(Stream& s);
  // Ends `s` here (its deadline passed): resets it and forgets it; the caller completes it.
  void Abandon(Stream& s);
  // Closes the socket; every stream still on it completes with `why`.
  void Close(const Status& why);
  // The transport is going away: close without calling it back.
  void Detach();

 private:
  enum class State { kConnecting, kReady, kClosed };

  void OnResolved(const ErrorCode& ec, const std::vector<tcp::endpoint>& results,
                  const std::optional<SsrfPolicy>& policy);
  void OnConnected(const ErrorCode& ec, const tcp::endpoint& endpoint);
  void OnHandshake(const ErrorCode& ec);
  Status StartSession();
  void Read();
  void OnRead(const ErrorCode& ec, size_t n);
  void ScheduleFlush();
  void Flush();
  void Settle();
  void DeleteSession();
  std::string Where() const { return pool_->target.origin; }

  static Connection& Self(void* user) { return *static_cast<Connection*>(user); }
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                      void* user);
  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int OnFrameSent(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int OnData(nghttp2_session*, uint8_t flags, int32_t id, const uint8_t* data, size_t len,
                    void* user);
  static int OnStreamClose(nghttp2_session*, int32_t id, uint32_t error_code, void* user);
  static ssize_t ReadBody(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                          uint32_t* flags, nghttp2_data_source* source, void* user);

  H2Transport* transport_;
  Pool* pool_;
  ssl::stream<tcp::socket> stream_;
  nghttp2_session* session_ = nullptr;
  State state_ = State::kConnecting;
  bool going_away_ = false;
  SteadyTime connect_deadline_;
  SteadyTime idle_since_;
  IpAddress remote_;
  uint16_t remote_port_ = 0;
  std::vector<IpAddress> resolved_;
  std::unordered_set<Stream*> streams_;
  // Streams that ended inside nghttp2 (during mem_recv / mem_send), settled after it returns:
  // their callbacks may send again, which must not re-enter nghttp2. `retry` for those the
  // server did not process.
  struct Ended {
    Stream* stream;
    Result<HttpResponse> result;
    bool retry;
  };
  std::vector<Ended> ended_;
  std::vector<uint8_t> in_ = std::vector<uint8_t>(kReadChunk);
  std::string out_;
  bool writing_ = false;
  bool flush_posted_ = false;
  // Request header names lower-cased for nghttp2, reused (nghttp2 copies them).
  std::vector<std::string> names_;
  std::vector<nghttp2_nv> nva_;
};

class H2Transport final : public HttpTransport {
 public:
  H2Transport(asio::io_context& io, const Clock& clock, const TransportOptions& options,
              std::unique_ptr<HttpTransport> http1)
      : io_(io),
        clock_(clock),
        options_(options),
        http1_(std::move(http1)),
        contexts_(options.min_tls_version == TlsVersion::kTls13),
        sweep_(io) {}

  ~H2Transport() override {
    // A lookup still running finishes first (getaddrinfo cannot be interrupted); what it posts
    // finds its connection gone.
    lookups_.join();
    for (auto& [key, pool] : pools_) {
      for (auto& c : pool->connections) {
        c->Detach();
      }
    }
    sweep_.cancel();
  }

  void Send(HttpRequest request, HttpCallback done) override;
  size_t InFlight() const override { return streams_.size() + http1_->InFlight(); }
  void CancelAll() override;
  uint64_t ConnectionsOpened() const override { return opened_ + http1_->ConnectionsOpened(); }

  // For connections.
  asio::io_context& io() { return io_; }
  asio::thread_pool& lookups() { return lookups_; }
  const Clock& clock() const { return clock_; }
  const TransportOptions& options() const { return options_; }
  TlsClientContexts& contexts() { return contexts_; }
  void CountOpened() { ++opened_; }
  // Starts waiting requests of `pool` on its connections, opening connections as needed.
  void Pump(Pool& pool);
  // Pump for every pool with waiting requests.
  void PumpAll();
  bool CloseOldestIdle();
  // `s` ended: its callback runs now.
  void Complete(Stream& s, Result<HttpResponse> result);
  // `s` (on no connection, in no queue) ended: its callback is posted.
  void Fail(Stream& s, Status status);
  // `s` was not processed by the server: back to the front of its pool's queue.
  void Requeue(Stream& s);
  // The connection is closed: out of its pool; the pool's waiting requests go on.
  void Closed(Connection& c, const Status& why, bool before_ready);
  // The origin answered ALPN with HTTP/1.1: `c` is dropped, and this and later requests to the
  // origin go to http1_.
  void SpeaksHttp1(Connection& c);
  // `why` as `s` reports it: "<method> <url>: why" (an SSRF refusal as the guard wrote it).
  Status ForStream(const Stream& s, const Status& why) const;

 private:
  void ArmSweep();
  void Sweep();
  Stream& Own(std::unique_ptr<Stream> s);
  void Forget(Stream& s);

  asio::io_context& io_;
  const Clock& clock_;
  const TransportOptions options_;
  std::unique_ptr<HttpTransport> http1_;
  asio::thread_pool lookups_{kLookupThreads};
  TlsClientContexts contexts_;
  std::map<std::string, std::unique_ptr<Pool>> pools_;
  std::unordered_map<Stream*, std::unique_ptr<Stream>> streams_;
  std::unordered_set<std::string> http1_origins_;  // bounded: kMaxHttp1Origins
  static constexpr size_t kMaxHttp1Origins = 4096;
  size_t connections_ = 0;  // open or opening, over every pool
  uint64_t opened_ = 0;
  asio::steady_timer sweep_;
  bool sweep_armed_ = false;
  bool sweep_busy_ = false;  // armed at kSweepBusy
  // Handlers that outlive the transport (the sweep's) check this first.
  std::shared_ptr<H2Transport*> alive_ = std::make_shared<H2Transport*>(this);
};

// ---- Connection ----

size_t Connection::Capacity() const {
  auto cap = static_cast<size_t>(std::max(1L, transport_->options().max_concurrent_streams));
  if (session_ != nullptr) {
    cap = std::min<size_t>(cap, nghttp2_session_get_remote_settings(
                                    session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS));
  }
  return cap;
}

void Connection::Start(const std::optional<SsrfPolicy>& policy, SteadyTime connect_deadline) {
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
      if (std::shared_ptr<Connection> self = weak.lock()) {
        self->OnResolved(ec, endpoints, policy);
      }
    });
  });
}

void Connection::OnResolved(const ErrorCode& ec, const std::vector<tcp::endpoint>& results,
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

void Connection::OnConnected(const ErrorCode& ec, const tcp::endpoint& endpoint) {
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

void Connection::OnHandshake(const ErrorCode& ec) {
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

Status Connection::StartSession() {
  nghttp2_session_callbacks* cbs = nullptr;
  if (nghttp2_session_callbacks_new(&cbs) != 0) {
    return Status::Unavailable("nghttp2: out of memory");
  }
  nghttp2_session_callbacks_set_on_header_callback(cbs, &Connection::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &Connection::OnFrame);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &Connection::OnData);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &Connection::OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &Connection::OnFrameSent);
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

void Connection::Submit(Stream& s) {
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
    names_.push_back(Lower(h.name));
    const std::string& name = names_.back();
    if (SkippedRequestHeader(name, h.value)) {
      continue;
    }
    if (nghttp2_check_header_name(reinterpret_cast<const uint8_t*>(name.data()), name.size()) ==
            0 ||
        nghttp2_check_header_value(reinterpret_cast<const uint8_t*>(h.value.data()),
                                   h.value.size()) == 0) {
      transport_->Fail(s, Status::InvalidArgument(fmt::format("{} {}: header {} cannot be sent",
                                                              r.method, r.url, h.name)));
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
  body.read_callback = &Connection::ReadBody;
  const int32_t id = nghttp2_submit_request(session_, nullptr, nva_.data(), nva_.size(),
                                            with_body && !r.body.empty() ? &body : nullptr, &s);
  if (id < 0) {
    if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE) {
      going_away_ = true;  // ids used up: a new connection takes it
      transport_->Requeue(s);
      return;
    }
    transport_->Fail(
        s, Status::Unavailable(fmt::format("{} {}: {}", r.method, r.url, nghttp2_strerror(id))));
    return;
  }
  s.connection = this;
  s.id = id;
  streams_.insert(&s);
  ScheduleFlush();
}

void Connection::Abandon(Stream& s) {
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

void Connection::Read() {
  stream_.async_read_some(
      asio::buffer(in_),
      [self = shared_from_this()](const ErrorCode& ec, size_t n) { self->OnRead(ec, n); });
}

void Connection::OnRead(const ErrorCode& ec, size_t n) {
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
void Connection::ScheduleFlush() {
  if (flush_posted_ || writing_ || closed()) {
    return;
  }
  flush_posted_ = true;
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    self->flush_posted_ = false;
    self->Flush();
  });
}

void Connection::Flush() {
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
void Connection::Settle() {
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

void Connection::Close(const Status& why) {
  if (closed()) {
    return;
  }
  const bool before_ready = state_ == State::kConnecting;
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

void Connection::Detach() {
  state_ = State::kClosed;
  transport_ = nullptr;
  ErrorCode ignored;
  stream_.lowest_layer().close(ignored);
  streams_.clear();
  ended_.clear();
  DeleteSession();
}

void Connection::DeleteSession() {
  if (session_ != nullptr) {
    nghttp2_session_del(session_);  // calls no callback
    session_ = nullptr;
  }
}

int Connection::OnHeader(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name,
                         size_t namelen, const uint8_t* value, size_t valuelen, uint8_t /*flags*/,
                         void* /*user*/) {
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
                                               s->request.method, s->request.url,
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

int Connection::OnFrame(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
  Connection& self = Self(user);
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

int Connection::OnFrameSent(nghttp2_session* session, const nghttp2_frame* frame, void*) {
  if (frame->hd.type == NGHTTP2_HEADERS) {
    auto* s =
        static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
    if (s != nullptr) {
      s->headers_sent = true;
    }
  }
  return 0;
}

int Connection::OnData(nghttp2_session* session, uint8_t /*flags*/, int32_t id, const uint8_t* data,
                       size_t len, void* /*user*/) {
  auto* s = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
  if (s == nullptr) {
    return 0;
  }
  const size_t room = s->body_cap - std::min(s->body_cap, s->response.body.size());
  s->response.body.append(reinterpret_cast<const char*>(data), std::min(room, len));
  s->response.body_truncated = s->response.body_truncated || len > room;
  return 0;
}

int Connection::OnStreamClose(nghttp2_session* session, int32_t id, uint32_t error_code,
                              void* user) {
  Connection& self = Self(user);
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
                                         s->request.method, s->request.url,
                                         nghttp2_http2_strerror(error_code))),
         false});
  }
  return 0;
}

ssize_t Connection::ReadBody(nghttp2_session* session, int32_t id, uint8_t* buf, size_t length,
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

// ---- H2Transport ----

void H2Transport::Send(HttpRequest request, HttpCallback done) {
  const std::string_view origin = UrlOrigin(request.url);
  if (options_.http_version == HttpVersion::kHttp11 || !IsHttpsUrl(request.url) ||
      http1_origins_.contains(Lower(origin))) {
    http1_->Send(std::move(request), std::move(done));
    return;
  }
  auto s = std::make_unique<Stream>();
  s->started = clock_.Now();
  s->deadline = s->started + request.timeout;
  s->body_cap = options_.max_response_body;
  s->done = std::move(done);
  Result<Target> target = ParseTarget(request.url);
  if (!target.has_value()) {
    // User information, IDN or escaped hosts, odd ports: libcurl's parser decides, as before.
    http1_->Send(std::move(request), std::move(s->done));
    return;
  }
  s->request = std::move(request);
  Stream& stream = Own(std::move(s));
  stream.target = std::move(*target);
  TlsIdentity identity;
  const bool own_trust = !stream.request.ca_file.empty() || !stream.request.ca_path.empty();
  if (own_trust) {
    identity.ca_file = stream.request.ca_file;
    identity.ca_path = stream.request.ca_path;
  } else {
    // As the curl transport: a configured directory alone is trusted with the system bundle.
    identity.ca_file = options_.ca_file.empty() && !options_.ca_path.empty()
                           ? X509_get_default_cert_file()
                           : options_.ca_file;
    identity.ca_path = options_.ca_path;
  }
  if (!stream.request.client_cert_file.empty() && !stream.request.client_key_file.empty()) {
    identity.client_cert_file = stream.request.client_cert_file;
    identity.client_key_file = stream.request.client_key_file;
  }
  std::string key =
      fmt::format("{}\n{}\n{}\n{}\n{}", stream.target.origin, identity.ca_file, identity.ca_path,
                  identity.client_cert_file, identity.client_key_file);
  std::unique_ptr<Pool>& pool = pools_[key];
  if (pool == nullptr) {
    pool = std::make_unique<Pool>();
    pool->key = std::move(key);
    pool->target = stream.target;
    pool->identity = std::move(identity);
  }
  stream.pool = pool.get();
  pool->waiting.push_back(&stream);
  Pump(*pool);
  ArmSweep();
}

Stream& H2Transport::Own(std::unique_ptr<Stream> s) {
  Stream* raw = s.get();
  streams_.emplace(raw, std::move(s));
  return *raw;
}

void H2Transport::Forget(Stream& s) { streams_.erase(&s); }

void H2Transport::Pump(Pool& pool) {
  while (!pool.waiting.empty()) {
    Connection* best = nullptr;
    size_t opening_room = 0;
    for (auto& c : pool.connections) {
      if (c->ready() && c->active() < c->Capacity() &&
          (best == nullptr || c->active() < best->active())) {
        best = c.get();
      } else if (c->connecting()) {
        opening_room += static_cast<size_t>(std::max(1L, options_.max_concurrent_streams));
      }
    }
    if (best != nullptr) {
      Stream* s = pool.waiting.front();
      pool.waiting.pop_front();
      best->Submit(*s);
      continue;
    }
    // Requests wait for connections being opened rather than each opening one (as PIPEWAIT).
    if (pool.waiting.size() <= opening_room ||
        pool.connections.size() >=
            static_cast<size_t>(std::max(1L, options_.max_host_connections))) {
      return;
    }
    if (connections_ >= static_cast<size_t>(std::max(1L, options_.max_total_connections)) &&
        !CloseOldestIdle()) {
      return;  // every connection is busy: a slot freed pumps every pool (Closed)
    }
    Result<ssl::context*> ctx = contexts_.For(pool.identity);
    if (!ctx.has_value()) {
      while (!pool.waiting.empty()) {
        Stream* s = pool.waiting.front();
        pool.waiting.pop_front();
        Fail(*s, WithContext(ctx.error(), fmt::format("{} {}", s->request.method, s->request.url)));
      }
      return;
    }
    Stream& head = *pool.waiting.front();
    auto c = std::make_shared<Connection>(*this, pool, **ctx, io_);
    pool.connections.push_back(c);
    ++connections_;
    c->Start(head.request.ssrf, clock_.Now() + head.request.connect_timeout);
  }
}

// At the total limit, as libcurl does: the connection idle the longest, in any pool, closes to
// make room. False when none is idle.
bool H2Transport::CloseOldestIdle() {
  std::shared_ptr<Connection> oldest;
  for (auto& [key, pool] : pools_) {
    for (auto& c : pool->connections) {
      if (!c->connecting() && !c->closed() && c->active() == 0 &&
          (oldest == nullptr || c->idle_since() < oldest->idle_since())) {
        oldest = c;
      }
    }
  }
  if (oldest == nullptr) {
    return false;
  }
  oldest->Close(Status::Unavailable("closed to make room"));
  return true;
}

void H2Transport::Complete(Stream& s, Result<HttpResponse> result) {
  if (result.has_value()) {
    result->elapsed = std::chrono::duration_cast<Millis>(clock_.Now() - s.started);
    result->http2 = true;
  }
  HttpCallback done = std::move(s.done);
  Forget(s);  // `s` is gone from here on
  done(std::move(result));
}

void H2Transport::Fail(Stream& s, Status status) {
  HttpCallback done = std::move(s.done);
  Forget(s);
  asio::post(io_, [done = std::move(done), status = std::move(status)] { done(status); });
}

Status H2Transport::ForStream(const Stream& s, const Status& why) const {
  if (IsSsrfRefusal(why)) {
    return why;  // the tenant is told the class of address only, as the guard wrote it
  }
  return WithContext(why, fmt::format("{} {}", s.request.method, s.request.url));
}

void H2Transport::Requeue(Stream& s) {
  s.connection = nullptr;
  s.id = -1;
  s.body_sent = 0;
  s.response = HttpResponse{};
  s.header_bytes = 0;
  s.fields = 0;
  s.final_status = false;
  s.complete = false;
  s.headers_sent = false;
  s.pool->waiting.push_front(&s);
  Pump(*s.pool);
}

void H2Transport::Closed(Connection& c, const Status& why, bool before_ready) {
  Pool& pool = c.pool();
  auto it = std::find_if(pool.connections.begin(), pool.connections.end(),
                         [&](const std::shared_ptr<Connection>& p) { return p.get() == &c; });
  if (it == pool.connections.end()) {
    return;
  }
  std::shared_ptr<Connection> keep = *it;  // alive until this returns
  pool.connections.erase(it);
  --connections_;
  if (before_ready) {
    // The requests that waited for this connection learn why it failed, unless another
    // connection of the origin is there for them, or (refused by the SSRF guard under the policy
    // of the request that opened it) their own policy allows one of its addresses.
    const bool others = std::any_of(pool.connections.begin(), pool.connections.end(),
                                    [](const auto& p) { return !p->closed(); });
    std::deque<Stream*> still;
    for (Stream* s : pool.waiting) {
      bool allowed_elsewhere = others;
      if (!others && IsSsrfRefusal(why)) {
        allowed_elsewhere = !s->request.ssrf;  // no policy: any address will do
        for (const IpAddress& a : c.resolved()) {
          allowed_elsewhere = allowed_elsewhere ||
                              CheckDestination(a, pool.target.port_number, *s->request.ssrf).ok();
        }
      }
      if (allowed_elsewhere) {
        still.push_back(s);
      } else {
        Fail(*s, ForStream(*s, why));
      }
    }
    pool.waiting.swap(still);
  }
  Pump(pool);
  PumpAll();  // a connection slot of the total is free
  ArmSweep();
}

void H2Transport::PumpAll() {
  std::vector<std::string> keys;
  for (auto& [key, pool] : pools_) {
    if (!pool->waiting.empty()) {
      keys.push_back(key);
    }
  }
  for (const std::string& key : keys) {
    if (auto it = pools_.find(key); it != pools_.end()) {
      Pump(*it->second);
    }
  }
}

void H2Transport::SpeaksHttp1(Connection& c) {
  Pool& pool = c.pool();
  if (http1_origins_.size() >= kMaxHttp1Origins) {
    http1_origins_.clear();  // asked again by ALPN: a connection each
  }
  http1_origins_.insert(pool.target.origin);
  auto it = std::find_if(pool.connections.begin(), pool.connections.end(),
                         [&](const std::shared_ptr<Connection>& p) { return p.get() == &c; });
  if (it != pool.connections.end()) {
    std::shared_ptr<Connection> keep = *it;
    pool.connections.erase(it);
    --connections_;
    keep->Detach();
  }
  // What waits for this origin goes over HTTP/1.1, with what is left of its timeout.
  const SteadyTime now = clock_.Now();
  std::deque<Stream*> waiting;
  waiting.swap(pool.waiting);
  for (Stream* s : waiting) {
    HttpRequest request = std::move(s->request);
    request.timeout = std::max(Millis(1), std::chrono::duration_cast<Millis>(s->deadline - now));
    HttpCallback done = std::move(s->done);
    Forget(*s);
    http1_->Send(std::move(request), std::move(done));
  }
}

void H2Transport::CancelAll() {
  for (auto& [key, pool] : pools_) {
    for (auto& c : pool->connections) {
      c->Detach();
    }
  }
  // The pools may be in use up the stack (a callback cancelling inside Pump): freed next turn.
  auto dead = std::make_shared<std::map<std::string, std::unique_ptr<Pool>>>(std::move(pools_));
  pools_.clear();
  asio::post(io_, [dead] {});
  connections_ = 0;
  std::unordered_map<Stream*, std::unique_ptr<Stream>> streams;
  streams.swap(streams_);
  for (auto& [raw, s] : streams) {
    Status status = Status::Cancelled(
        fmt::format("{} {}: transport shut down", s->request.method, s->request.url));
    asio::post(io_, [done = std::move(s->done), status = std::move(status)] { done(status); });
  }
  http1_->CancelAll();
}

// Keeps the sweep running while anything is in flight (every kSweepBusy) or kept (every
// kSweepIdle); a request arriving while the idle period runs brings the next sweep forward.
void H2Transport::ArmSweep() {
  const bool busy = !streams_.empty();
  if (sweep_armed_) {
    if (busy && !sweep_busy_) {
      sweep_.cancel();  // its handler arms again, at the busy period
    }
    return;
  }
  if (!busy && connections_ == 0 && pools_.empty()) {
    return;
  }
  sweep_armed_ = true;
  sweep_busy_ = busy;
  sweep_.expires_after(busy ? kSweepBusy : kSweepIdle);
  sweep_.async_wait([alive = std::weak_ptr<H2Transport*>(alive_)](const ErrorCode& ec) {
    std::shared_ptr<H2Transport*> self = alive.lock();
    if (self == nullptr) {
      return;  // the transport is gone
    }
    H2Transport& t = **self;
    t.sweep_armed_ = false;
    if (!ec) {
      t.Sweep();
    }
    t.ArmSweep();
  });
}

// Fires the deadlines that passed: requests' timeouts (waiting or on a connection), connect
// timeouts, idle connections.
void H2Transport::Sweep() {
  const SteadyTime now = clock_.Now();
  std::vector<Stream*> expired;
  std::vector<std::shared_ptr<Connection>> to_close;
  for (auto& [key, pool] : pools_) {
    std::deque<Stream*> still;
    for (Stream* s : pool->waiting) {
      if (now >= s->deadline) {
        const auto waited = std::chrono::duration_cast<Millis>(now - s->started);
        Fail(*s,
             Status::TimedOut(fmt::format("{} {}: timed out after {} ms waiting for a connection",
                                          s->request.method, s->request.url, waited.count())));
      } else {
        still.push_back(s);
      }
    }
    pool->waiting.swap(still);
    for (auto& c : pool->connections) {
      if ((c->connecting() && now >= c->connect_deadline()) ||
          (!c->connecting() && !c->closed() && c->active() == 0 &&
           (!c->ready() || now - c->idle_since() >= kIdleClose))) {
        to_close.push_back(c);
      }
    }
  }
  for (auto& [raw, s] : streams_) {
    if (s->connection != nullptr && now >= s->deadline) {
      expired.push_back(raw);
    }
  }
  for (Stream* s : expired) {
    if (!streams_.contains(s) || s->connection == nullptr) {
      continue;  // an earlier callback ended it
    }
    s->connection->Abandon(*s);
    const auto took = std::chrono::duration_cast<Millis>(now - s->started);
    Complete(*s, Status::TimedOut(fmt::format("{} {}: timed out after {} ms", s->request.method,
                                              s->request.url, took.count())));
  }
  for (auto& c : to_close) {
    if (c->connecting()) {
      c->Close(Status::TimedOut(fmt::format("{}: connect timed out", c->pool().target.origin)));
    } else if (!c->closed() && c->active() == 0) {
      c->Close(Status::Unavailable(fmt::format("{}: closed when idle", c->pool().target.origin)));
    }
  }
  std::vector<Pool*> waiting;
  for (auto& [key, pool] : pools_) {
    if (!pool->waiting.empty()) {
      waiting.push_back(pool.get());
    }
  }
  for (Pool* pool : waiting) {
    Pump(*pool);  // streams that timed out made room
  }
  for (auto it = pools_.begin(); it != pools_.end();) {
    it = it->second->connections.empty() && it->second->waiting.empty() ? pools_.erase(it)
                                                                        : std::next(it);
  }
}

}  // namespace

std::unique_ptr<HttpTransport> NewH2Transport(asio::io_context& io, const Clock& clock,
                                              const TransportOptions& options,
                                              std::unique_ptr<HttpTransport> http1) {
  return std::make_unique<H2Transport>(io, clock, options, std::move(http1));
}

std::unique_ptr<HttpTransport> NewHttpTransport(asio::io_context& io, const Clock& clock,
                                                const TransportOptions& options) {
  auto curl = NewCurlTransport(io, clock, options);
  if (options.http_version == HttpVersion::kHttp11) {
    return curl;
  }
  return NewH2Transport(io, clock, options, std::move(curl));
}

}  // namespace egress::adapters
