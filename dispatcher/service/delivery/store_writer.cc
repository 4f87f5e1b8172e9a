#include "dispatcher/service/delivery/store_writer.h"

#include <algorithm>

#include <boost/asio/post.hpp>

namespace egress::service {
namespace {

namespace asio = boost::asio;

// A write that failed as a whole may succeed later unless the store can never take it.
bool RetryWrite(const Status& s) {
  return s.code() != Status::Code::kFailedPrecondition &&
         s.code() != Status::Code::kInvalidArgument;
}

// A change refused on its own is retried only for reasons that pass.
bool RetryChange(const Status& s) {
  switch (s.code()) {
    case Status::Code::kUnavailable:
    case Status::Code::kIoError:
    case Status::Code::kBusy:
    case Status::Code::kTimedOut:
      return true;
    default:
      return false;
  }
}

}  // namespace

StoreWriter::StoreWriter(asio::io_context& io, asio::any_io_executor storage,
                         storage::QueueStore& store, const Clock& clock, Options options)
    : io_(io),
      storage_(std::move(storage)),
      store_(store),
      clock_(clock),
      options_(options),
      timer_(io),
      linger_timer_(io),
      alive_(std::make_shared<bool>(true)) {}

StoreWriter::~StoreWriter() { *alive_ = false; }

void StoreWriter::Submit(std::string id, storage::StateChange change, Done done) {
  waiting_.emplace_back(std::move(id), std::move(change));
  waiting_done_.push_back(std::move(done));
  if (writing_ == 0 && !retry_at_) {
    FlushOrLinger();
  }
}

void StoreWriter::FlushOrLinger() {
  if (options_.linger.count() > 0 && waiting_.size() < options_.linger_batch) {
    if (!lingering_ && !waiting_.empty()) {
      lingering_ = true;
      linger_timer_.expires_after(options_.linger);
      linger_timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
        if (ec || !*alive) {
          return;
        }
        lingering_ = false;
        if (writing_ == 0 && !retry_at_) {
          Flush();
        }
      });
    }
    return;
  }
  if (lingering_) {
    lingering_ = false;
    linger_timer_.cancel();
  }
  Flush();
}

void StoreWriter::Poke() {
  if (retry_at_ && clock_.Now() >= *retry_at_) {
    RetryNow();
  }
}

void StoreWriter::RetryNow() {
  if (!retry_at_) {
    return;
  }
  retry_at_.reset();
  timer_.cancel();
  Flush();
}

void StoreWriter::WaitForRetry(Millis wait) {
  timer_.expires_after(wait);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive || !retry_at_) {
      return;
    }
    const SteadyTime now = clock_.Now();
    if (now >= *retry_at_) {
      RetryNow();
    } else {
      WaitForRetry(std::chrono::duration_cast<Millis>(*retry_at_ - now));
    }
  });
}

void StoreWriter::Flush() {
  if (waiting_.empty()) {
    return;
  }
  std::vector<storage::QueueStore::IdChange> changes;
  std::vector<Done> dones;
  if (waiting_.size() <= options_.max_batch) {
    changes.swap(waiting_);
    dones.swap(waiting_done_);
  } else {
    const auto n = static_cast<std::ptrdiff_t>(options_.max_batch);
    changes.assign(std::make_move_iterator(waiting_.begin()),
                   std::make_move_iterator(waiting_.begin() + n));
    dones.assign(std::make_move_iterator(waiting_done_.begin()),
                 std::make_move_iterator(waiting_done_.begin() + n));
    waiting_.erase(waiting_.begin(), waiting_.begin() + n);
    waiting_done_.erase(waiting_done_.begin(), waiting_done_.begin() + n);
  }
  writing_ = changes.size();
  ++batches_;
  // The pool job may outlive the writer (its owner need not join the pool first): it reaches
  // the store and the loop through references of its own, and `this` only behind `alive`.
  asio::post(storage_, [this, &store = store_, &io = io_, alive = alive_,
                        changes = std::move(changes), dones = std::move(dones)]() mutable {
    auto results = store.ApplyBatch(changes);
    asio::post(io, [this, alive, changes = std::move(changes), dones = std::move(dones),
                    results = std::move(results)]() mutable {
      if (*alive) {
        Finished(std::move(changes), std::move(dones), std::move(results));
      }
    });
  });
}

void StoreWriter::Finished(std::vector<storage::QueueStore::IdChange> changes,
                           std::vector<Done> dones,
                           Result<std::vector<Result<storage::Delivery>>> results) {
  std::vector<storage::QueueStore::IdChange> again;
  std::vector<Done> again_done;
  Status failure;
  // Changes the callbacks submit wait (writing_ is still set) and go in the next batch.
  for (size_t i = 0; i < dones.size(); ++i) {
    Result<storage::Delivery> r =
        results ? std::move((*results)[i]) : Result<storage::Delivery>(results.error());
    const bool retry =
        options_.retry && (results ? !r && RetryChange(r.error()) : RetryWrite(results.error()));
    if (retry) {
      if (failure.ok()) {
        failure = r.error();
      }
      again.push_back(std::move(changes[i]));
      again_done.push_back(std::move(dones[i]));
      continue;
    }
    dones[i](std::move(r));
  }
  writing_ = 0;
  if (again.empty()) {
    backoff_ = Millis(0);
    FlushOrLinger();
    return;
  }
  // The failed changes go first, ahead of those submitted since.
  waiting_.insert(waiting_.begin(), std::make_move_iterator(again.begin()),
                  std::make_move_iterator(again.end()));
  waiting_done_.insert(waiting_done_.begin(), std::make_move_iterator(again_done.begin()),
                       std::make_move_iterator(again_done.end()));
  backoff_ =
      backoff_.count() == 0 ? options_.first_retry : std::min(backoff_ * 2, options_.max_retry);
  retry_at_ = clock_.Now() + backoff_;
  if (on_retry_) {
    on_retry_(failure, again.size());
  }
  WaitForRetry(backoff_);
}

}  // namespace egress::service
