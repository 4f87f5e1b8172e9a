#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "adapters/learned_update_text.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/learned_share.h"

namespace egress::adapters {

// What the two shares of learned updates (RedisLearnedBudgets, DynamoDbLearnedBudgets) have in
// common: the latest update per key kept between polls, the counts, and the poll. Every
// poll_interval, while the store is up, the subclass gets what was kept (Flush) and then reads
// what the other nodes wrote (Read), which ends by calling Arm with the wait before the next poll.
// While the store is down what was kept is dropped (counted): the other nodes learn from their
// own responses meanwhile.
//
// All methods and callbacks run on the loop of `io`; the timer and callbacks end with the object.
class PollingLearnedShare : public pacing::LearnedShare {
 public:
  static constexpr size_t kMaxPending = 4'096;
  static constexpr Millis kTtl = pacing::kLearnedTtl;
  using Apply = std::function<void(const pacing::LearnedUpdate&, Millis age)>;

  ~PollingLearnedShare() override;
  PollingLearnedShare(const PollingLearnedShare&) = delete;
  PollingLearnedShare& operator=(const PollingLearnedShare&) = delete;

  // Starts writing and reading; call once.
  void Start() { Arm(Millis(0)); }
  // Keeps `update` for the next poll, replacing one kept for the same key.
  void Publish(const pacing::LearnedUpdate& update) override;

  pacing::LearnedShareCounts counts() const override { return counts_; }
  uint64_t published() const { return counts_.published; }
  uint64_t dropped() const { return counts_.dropped; }
  uint64_t applied() const { return counts_.applied; }
  uint64_t rejected() const { return counts_.rejected; }

 protected:
  PollingLearnedShare(boost::asio::io_context& io, Millis poll_interval, Apply apply);

  virtual bool StoreUp() const = 0;
  // Writes `updates` (at least one) for the other nodes; counts what it loses as dropped.
  virtual void Flush(std::vector<pacing::LearnedUpdate> updates) = 0;
  // Reads what the other nodes wrote and hands it to ApplyUpdate; ends with Arm.
  virtual void Read() = 0;

  void Arm(Millis wait);
  // Hands another node's update to the Scheduler; false when this object was destroyed by it.
  bool ApplyUpdate(const pacing::LearnedUpdate& update, Millis age);
  Millis poll_interval() const { return poll_interval_; }

  pacing::LearnedShareCounts counts_;
  std::shared_ptr<bool> alive_;

 private:
  void Poll();

  boost::asio::steady_timer timer_;
  Millis poll_interval_;
  Apply apply_;
  LearnedUpdateBatch pending_;  // for the next poll
};

}  // namespace egress::adapters
