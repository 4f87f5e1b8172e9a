#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "adapters/redis_reply_limits.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"

struct redisAsyncContext;

namespace egress::adapters {

// One reply of Redis, owned (hiredis' reply tree copied out, bounded in depth and size).
struct RedisReply {
  enum class Type : uint8_t { kNil, kInteger, kString, kStatus, kError, kArray };
  Type type = Type::kNil;
  int64_t integer = 0;
  std::string text;  // kString, kStatus, kError
  std::vector<RedisReply> elements;
};

struct RedisConnectionOptions {
  // A name or an IP literal; names are resolved asynchronously before each connect.
  std::string host = "127.0.0.1";
  uint16_t port = 6379;
  int64_t db = 0;
  // Sent with AUTH after connecting when not empty. A secret: never logged.
  std::string password;
  // A reply later than this ends the connection (hiredis 0.14 has no timeouts of its own).
  // Default: 500 ms.
  Millis command_timeout{500};
  // Connecting, AUTH and SELECT together. Default: 1 s.
  Millis connect_timeout{1000};
  // Waits between attempts to reconnect, doubling from min to max. Default: 100 ms to 2 s.
  Millis reconnect_min{100};
  Millis reconnect_max{2000};
  // Commands waiting for their reply at most; past it Command fails at once. Default: 65,536.
  size_t max_pending = 65'536;
};

// A connection to Redis on hiredis' asynchronous API, driven by an Asio loop like hiredis'
// libevent and libuv adapters: hiredis says when it wants to read or write, an
// asio::posix::stream_descriptor on its socket waits and calls redisAsyncHandleRead/Write back.
// Nothing blocks the loop; commands are pipelined on the one connection, replies come in order.
// It reconnects by itself (with AUTH and SELECT) after any failure, a reply that takes longer than
// command_timeout included.
//
// All methods, callbacks and the state observer run on the thread running `io`. Handlers
// capture `this` only behind a liveness flag; the destructor frees the hiredis context and drops
// the callbacks of commands still waiting without calling them. `clock` must be the real steady
// clock (SystemClock): it places command deadlines in time; it must outlive the connection.
class RedisConnection {
 public:
  // The reply, or kUnavailable (not connected, connection lost, timed out, too many waiting);
  // a Redis error reply is a reply (Type::kError), not an error.
  using Done = std::function<void(Result<RedisReply>)>;
  // Told each time the connection comes up (after AUTH and SELECT) or goes down, with why
  // (never a secret).
  using StateObserver = std::function<void(bool up, const std::string& why)>;

  RedisConnection(boost::asio::io_context& io, const Clock& clock, RedisConnectionOptions options);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Starts connecting; call once.
  void Start();
  // Sends one command. `done` runs exactly once, later (posted), unless the connection is
  // destroyed first (then never).
  void Command(std::vector<std::string> argv, Done done);
  // Connected, authenticated and selected.
  bool up() const { return state_ == State::kUp; }
  void SetStateObserver(StateObserver observer) { observer_ = std::move(observer); }
  // Connections made so far.
  uint64_t connects() const { return connects_; }

 private:
  enum class State : uint8_t { kIdle, kResolving, kConnecting, kHandshake, kUp, kBackoff };
  struct Pending {
    uint64_t id = 0;
    SteadyTime deadline{};
    Done done;
  };

  static void OnReply(redisAsyncContext* ac, void* reply, void* privdata);
  static void OnConnect(const redisAsyncContext* ac, int status);
  static void OnDisconnect(const redisAsyncContext* ac, int status);
  static void AddRead(void* self);
  static void DelRead(void* self);
  static void AddWrite(void* self);
  static void DelWrite(void* self);
  static void Cleanup(void* self);

  void Resolve();
  void Connect(const std::string& ip);
  void Handshake();
  void ArmRead();
  void ArmWrite();
  void ArmDeadline();
  // Sends a command on the live context (any state but kIdle/kBackoff with a context).
  void Send(const std::vector<std::string>& argv, Done done, SteadyTime now);
  // Ends the connection: fails every waiting command, frees the context when it is still ours,
  // tells the observer and schedules a reconnect.
  void Drop(const std::string& why);
  void FailPending();
  void Post(Done done, Result<RedisReply> reply);

  boost::asio::io_context& io_;
  const Clock& clock_;
  RedisConnectionOptions options_;
  boost::asio::ip::tcp::resolver resolver_;
  boost::asio::steady_timer deadline_timer_;
  boost::asio::steady_timer reconnect_timer_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> socket_;
  redisAsyncContext* ctx_ = nullptr;
  RedisReplyBudget reply_budget_;  // of the reply being parsed on ctx_ (its reader's privdata)
  State state_ = State::kIdle;
  bool reading_ = false;
  bool writing_ = false;
  bool read_armed_ = false;
  bool write_armed_ = false;
  uint64_t generation_ = 0;  // of the context; handlers of an older one return quietly
  uint64_t next_id_ = 1;
  uint64_t connects_ = 0;
  Millis backoff_{0};
  std::deque<Pending> pending_;
  StateObserver observer_;
  std::shared_ptr<bool> alive_;
};

// Converts hiredis' reply (a redisReply*) into an owned one: kCorruption past depth 8, 65,536
// elements in one array or 16 MiB in one string.
Result<RedisReply> CopyRedisReply(const void* reply);

}  // namespace egress::adapters
