#include "adapters/redis_connection.h"

#include <algorithm>
#include <utility>

#include <boost/asio/post.hpp>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

namespace egress::adapters {
namespace {

namespace asio = boost::asio;

Result<RedisReply> Copy(const redisReply* r, int depth) {
  if (depth > kMaxReplyDepth) {
    return Status::Corruption("redis reply nested too deep");
  }
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r->integer;
      return out;
    case REDIS_REPLY_NIL:
      return out;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      if (r->len > kMaxReplyString) {
        return Status::Corruption("redis reply string too long");
      }
      out.type = r->type == REDIS_REPLY_STRING   ? RedisReply::Type::kString
                 : r->type == REDIS_REPLY_STATUS ? RedisReply::Type::kStatus
                                                 : RedisReply::Type::kError;
      out.text.assign(r->str, r->len);
      return out;
    case REDIS_REPLY_ARRAY:
      if (r->elements > kMaxReplyElements) {
        return Status::Corruption("redis reply array too long");
      }
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) {
        Result<RedisReply> element = Copy(r->element[i], depth + 1);
        if (!element) {
          return element.error();
        }
        out.elements.push_back(std::move(*element));
      }
      return out;
    default:
      return Status::Corruption("redis reply of an unknown type");
  }
}

}  // namespace

Result<RedisReply> CopyRedisReply(const void* reply) {
  if (reply == nullptr) {
    return Status::Unavailable("redis connection lost");
  }
  return Copy(static_cast<const redisReply*>(reply), 0);
}

RedisConnection::RedisConnection(asio::io_context& io, const Clock& clock,
                                 RedisConnectionOptions options)
    : io_(io),
      clock_(clock),
      options_(std::move(options)),
      resolver_(io),
      deadline_timer_(io),
      reconnect_timer_(io),
      alive_(std::make_shared<bool>(true)) {}

RedisConnection::~RedisConnection() {
  alive_.reset();
  pending_.clear();  // dropped without being called: their owners are going too
  if (ctx_ != nullptr) {
    redisAsyncContext* ctx = ctx_;
    ctx_ = nullptr;
    redisAsyncFree(ctx);  // calls the waiting callbacks with no reply, then Cleanup
  }
}

void RedisConnection::Start() {
  if (state_ == State::kIdle) {
    Resolve();
  }
}

void RedisConnection::Post(Done done, Result<RedisReply> reply) {
  std::weak_ptr<bool> alive = alive_;
  asio::post(io_, [alive, done = std::move(done), reply = std::move(reply)]() mutable {
    if (!alive.expired()) {
      done(std::move(reply));
    }
  });
}

void RedisConnection::Resolve() {
  state_ = State::kResolving;
  std::weak_ptr<bool> alive = alive_;
  resolver_.async_resolve(options_.host, std::to_string(options_.port),
                          [this, alive](const boost::system::error_code& ec,
                                        const asio::ip::tcp::resolver::results_type& results) {
                            if (alive.expired() || ec == asio::error::operation_aborted) {
                              return;
                            }
                            if (ec || results.empty()) {
                              Drop("redis host does not resolve");
                              return;
                            }
                            Connect(results.begin()->endpoint().address().to_string());
                          });
}

void RedisConnection::Connect(const std::string& ip) {
  state_ = State::kConnecting;
  redisAsyncContext* ctx = redisAsyncConnect(ip.c_str(), options_.port);
  if (ctx == nullptr) {
    Drop("redis connect: out of memory");
    return;
  }
  if (ctx->err != 0) {
    const std::string why = std::string("redis connect: ") + ctx->errstr;
    redisAsyncFree(ctx);
    Drop(why);
    return;
  }
  ++generation_;
  ctx_ = ctx;
  ctx->data = this;
  // Replies are bounded while they are parsed (redis_reply_limits.h), not after.
  reply_budget_ = RedisReplyBudget{};
  ctx->c.reader->fn = BoundedReplyFunctions();
  ctx->c.reader->privdata = &reply_budget_;
  boost::system::error_code ec;
  socket_ = std::make_unique<asio::posix::stream_descriptor>(io_);
  socket_->assign(ctx->c.fd, ec);
  if (ec) {
    Drop("redis connect: cannot watch the socket");
    return;
  }
  reading_ = writing_ = read_armed_ = write_armed_ = false;
  ctx->ev.data = this;
  ctx->ev.addRead = &RedisConnection::AddRead;
  ctx->ev.delRead = &RedisConnection::DelRead;
  ctx->ev.addWrite = &RedisConnection::AddWrite;
  ctx->ev.delWrite = &RedisConnection::DelWrite;
  ctx->ev.cleanup = &RedisConnection::Cleanup;
  redisAsyncSetDisconnectCallback(ctx, &RedisConnection::OnDisconnect);
  redisAsyncSetConnectCallback(ctx, &RedisConnection::OnConnect);  // waits for writable
  // The connect and the handshake share one deadline, as a dummy pending entry would not.
  const uint64_t generation = generation_;
  std::weak_ptr<bool> alive = alive_;
  reconnect_timer_.expires_after(options_.connect_timeout);
  reconnect_timer_.async_wait([this, alive, generation](const boost::system::error_code& e) {
    if (alive.expired() || e || generation != generation_) {
      return;
    }
    if (state_ == State::kConnecting || state_ == State::kHandshake) {
      Drop("redis connect timed out");
    }
  });
}

