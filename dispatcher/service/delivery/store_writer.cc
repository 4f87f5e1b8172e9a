#include "dispatcher/service/delivery/store_writer.h"

#include <boost/asio/post.hpp>

namespace egress::service {

namespace asio = boost::asio;

StoreWriter::StoreWriter(asio::io_context& io, asio::any_io_executor storage,
                         storage::QueueStore& store, size_t max_batch)
    : io_(io),
      storage_(std::move(storage)),
      store_(store),
      max_batch_(max_batch),
      alive_(std::make_shared<bool>(true)) {}

StoreWriter::~StoreWriter() { *alive_ = false; }

void StoreWriter::Submit(std::string id, storage::StateChange change, Done done) {
  waiting_.emplace_back(std::move(id), std::move(change));
  waiting_done_.push_back(std::move(done));
  if (writing_ == 0) {
    Flush();
  }
}

void StoreWriter::Flush() {
  if (waiting_.empty()) {
    return;
  }
  std::vector<storage::QueueStore::IdChange> changes;
  std::vector<Done> dones;
  if (waiting_.size() <= max_batch_) {
    changes.swap(waiting_);
    dones.swap(waiting_done_);
  } else {
    changes.assign(std::make_move_iterator(waiting_.begin()),
                   std::make_move_iterator(waiting_.begin() + max_batch_));
    dones.assign(std::make_move_iterator(waiting_done_.begin()),
                 std::make_move_iterator(waiting_done_.begin() + max_batch_));
    waiting_.erase(waiting_.begin(), waiting_.begin() + max_batch_);
    waiting_done_.erase(waiting_done_.begin(), waiting_done_.begin() + max_batch_);
  }
  writing_ = changes.size();
  ++batches_;
  // The pool job may outlive the writer (its owner need not join the pool first): it reaches
  // the store and the loop through references of its own, and `this` only behind `alive`.
  asio::post(storage_, [this, &store = store_, &io = io_, alive = alive_,
                        changes = std::move(changes), dones = std::move(dones)]() mutable {
    auto results = store.ApplyBatch(changes);
    asio::post(io, [this, alive, results = std::move(results), dones = std::move(dones)]() mutable {
      if (!*alive) {
        return;
      }
      // Changes the callbacks submit wait (writing_ is still set) and go in the next batch.
      for (size_t i = 0; i < dones.size(); ++i) {
        dones[i](results ? std::move((*results)[i]) : Result<storage::Delivery>(results.error()));
      }
      writing_ = 0;
      Flush();
    });
  });
}

}  // namespace egress::service
