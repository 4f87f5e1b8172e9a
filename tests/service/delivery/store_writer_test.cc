// StoreWriter: group commit between the loop (an io_context run on this thread) and a storage
// pool. A task parked on the one-thread pool holds writes back, so which changes go together is
// decided by the test, not by timing.

#include "dispatcher/service/delivery/store_writer.h"

#include <future>
#include <memory>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <gtest/gtest.h>

#include "storage/rocks_queue_store.h"
#include "tests/support/temp_dir.h"

namespace egress::service {
namespace {

namespace asio = boost::asio;
using storage::Delivery;
using storage::DeliveryState;

constexpr int64_t kT0 = 1'767'225'600'000;

class StoreWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    storage::StoreOptions options;
    options.path = dir_.Sub("store");
    auto opened = storage::OpenRocksQueueStore(options, kT0);
    ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
    store_ = std::move(*opened);
    for (int i = 0; i < 3; ++i) {
      storage::NewDelivery d{.tenant = "acme",
                             .platform = "webhook",
                             .destination = "http://127.0.0.1:9/hook",
                             .credential = "hooks",
                             .payload = R"({"n":)" + std::to_string(i) + "}"};
      auto r = store_->Enqueue(d, kT0);
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      ids_.push_back(r->id);
    }
  }

  void TearDown() override { pool_.join(); }

  // Parks the pool's one thread until the returned promise is set.
  std::promise<void> BlockPool() {
    std::promise<void> release;
    asio::post(pool_, [gate = release.get_future().share()] { gate.wait(); });
    return release;
  }

  static storage::StateChange Lease() { return {.to = DeliveryState::kInFlight, .at_ms = kT0 + 1}; }

  TempDir dir_;
  std::unique_ptr<storage::QueueStore> store_;
  std::vector<std::string> ids_;
  asio::io_context io_;
  asio::thread_pool pool_{1};
};

// Verifies that changes submitted while a write is on the pool go together in the next write,
// and that each `done` gets its own change's result, in order.
TEST_F(StoreWriterTest, ChangesSubmittedDuringAWriteGoInTheNextOne) {
  StoreWriter writer(io_, pool_.get_executor(), *store_);
  std::vector<std::string> done;
  auto record = [&](Result<Delivery> d) {
    ASSERT_TRUE(d.has_value()) << d.error().ToString();
    EXPECT_EQ(d->state, DeliveryState::kInFlight);
    done.push_back(d->id);
  };
  std::promise<void> release = BlockPool();
  for (const std::string& id : ids_) {
    writer.Submit(id, Lease(), record);
  }
  EXPECT_EQ(writer.pending(), 3u);
  release.set_value();
  auto work = asio::make_work_guard(io_);  // run_one waits for the pool's answers
  while (writer.pending() != 0) {
    io_.run_one();
  }
  EXPECT_EQ(done, ids_);
  EXPECT_EQ(writer.batches(), 2u);  // the first alone, then the two that waited for it
  auto counts = store_->Counts();
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(storage::CountOf(*counts, DeliveryState::kInFlight), 3u);
}

// Verifies that a writer destroyed while its write waits on the pool is left alone by that
// write: the write still reaches the store, its `done` is not called, and nothing touches the
// destroyed writer (AddressSanitizer's use-after-free check in `./dev test --asan`).
TEST_F(StoreWriterTest, WriteOnThePoolOutlivesItsWriter) {
  auto writer = std::make_unique<StoreWriter>(io_, pool_.get_executor(), *store_);
  bool called = false;
  std::promise<void> release = BlockPool();
  writer->Submit(ids_[0], Lease(), [&](Result<Delivery>) { called = true; });
  writer.reset();
  release.set_value();
  pool_.join();
  io_.run();
  EXPECT_FALSE(called);
  auto d = store_->Get(ids_[0]);
  ASSERT_TRUE(d.has_value()) << d.error().ToString();
  EXPECT_EQ(d->state, DeliveryState::kInFlight);
}

}  // namespace
}  // namespace egress::service