void RedisConnection::OnConnect(const redisAsyncContext* ac, int status) {
  auto* self = static_cast<RedisConnection*>(ac->data);
  if (self == nullptr) {
    return;
  }
  if (status != REDIS_OK) {
    // hiredis frees the context after this callback.
    self->ctx_ = nullptr;
    std::weak_ptr<bool> alive = self->alive_;
    asio::post(self->io_, [self, alive] {
      if (!alive.expired()) {
        self->Drop("redis connect failed");
      }
    });
    return;
  }
  self->state_ = State::kHandshake;
  self->Handshake();
}

void RedisConnection::OnDisconnect(const redisAsyncContext* ac, int /*status*/) {
  auto* self = static_cast<RedisConnection*>(ac->data);
  if (self == nullptr || self->ctx_ != ac) {
    return;
  }
  // hiredis frees the context after this callback.
  self->ctx_ = nullptr;
  std::weak_ptr<bool> alive = self->alive_;
  const std::string why = self->reply_budget_.refused != nullptr
                              ? std::string("refused: ") + self->reply_budget_.refused
                              : std::string("redis connection lost");
  asio::post(self->io_, [self, alive, why] {
    if (!alive.expired()) {
      self->Drop(why);
    }
  });
}

void RedisConnection::Handshake() {
  const SteadyTime now = clock_.Now();
  std::weak_ptr<bool> alive = alive_;
  const uint64_t generation = generation_;
  auto step = [this, alive, generation](const char* what) {
    return [this, alive, generation, what](Result<RedisReply> reply) {
      if (alive.expired() || generation != generation_ || state_ != State::kHandshake) {
        return;
      }
      if (!reply || reply->type == RedisReply::Type::kError) {
        Drop(std::string("redis ") + what + " failed");
      }
    };
  };
  if (!options_.password.empty()) {
    Send({"AUTH", options_.password}, step("AUTH"), now);
  }
  if (options_.db != 0) {
    Send({"SELECT", std::to_string(options_.db)}, step("SELECT"), now);
  }
  Send(
      {"PING"},
      [this, alive, generation](Result<RedisReply> reply) {
        if (alive.expired() || generation != generation_ || state_ != State::kHandshake) {
          return;
        }
        if (!reply || reply->type == RedisReply::Type::kError) {
          Drop("redis PING failed");
          return;
        }
        // The back-off starts again only once a command has been answered (OnReply): a Redis that
        // answers PING but fails every script reconnects at reconnect_max, not in a tight loop.
        state_ = State::kUp;
        ++connects_;
        reconnect_timer_.cancel();
        if (observer_) {
          observer_(true, "redis connected");
        }
      },
      now);
}

void RedisConnection::Command(std::vector<std::string> argv, Done done) {
  if (state_ != State::kUp || ctx_ == nullptr) {
    Post(std::move(done), Status::Unavailable("redis is not connected"));
    return;
  }
  if (pending_.size() >= options_.max_pending) {
    Post(std::move(done), Status::Unavailable("too many redis commands waiting"));
    return;
  }
  Send(argv, std::move(done), clock_.Now());
}

void RedisConnection::Send(const std::vector<std::string>& argv, Done done, SteadyTime now) {
  std::vector<const char*> parts;
  std::vector<size_t> lengths;
  parts.reserve(argv.size());
  lengths.reserve(argv.size());
  for (const std::string& arg : argv) {
    parts.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  const uint64_t id = next_id_++;
  if (redisAsyncCommandArgv(ctx_, &RedisConnection::OnReply, reinterpret_cast<void*>(id),
                            static_cast<int>(parts.size()), parts.data(),
                            lengths.data()) != REDIS_OK) {
    Post(std::move(done), Status::Unavailable("redis refused the command"));
    return;
  }
  const bool was_empty = pending_.empty();
  pending_.push_back(Pending{id, now + options_.command_timeout, std::move(done)});
  if (was_empty) {
    ArmDeadline();
  }
}

void RedisConnection::OnReply(redisAsyncContext* ac, void* reply, void* privdata) {
  auto* self = static_cast<RedisConnection*>(ac->data);
  if (self == nullptr) {
    return;
  }
  const auto id = reinterpret_cast<uint64_t>(privdata);
  if (self->pending_.empty() || self->pending_.front().id != id) {
    return;  // failed already (a drop); replies come in order
  }
  Done done = std::move(self->pending_.front().done);
  self->pending_.pop_front();
  Result<RedisReply> copied = CopyRedisReply(reply);
  if (self->state_ == State::kUp && copied && copied->type != RedisReply::Type::kError) {
    self->backoff_ = Millis(0);
  }
  self->Post(std::move(done), std::move(copied));
}

void RedisConnection::ArmDeadline() {
  if (pending_.empty()) {
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  deadline_timer_.expires_after(pending_.front().deadline - clock_.Now());
  deadline_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (alive.expired() || ec == asio::error::operation_aborted) {
      return;
    }
    if (pending_.empty()) {
      return;
    }
    if (pending_.front().deadline <= clock_.Now()) {
      Drop("redis reply timed out");
      return;
    }
    ArmDeadline();
  });
}

