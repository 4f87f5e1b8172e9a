#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include "storage/queue_store.h"

namespace egress::service {

// Group commit for the loop's state changes: changes submitted while a write is on the storage
// pool wait and go together in the next one, one WriteBatch and at most one fsync for all of
// them (QueueStore::ApplyBatch). At most one write is on the pool at a time, so a busy loop
// writes in large batches and an idle one with no added delay.
//
// Submit runs on the loop (`io`); writes run on `storage` (the storage pool's executor, or the
// loop's own in a test) and each `done` runs on the loop with that change's result. The store,
// the pool and the loop must outlive the writer's last write; the owner stops the pool before
// destroying it, and `done` is not called once the writer is gone.
class StoreWriter {
 public:
  using Done = std::function<void(Result<storage::Delivery>)>;

  StoreWriter(boost::asio::io_context& io, boost::asio::any_io_executor storage,
              storage::QueueStore& store, size_t max_batch = 2048);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  void Submit(std::string id, storage::StateChange change, Done done);

  // Changes submitted whose `done` has not run yet.
  size_t pending() const { return waiting_.size() + writing_; }
  uint64_t batches() const { return batches_; }

 private:
  void Flush();

  boost::asio::io_context& io_;
  boost::asio::any_io_executor storage_;
  storage::QueueStore& store_;
  const size_t max_batch_;
  std::shared_ptr<bool> alive_;
  std::vector<storage::QueueStore::IdChange> waiting_;
  std::vector<Done> waiting_done_;
  size_t writing_ = 0;  // changes in the write on the pool
  uint64_t batches_ = 0;
};

}  // namespace egress::service
