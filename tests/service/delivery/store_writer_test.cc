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
#include "tests/support/fake_clock.h"
#include "tests/support/memory_queue_store.h"
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

  FakeClock clock_;
  TempDir dir_;
  std::unique_ptr<storage::QueueStore> store_;
  std::vector<std::string> ids_;
  asio::io_context io_;
  asio::thread_pool pool_{1};
};

// Verifies that with a linger a write waits for linger_batch changes (here the linger is an
// hour, so only the count can start it), and that a short linger starts a lone change's write.
TEST_F(StoreWriterTest, ALingeringWriteWaitsForItsBatchOrItsTime) {
  auto work = asio::make_work_guard(io_);
  std::vector<std::string> done;
  auto record = [&](Result<Delivery> d) {
    ASSERT_TRUE(d.has_value()) << d.error().ToString();
    done.push_back(d->id);
  };
  {
    StoreWriter writer(io_, pool_.get_executor(), *store_, clock_,
                       {.linger = Millis(3'600'000), .linger_batch = 2});
    writer.Submit(ids_[0], Lease(), record);
    io_.poll();
    EXPECT_EQ(writer.batches(), 0u);
    EXPECT_EQ(writer.pending(), 1u);
    writer.Submit(ids_[1], Lease(), record);
    while (writer.pending() != 0) {
      io_.run_one();
    }
    EXPECT_EQ(writer.batches(), 1u);  // both in one write, started by the second
    EXPECT_EQ(done, std::vector<std::string>(ids_.begin(), ids_.begin() + 2));
  }
  StoreWriter writer(io_, pool_.get_executor(), *store_, clock_,
                     {.linger = Millis(1), .linger_batch = 100});
  writer.Submit(ids_[2], Lease(), record);
  while (writer.pending() != 0) {
    io_.run_one();  // the linger's timer, then the pool's answer
  }
  EXPECT_EQ(writer.batches(), 1u);
  EXPECT_EQ(done.back(), ids_[2]);
}

