#include "storage/pg_pool.h"

#include <fmt/format.h>

namespace egress::storage {

PgPool::Use::~Use() {
  if (pool_ != nullptr) {
    pool_->Give(index_);
  }
}

PgConnection& PgPool::Use::operator*() const { return *pool_->conns_[index_]; }

Result<std::unique_ptr<PgPool>> PgPool::Open(std::string conninfo, size_t size,
                                             std::string password) {
  std::unique_ptr<PgPool> pool(new PgPool(std::move(conninfo), std::move(password)));
  for (size_t i = 0; i < std::max<size_t>(size, 1); ++i) {
    auto c = PgConnection::Connect(pool->conninfo_, pool->password_);
    if (!c) {
      return c.error();
    }
    pool->conns_.push_back(std::move(*c));
    pool->busy_.push_back(false);
  }
  return pool;
}

Result<PgPool::Use> PgPool::Take() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    for (size_t i = 0; i < conns_.size(); ++i) {
      if (busy_[i]) {
        continue;
      }
      if (conns_[i] == nullptr || !conns_[i]->ok()) {
        if (health_.healthy) {
          health_ = {false, "connection_lost", "query", "postgres: connection lost"};
        }
        return Status::Unavailable("postgres: connection lost (" + health_.detail +
                                   "); retrying after reconnect");
      }
      busy_[i] = true;
      return Use(this, i);
    }
    freed_.wait(lock);
  }
}

void PgPool::Give(size_t index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_[index] = false;
  }
  freed_.notify_one();
}

Status PgPool::Note(const Status& s, const PgConnection& c) {
  if (s.code() == Status::Code::kUnavailable && !c.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (health_.healthy) {
      health_ = {false, "connection_lost", "query", s.message()};
    }
  }
  return s;
}

StoreHealth PgPool::Health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return health_;
}

Status PgPool::Recover() {
  std::unique_lock<std::mutex> lock(mu_);
  for (size_t i = 0; i < conns_.size(); ++i) {
    // A connection in use is its user's; one lost while in use is found again by the next Take.
    while (busy_[i]) {
      freed_.wait(lock);
    }
    if (conns_[i] != nullptr && conns_[i]->ok()) {
      continue;
    }
    busy_[i] = true;  // connecting without the lock: Take passes it over meanwhile
    lock.unlock();
    auto c = PgConnection::Connect(conninfo_, password_);
    lock.lock();
    busy_[i] = false;
    freed_.notify_all();
    if (!c) {
      health_ = {false, "connection_lost", "connect", c.error().message()};
      return c.error();
    }
    conns_[i] = std::move(*c);
  }
  health_ = StoreHealth{};
  return Status::Ok();
}

}  // namespace egress::storage
