#pragma once

#include <functional>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "dispatcher/base/clock.h"
#include "dispatcher/service/metrics.h"
#include "storage/queue_store.h"

namespace egress::service {

// Watches whether the store takes writes (QueueStore::Health) and gets it going again: while
// healthy it looks every `check_every`; once unhealthy it logs the fault (RocksDB's text, for
// the operator), sets relay_egress_store_healthy to 0, tells `on_change(false)`, and calls
// QueueStore::Recover on the storage pool after `first_retry`, doubling up to `max_retry`
// while it fails; when Recover succeeds it logs the recovery, sets the gauge to 1 and tells
// `on_change(true)`. GET /readyz answers 503 while healthy() is false.
//
// Runs on the loop (`io`); Recover runs on `storage` and posts back. Everything passed in must
// outlive the monitor's last pool job: the owner joins the pool before destroying the store,
// and nothing reaches a destroyed monitor (its handlers hold a liveness flag).
class StoreHealthMonitor {
 public:
  struct Options {
    Millis check_every{1000};  // Default: 1 s.
    Millis first_retry{500};   // Default: 0.5 s.
    Millis max_retry{8000};    // Default: 8 s.
  };

  StoreHealthMonitor(boost::asio::io_context& io, boost::asio::any_io_executor storage,
                     storage::QueueStore& store, Metrics& metrics,
                     std::function<void(bool healthy)> on_change, Options options);
  ~StoreHealthMonitor();
  StoreHealthMonitor(const StoreHealthMonitor&) = delete;
  StoreHealthMonitor& operator=(const StoreHealthMonitor&) = delete;

  // Sets the gauge to 1 and starts looking.
  void Start();
  // Stops looking and recovering (shutdown); a Recover on the pool finishes unseen.
  void Stop();
  // Looks now rather than at the next tick (a write just failed).
  void Check();

  bool healthy() const { return healthy_; }
  // The fault while unhealthy (reason and during are safe to show; detail is not).
  const storage::StoreHealth& health() const { return health_; }

 private:
  void Arm(Millis after);
  void Recover();

  boost::asio::io_context& io_;
  boost::asio::any_io_executor storage_;
  storage::QueueStore& store_;
  Metrics& metrics_;
  std::function<void(bool)> on_change_;
  const Options options_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<bool> alive_;
  bool stopped_ = false;
  bool healthy_ = true;
  bool recovering_ = false;  // a Recover is on the pool
  Millis backoff_{0};
  storage::StoreHealth health_;
};

}  // namespace egress::service
