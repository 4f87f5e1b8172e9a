#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"
#include "dispatcher/service/metrics.h"
#include "storage/queue_store.h"

namespace egress::service {

// The service's retention ([server.retention], docs/configuration.md).
struct RetentionOptions {
  // Ages per class; 0 keeps a class. Defaults: storage::RetentionPolicy's (delivered and
  // cancelled 7 days, dead 30 days, idempotency keys 24 hours).
  storage::RetentionPolicy policy;
  // From the end of one pass to the start of the next. Default: 1 minute.
  Millis interval{60'000};
  // Entries one slice (one PurgeExpired call, one write) examines; 0 reads as 1. Default: 1,000.
  size_t slice = 1000;
};

// One retention pass on the calling thread, at `now_ms` (wall clock, Unix ms): slices of
// PurgeExpired(policy, now_ms, slice) until none is left, yielding the thread between slices so
// intake and outcome writes waiting for the same locks or the same write queue go first.
// `after_slice` sees each slice's counts (with `more`) and returns false to stop the pass early
// (shutdown). Returns the counts summed over the slices (`more` set when it stopped early).
// Errors: PurgeExpired's, at the first (the slices before it are done and were reported).
Result<storage::PurgeCounts> RunRetentionPass(
    storage::QueueStore& store, const storage::RetentionPolicy& policy, int64_t now_ms,
    size_t slice, const std::function<bool(const storage::PurgeCounts&)>& after_slice);

// Runs retention passes on a timer, each on a thread of its own: never on the loop, whose
// intake and deliveries go on meanwhile. The first pass starts with Start(); each next one
// `interval` after the previous ended. Every slice adds to relay_egress_purged_total{state} and
// relay_egress_idempotency_keys_expired_total; after each pass the store's size on disk
// (QueueStore::Stats) goes to relay_egress_store_bytes. A failed slice ends its pass: it is
// logged (retention_failed), counted in relay_egress_store_errors_total{operation="purge"},
// and the next pass tries again.
//
// Start, Stop and the destructor run on the loop (`io`). `store`, `clock` and `metrics` must
// outlive this object; handlers posted to the loop hold a liveness flag, so the object may be
// destroyed while some are queued.
class RetentionRunner {
 public:
  RetentionRunner(boost::asio::io_context& io, storage::QueueStore& store, const Clock& clock,
                  Metrics& metrics, RetentionOptions options);
  // Stops (see Stop).
  ~RetentionRunner();

  void Start();
  // Cancels the timer, asks a running pass to stop after its current slice and waits for it
  // (at most one slice): the store may be closed after. Later calls do nothing.
  void Stop();

 private:
  void Arm(Millis delay);  // on the loop
  void RunPass();          // on thread_

  boost::asio::io_context& io_;
  storage::QueueStore& store_;
  const Clock& clock_;
  Metrics& metrics_;
  const RetentionOptions options_;
  boost::asio::steady_timer timer_;
  boost::asio::thread_pool thread_{1};
  std::atomic<bool> stopping_{false};
  bool stopped_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // read and written on the loop
};

}  // namespace egress::service
