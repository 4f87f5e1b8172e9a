#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "dispatcher/base/clock.h"
#include "storage/queue_store.h"

namespace egress::service {

// Group commit for the loop's state changes: changes submitted while a write is on the storage
// pool wait and go together in the next one, one WriteBatch and at most one fsync for all of
// them (QueueStore::ApplyBatch). At most one write is on the pool at a time, so a busy loop
// writes in large batches and an idle one with no added delay.
//
// With a linger (Options::linger, linger_batch), a write that would start with fewer than
// linger_batch changes waits up to `linger` for more: fewer, larger transactions where each has
// a high fixed cost (a PostgreSQL store's statements and commit), at the price of that much
// delay before a change is durable. The linger is waited for with a timer on the loop.
//
// With `retry` on, a change whose write failed for a passing reason is written again, never
// handed back as failed: when the whole write failed (anything but FailedPrecondition or
// InvalidArgument: a full disk, an I/O error, a store refusing writes until it recovers) or
// its own result is Unavailable, IoError, Busy or TimedOut. The changes wait, ahead of newer
// ones, for a back-off (Options::first_retry, doubling up to max_retry, reset by a write that
// succeeds), then go in the next write; `done` runs once the change is written or refused for
// good. Meanwhile no other write starts.
//
// Submit runs on the loop (`io`); writes run on `storage` (the storage pool's executor, or the
// loop's own in a test) and each `done` runs on the loop with that change's result. The back-off
// is measured with `clock` and waited for with a timer on the loop; a test with a FakeClock
// moves the clock and calls Poke. The store, the pool, the loop and the clock must outlive the
// writer's last write; the owner stops the pool before destroying it, and `done` is not called
// once the writer is gone.
class StoreWriter {
 public:
  using Done = std::function<void(Result<storage::Delivery>)>;
  // Called on the loop for each write that failed and will be tried again: the error and how
  // many changes wait for the retry.
  using RetryObserver = std::function<void(const Status& error, size_t changes)>;

  struct Options {
    // Most changes in one write. Default: 2048.
    size_t max_batch = 2048;
    // Retry failed writes (see above). Default: false: every result goes to `done`.
    bool retry = false;
    // Back-off before the first retry of a failure streak. Default: 200 ms.
    Millis first_retry{200};
    // Longest back-off. Default: 5 s.
    Millis max_retry{5000};
    // Longest wait for linger_batch changes before a write starts with fewer. Default: 0 (none).
    Millis linger{0};
    size_t linger_batch = 0;
  };

  StoreWriter(boost::asio::io_context& io, boost::asio::any_io_executor storage,
              storage::QueueStore& store, const Clock& clock, Options options);
  StoreWriter(boost::asio::io_context& io, boost::asio::any_io_executor storage,
              storage::QueueStore& store, const Clock& clock)
      : StoreWriter(io, std::move(storage), store, clock, Options{}) {}
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  void Submit(std::string id, storage::StateChange change, Done done);
  void SetRetryObserver(RetryObserver observer) { on_retry_ = std::move(observer); }

  // Writes what waits for a retry if its back-off has passed by the clock.
  void Poke();
  // Writes what waits for a retry now, back-off or not (the store said it recovered).
  void RetryNow();

  // Changes submitted whose `done` has not run yet (retried ones included).
  size_t pending() const { return waiting_.size() + writing_; }
  // Whether a failed write waits for its back-off.
  bool retrying() const { return retry_at_.has_value(); }
  uint64_t batches() const { return batches_; }

 private:
  // Flush, unless a linger is set and fewer than linger_batch changes wait: then the write
  // starts when they are that many or the linger timer fires.
  void FlushOrLinger();
  void Flush();
  // The write of `changes` came back with `results`: hands each result to its `done`, or keeps
  // the change for a retry.
  void Finished(std::vector<storage::QueueStore::IdChange> changes, std::vector<Done> dones,
                Result<std::vector<Result<storage::Delivery>>> results);
  void WaitForRetry(Millis wait);

  boost::asio::io_context& io_;
  boost::asio::any_io_executor storage_;
  storage::QueueStore& store_;
  const Clock& clock_;
  const Options options_;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer linger_timer_;
  bool lingering_ = false;  // linger_timer_ is armed
  std::shared_ptr<bool> alive_;
  RetryObserver on_retry_;
  std::vector<storage::QueueStore::IdChange> waiting_;
  std::vector<Done> waiting_done_;
  size_t writing_ = 0;  // changes in the write on the pool
  uint64_t batches_ = 0;
  Millis backoff_{0};                   // of the current failure streak; 0: none
  std::optional<SteadyTime> retry_at_;  // set while a failed write waits for its back-off
};

}  // namespace egress::service
