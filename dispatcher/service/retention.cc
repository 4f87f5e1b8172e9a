#include "dispatcher/service/retention.h"

#include <algorithm>
#include <string>
#include <thread>

#include <boost/asio/post.hpp>

#include "dispatcher/service/event_log.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;

void Add(storage::PurgeCounts& sum, const storage::PurgeCounts& c) {
  sum.delivered += c.delivered;
  sum.cancelled += c.cancelled;
  sum.dead += c.dead;
  sum.idempotency_keys += c.idempotency_keys;
}

}  // namespace

Result<storage::PurgeCounts> RunRetentionPass(
    storage::QueueStore& store, const storage::RetentionPolicy& policy, int64_t now_ms,
    size_t slice, const std::function<bool(const storage::PurgeCounts&)>& after_slice) {
  storage::PurgeCounts total;
  slice = std::max<size_t>(slice, 1);
  for (;;) {
    Result<storage::PurgeCounts> c = store.PurgeExpired(policy, now_ms, slice);
    if (!c) {
      return c.error();
    }
    Add(total, *c);
    const bool go_on = after_slice(*c);
    if (!c->more) {
      return total;
    }
    if (!go_on) {
      total.more = true;
      return total;
    }
    std::this_thread::yield();
  }
}

RetentionRunner::RetentionRunner(asio::io_context& io, storage::QueueStore& store,
                                 const Clock& clock, Metrics& metrics, RetentionOptions options)
    : io_(io),
      store_(store),
      clock_(clock),
      metrics_(metrics),
      options_(std::move(options)),
      timer_(io) {}

RetentionRunner::~RetentionRunner() { Stop(); }

void RetentionRunner::Start() {
  // The series exist from the start, so a rate over them begins at 0.
  for (const char* state : {"delivered", "cancelled", "dead"}) {
    metrics_.Inc(CounterId::kPurged, {{"state", state}}, 0);
  }
  metrics_.Inc(CounterId::kIdempotencyKeysExpired, {}, 0);
  Arm(Millis(0));
}

void RetentionRunner::Stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  *alive_ = false;
  stopping_ = true;
  timer_.cancel();
  thread_.join();
}

void RetentionRunner::Arm(Millis delay) {
  timer_.expires_after(delay);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive) {
      return;
    }
    asio::post(thread_, [this] { RunPass(); });
  });
}

void RetentionRunner::RunPass() {
  const int64_t now_ms = ToUnixMillis(clock_.WallNow());
  Result<storage::PurgeCounts> pass = RunRetentionPass(
      store_, options_.policy, now_ms, options_.slice, [this](const storage::PurgeCounts& c) {
        if (c.delivered + c.cancelled + c.dead + c.idempotency_keys > 0) {
          asio::post(io_, [this, alive = alive_, c] {
            if (!*alive) {
              return;
            }
            metrics_.Inc(CounterId::kPurged, {{"state", "delivered"}},
                         static_cast<double>(c.delivered));
            metrics_.Inc(CounterId::kPurged, {{"state", "cancelled"}},
                         static_cast<double>(c.cancelled));
            metrics_.Inc(CounterId::kPurged, {{"state", "dead"}}, static_cast<double>(c.dead));
            metrics_.Inc(CounterId::kIdempotencyKeysExpired, {},
                         static_cast<double>(c.idempotency_keys));
          });
        }
        return !stopping_;
      });
  if (!pass) {
    LogEvent(LogLevel::kError, "retention_failed", {{"error", pass.error().ToString()}});
  }
  const uint64_t bytes = store_.Stats().disk_bytes;
  asio::post(io_, [this, alive = alive_, failed = !pass, bytes] {
    if (!*alive) {
      return;
    }
    if (failed) {
      metrics_.Inc(CounterId::kStoreErrors, {{"operation", "purge"}});
    }
    metrics_.Set(GaugeId::kStoreBytes, {}, static_cast<double>(bytes));
    Arm(options_.interval);
  });
}

}  // namespace egress::service
