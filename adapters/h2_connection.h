#pragma once

// One HTTP/2 connection over TLS for the HTTP/2 client (adapters/h2_transport.h): private to
// the adapters' h2_* files (it includes nghttp2's and OpenSSL's headers).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/thread_pool.hpp>
#include <nghttp2/nghttp2.h>

#include "adapters/curl_transport.h"
#include "adapters/h2_stream.h"
#include "adapters/ip_address.h"
#include "adapters/ssrf_guard.h"
#include "adapters/tls_client_context.h"

namespace egress::adapters::h2 {

// Bytes asked of the TLS stream per read (it hands over what its records held, up to this).
constexpr size_t kReadChunk = 64 * 1024;

// What a connection asks of the transport that owns it (H2Transport in h2_transport.cc). All
// on the transport's loop thread.
class H2ConnectionOwner {
 public:
  virtual boost::asio::io_context& io() = 0;
  // Threads for name lookups (getaddrinfo), one lookup each.
  virtual boost::asio::thread_pool& lookups() = 0;
  virtual const Clock& clock() const = 0;
  virtual const TransportOptions& options() const = 0;
  virtual TlsClientContexts& contexts() = 0;
  // A TCP connection was opened (ConnectionsOpened).
  virtual void CountOpened() = 0;
  // Starts waiting requests of `pool` on its connections, opening connections as needed.
  virtual void Pump(Pool& pool) = 0;
  // `s` ended: its callback runs now.
  virtual void Complete(Stream& s, Result<HttpResponse> result) = 0;
  // `s` (on no connection, in no queue) ended: its callback is posted.
  virtual void Fail(Stream& s, Status status) = 0;
  // `s` was not processed by the server: back to the front of its pool's queue.
  virtual void Requeue(Stream& s) = 0;
  // `c` is closed: out of its pool; the pool's waiting requests go on.
  virtual void Closed(H2Connection& c, const Status& why, bool before_ready) = 0;
  // `c`'s server chose HTTP/1.1 by ALPN: `c` is dropped, and its origin goes to libcurl.
  virtual void SpeaksHttp1(H2Connection& c) = 0;
  // `why` as `s` reports it: "<method> <url>: why" (an SSRF refusal as the guard wrote it).
  virtual Status ForStream(const Stream& s, const Status& why) const = 0;

 protected:
  ~H2ConnectionOwner() = default;
};

// One TLS connection carrying HTTP/2 streams. Owned by its pool (and by its pending handlers);
// Detach cuts it from the transport.
class H2Connection : public std::enable_shared_from_this<H2Connection> {
 public:
  H2Connection(H2ConnectionOwner& transport, Pool& pool, boost::asio::ssl::context& ctx,
               boost::asio::io_context& io)
      : transport_(&transport), pool_(&pool), stream_(io, ctx) {}
  ~H2Connection() { DeleteSession(); }

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

  void OnResolved(const boost::system::error_code& ec,
                  const std::vector<boost::asio::ip::tcp::endpoint>& results,
                  const std::optional<SsrfPolicy>& policy);
  void OnConnected(const boost::system::error_code& ec,
                   const boost::asio::ip::tcp::endpoint& endpoint);
  void OnHandshake(const boost::system::error_code& ec);
  Status StartSession();
  void Read();
  void OnRead(const boost::system::error_code& ec, size_t n);
  void ScheduleFlush();
  void Flush();
  void Settle();
  void DeleteSession();
  void KeepSessionResumable();
  std::string Where() const { return pool_->target.origin; }

  static H2Connection& Self(void* user) { return *static_cast<H2Connection*>(user); }
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

  H2ConnectionOwner* transport_;
  Pool* pool_;
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
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

}  // namespace egress::adapters::h2