void RedisConnection::AddRead(void* p) {
  auto* self = static_cast<RedisConnection*>(p);
  self->reading_ = true;
  self->ArmRead();
}

void RedisConnection::DelRead(void* p) { static_cast<RedisConnection*>(p)->reading_ = false; }

void RedisConnection::AddWrite(void* p) {
  auto* self = static_cast<RedisConnection*>(p);
  self->writing_ = true;
  self->ArmWrite();
}

void RedisConnection::DelWrite(void* p) { static_cast<RedisConnection*>(p)->writing_ = false; }

void RedisConnection::Cleanup(void* p) {
  auto* self = static_cast<RedisConnection*>(p);
  self->reading_ = self->writing_ = false;
  self->read_armed_ = self->write_armed_ = false;
  ++self->generation_;
  if (self->socket_ != nullptr) {
    boost::system::error_code ec;
    self->socket_->cancel(ec);
    self->socket_->release();  // hiredis closes its socket
    self->socket_.reset();
  }
}

void RedisConnection::ArmRead() {
  if (read_armed_ || socket_ == nullptr) {
    return;
  }
  read_armed_ = true;
  std::weak_ptr<bool> alive = alive_;
  const uint64_t generation = generation_;
  socket_->async_wait(asio::posix::stream_descriptor::wait_read,
                      [this, alive, generation](const boost::system::error_code& ec) {
                        if (alive.expired() || generation != generation_) {
                          return;
                        }
                        read_armed_ = false;
                        if (ec || !reading_ || ctx_ == nullptr) {
                          return;
                        }
                        redisAsyncHandleRead(ctx_);
                        if (generation != generation_ || ctx_ == nullptr) {
                          return;
                        }
                        // A string is parsed only once all of it is in: bound what waits.
                        const redisReader* reader = ctx_->c.reader;
                        if (reader != nullptr && reader->len - reader->pos > kMaxUnparsedReply) {
                          Drop("refused: redis reply over 32 MiB");
                          return;
                        }
                        if (reading_) {
                          ArmRead();
                        }
                      });
}

void RedisConnection::ArmWrite() {
  if (write_armed_ || socket_ == nullptr) {
    return;
  }
  write_armed_ = true;
  std::weak_ptr<bool> alive = alive_;
  const uint64_t generation = generation_;
  socket_->async_wait(asio::posix::stream_descriptor::wait_write,
                      [this, alive, generation](const boost::system::error_code& ec) {
                        if (alive.expired() || generation != generation_) {
                          return;
                        }
                        write_armed_ = false;
                        if (ec || !writing_ || ctx_ == nullptr) {
                          return;
                        }
                        redisAsyncHandleWrite(ctx_);
                        if (generation == generation_ && writing_) {
                          ArmWrite();
                        }
                      });
}

void RedisConnection::FailPending() {
  std::deque<Pending> failed = std::move(pending_);
  pending_.clear();
  for (Pending& p : failed) {
    Post(std::move(p.done), Status::Unavailable("redis connection lost"));
  }
}

void RedisConnection::Drop(const std::string& why) {
  const bool was_up = state_ == State::kUp;
  FailPending();
  deadline_timer_.cancel();
  if (ctx_ != nullptr) {
    redisAsyncContext* ctx = ctx_;
    ctx_ = nullptr;
    ctx->data = nullptr;  // its callbacks (with no reply) find no connection
    redisAsyncFree(ctx);
  }
  Cleanup(this);
  state_ = State::kBackoff;
  if (was_up && observer_) {
    observer_(false, why);
  } else if (!was_up && observer_ && connects_ == 0 && backoff_ == Millis(0)) {
    observer_(false, why);  // the first attempt failed: say so once
  }
  backoff_ = backoff_ == Millis(0) ? options_.reconnect_min
                                   : std::min(options_.reconnect_max, backoff_ * 2);
  std::weak_ptr<bool> alive = alive_;
  reconnect_timer_.expires_after(backoff_);
  reconnect_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (alive.expired() || ec) {
      return;
    }
    Resolve();
  });
}

}  // namespace egress::adapters