// Verifies that changes submitted while a write is on the pool go together in the next write,
// and that each `done` gets its own change's result, in order.
TEST_F(StoreWriterTest, ChangesSubmittedDuringAWriteGoInTheNextOne) {
  StoreWriter writer(io_, pool_.get_executor(), *store_, clock_);
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
  auto writer = std::make_unique<StoreWriter>(io_, pool_.get_executor(), *store_, clock_);
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

// The retries of a StoreWriter over an in-memory store that fails on request, its writes run on
// the loop itself (as the delivery loop's tests run them) and its back-off measured on a
// FakeClock: every step is the test's.
class StoreWriterRetryTest : public ::testing::Test {
 protected:
  StoreWriterRetryTest() {
    for (int i = 0; i < 2; ++i) {
      storage::NewDelivery d{.tenant = "acme",
                             .platform = "webhook",
                             .destination = "http://127.0.0.1:9/hook",
                             .credential = "hooks",
                             .payload = "{}"};
      auto r = store_.Enqueue(d, kT0);
      EXPECT_TRUE(r.has_value()) << r.error().ToString();
      ids_.push_back(r ? r->id : std::string());
    }
  }

  std::unique_ptr<StoreWriter> Writer(bool retry) {
    auto writer = std::make_unique<StoreWriter>(
        io_, io_.get_executor(), store_, clock_,
        StoreWriter::Options{.retry = retry, .first_retry = Millis(200), .max_retry = Millis(300)});
    writer->SetRetryObserver([this](const Status& error, size_t changes) {
      retries_.push_back(error.ToString() + " x" + std::to_string(changes));
    });
    return writer;
  }

  void RunUntilIdle() {
    io_.restart();
    while (io_.poll() > 0) {
    }
  }

  // Moves the clock and lets the writer retry what is due, as its timer would.
  void Advance(StoreWriter& writer, Millis d) {
    clock_.Advance(d);
    writer.Poke();
    RunUntilIdle();
  }

  static storage::StateChange Lease() { return {.to = DeliveryState::kInFlight, .at_ms = kT0 + 1}; }
  static storage::StateChange Deliver() {
    return {.to = DeliveryState::kDelivered, .at_ms = kT0 + 2};
  }

  FakeClock clock_;
  asio::io_context io_;
  storage::MemoryQueueStore store_;
  std::vector<std::string> ids_;
  std::vector<std::string> retries_;
};

// Verifies that a write that failed is written again after its back-off (doubling, capped) and
// not before, that its `done` runs once, with the stored result, and that a change submitted
// meanwhile waits and goes after it.
TEST_F(StoreWriterRetryTest, FailedWriteIsRetriedAfterItsBackOff) {
  auto writer = Writer(true);
  store_.FailApplies({.status = Status::IoError("disk gone"), .times = 3});
  std::vector<std::string> done;
  auto record = [&](Result<Delivery> d) {
    ASSERT_TRUE(d.has_value()) << d.error().ToString();
    done.push_back(d->id);
  };
  writer->Submit(ids_[0], Lease(), record);
  RunUntilIdle();
  EXPECT_TRUE(done.empty());
  EXPECT_TRUE(writer->retrying());
  EXPECT_EQ(retries_, std::vector<std::string>{"IoError: disk gone x1"});
  writer->Submit(ids_[1], Lease(), record);
  RunUntilIdle();
  EXPECT_EQ(writer->pending(), 2u);
  EXPECT_EQ(store_.apply_batches(), 1u);  // nothing is written during the back-off
  Advance(*writer, Millis(199));
  EXPECT_EQ(store_.apply_batches(), 1u);
  Advance(*writer, Millis(1));  // 200 ms: fails again, then waits 300 ms (the cap, not 400)
  EXPECT_EQ(retries_.size(), 2u);
  EXPECT_EQ(retries_.back(), "IoError: disk gone x2");
  Advance(*writer, Millis(299));
  EXPECT_EQ(retries_.size(), 2u);
  Advance(*writer, Millis(1));  // the third failure
  Advance(*writer, Millis(300));
  EXPECT_EQ(done, ids_);
  EXPECT_FALSE(writer->retrying());
  EXPECT_EQ(writer->pending(), 0u);
  for (const std::string& id : ids_) {
    EXPECT_EQ(store_.Get(id)->state, DeliveryState::kInFlight);
  }
}

// Verifies that a change the store refuses on its own for good (here: an illegal transition)
// goes to `done` at once, while its batch's passing failures are retried.
TEST_F(StoreWriterRetryTest, RefusedChangeIsNotRetried) {
  auto writer = Writer(true);
  std::vector<Status> results;
  writer->Submit(ids_[0], Deliver(),
                 [&](Result<Delivery> d) { results.push_back(d ? Status::Ok() : d.error()); });
  RunUntilIdle();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].code(), Status::Code::kFailedPrecondition) << results[0].ToString();
  EXPECT_FALSE(writer->retrying());
  EXPECT_TRUE(retries_.empty());
}

// Verifies that RetryNow writes what waits without waiting for the back-off (the store said it
// recovered), and that a writer without retries hands the failure to `done`.
TEST_F(StoreWriterRetryTest, RetryNowSkipsTheBackOffAndNoRetryReportsTheFailure) {
  auto writer = Writer(true);
  store_.MakeUnhealthy("no_space");
  bool written = false;
  writer->Submit(ids_[0], Lease(), [&](Result<Delivery> d) { written = d.has_value(); });
  RunUntilIdle();
  EXPECT_TRUE(writer->retrying());
  ASSERT_TRUE(store_.Recover().ok());
  writer->RetryNow();
  RunUntilIdle();
  EXPECT_TRUE(written);

  auto plain = Writer(false);
  store_.MakeUnhealthy("no_space");
  Status failed;
  plain->Submit(ids_[1], Lease(),
                [&](Result<Delivery> d) { failed = d ? Status::Ok() : d.error(); });
  RunUntilIdle();
  EXPECT_EQ(failed.code(), Status::Code::kUnavailable) << failed.ToString();
  EXPECT_FALSE(plain->retrying());
  EXPECT_EQ(plain->pending(), 0u);
}

}  // namespace
}  // namespace egress::service
