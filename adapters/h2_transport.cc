#include "adapters/h2_transport.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>
#include <openssl/x509.h>

#include "adapters/h2_connection.h"
#include "adapters/h2_stream.h"
#include "adapters/ssrf_guard.h"
#include "adapters/tls_client_context.h"
#include "adapters/url_parts.h"

namespace egress::adapters {
namespace {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using ErrorCode = boost::system::error_code;
using h2::H2Connection;
using h2::H2ConnectionOwner;
using h2::ParseHttpsTarget;
using h2::Pool;
using h2::Stream;
using h2::Target;

// Name lookups (getaddrinfo) at once. Asio's resolver runs every lookup of the process on one
// thread, so one tenant's name with an unresponsive nameserver would hold up every connect; these
// threads each take one lookup. IP literals are not looked up.
constexpr int kLookupThreads = 8;
// A connection carrying no stream for this long is closed (libcurl's CURLOPT_MAXAGE_CONN is 118 s;
// servers close idle HTTP/2 connections sooner: nginx after 3 min, many at 60 s).
constexpr Millis kIdleClose{60'000};
// How often deadlines are checked while requests are in flight (timeouts fire within this), and
// while only idle connections are kept.
constexpr Millis kSweepBusy{25};
constexpr Millis kSweepIdle{1'000};

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

class H2Transport final : public HttpTransport, public H2ConnectionOwner {
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

  // H2ConnectionOwner.
  asio::io_context& io() override { return io_; }
  asio::thread_pool& lookups() override { return lookups_; }
  const Clock& clock() const override { return clock_; }
  const TransportOptions& options() const override { return options_; }
  TlsClientContexts& contexts() override { return contexts_; }
  void CountOpened() override { ++opened_; }
  void Pump(Pool& pool) override;
  void Complete(Stream& s, Result<HttpResponse> result) override;
  void Fail(Stream& s, Status status) override;
  void Requeue(Stream& s) override;
  void Closed(H2Connection& c, const Status& why, bool before_ready) override;
  void SpeaksHttp1(H2Connection& c) override;
  Status ForStream(const Stream& s, const Status& why) const override;

 private:
  // Pump for every pool with waiting requests.
  void PumpAll();
  bool CloseOldestIdle();
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

void H2Transport::Send(HttpRequest request, HttpCallback done) {
  const std::string_view origin = UrlOrigin(request.url);
  if (options_.http_version == HttpVersion::kHttp11 || !IsHttpsUrl(request.url) ||
      http1_origins_.contains(ToLowerAscii(origin))) {
    http1_->Send(std::move(request), std::move(done));
    return;
  }
  auto s = std::make_unique<Stream>();
  s->started = clock_.Now();
  s->deadline = s->started + request.timeout;
  s->body_cap = options_.max_response_body;
  s->done = std::move(done);
  Result<Target> target = ParseHttpsTarget(request.url);
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
    H2Connection* best = nullptr;
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
    if (connections_ >= static_cast<size_t>(std::max(1L, options_.max_total_connections))) {
      if (!CloseOldestIdle()) {
        return;  // every connection is busy: a slot freed pumps every pool (Closed)
      }
      continue;  // closing pumped the pools (this one too): look again
    }
    Result<ssl::context*> ctx = contexts_.For(pool.identity);
    if (!ctx.has_value()) {
      while (!pool.waiting.empty()) {
        Stream* s = pool.waiting.front();
        pool.waiting.pop_front();
        Fail(*s, WithContext(ctx.error(),
                             fmt::format("{} {}", s->request.method, ShownUrl(s->request))));
      }
      return;
    }
    Stream& head = *pool.waiting.front();
    auto c = std::make_shared<H2Connection>(*this, pool, **ctx, io_);
    pool.connections.push_back(c);
    ++connections_;
    c->Start(head.request.ssrf, clock_.Now() + head.request.connect_timeout);
  }
}

// At the total limit, as libcurl does: the connection idle the longest, in any pool, closes to
// make room. False when none is idle.
bool H2Transport::CloseOldestIdle() {
  std::shared_ptr<H2Connection> oldest;
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
  return WithContext(why, fmt::format("{} {}", s.request.method, ShownUrl(s.request)));
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

void H2Transport::Closed(H2Connection& c, const Status& why, bool before_ready) {
  Pool& pool = c.pool();
  auto it = std::find_if(pool.connections.begin(), pool.connections.end(),
                         [&](const std::shared_ptr<H2Connection>& p) { return p.get() == &c; });
  if (it == pool.connections.end()) {
    return;
  }
  std::shared_ptr<H2Connection> keep = *it;  // alive until this returns
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

void H2Transport::SpeaksHttp1(H2Connection& c) {
  Pool& pool = c.pool();
  if (http1_origins_.size() >= kMaxHttp1Origins) {
    http1_origins_.clear();  // asked again by ALPN: a connection each
  }
  http1_origins_.insert(pool.target.origin);
  auto it = std::find_if(pool.connections.begin(), pool.connections.end(),
                         [&](const std::shared_ptr<H2Connection>& p) { return p.get() == &c; });
  if (it != pool.connections.end()) {
    std::shared_ptr<H2Connection> keep = *it;
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
        fmt::format("{} {}: transport shut down", s->request.method, ShownUrl(s->request)));
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
  std::vector<std::shared_ptr<H2Connection>> to_close;
  for (auto& [key, pool] : pools_) {
    std::deque<Stream*> still;
    for (Stream* s : pool->waiting) {
      if (now >= s->deadline) {
        const auto waited = std::chrono::duration_cast<Millis>(now - s->started);
        Fail(*s, Status::TimedOut(
                     fmt::format("{} {}: timed out after {} ms waiting for a connection",
                                 s->request.method, ShownUrl(s->request), waited.count())));
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
                                              ShownUrl(s->request), took.count())));
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
