#include "dispatcher/service/store_health_monitor.h"

#include <algorithm>

#include <boost/asio/post.hpp>

#include "dispatcher/service/event_log.h"

namespace egress::service {

namespace asio = boost::asio;

StoreHealthMonitor::StoreHealthMonitor(asio::io_context& io, asio::any_io_executor storage,
                                       storage::QueueStore& store, Metrics& metrics,
                                       std::function<void(bool healthy)> on_change, Options options)
    : io_(io),
      storage_(std::move(storage)),
      store_(store),
      metrics_(metrics),
      on_change_(std::move(on_change)),
      options_(options),
      timer_(io),
      alive_(std::make_shared<bool>(true)) {}

StoreHealthMonitor::~StoreHealthMonitor() { *alive_ = false; }

void StoreHealthMonitor::Start() {
  metrics_.Set(GaugeId::kStoreHealthy, {}, 1);
  Check();
}

void StoreHealthMonitor::Stop() {
  stopped_ = true;
  timer_.cancel();
}

void StoreHealthMonitor::Arm(Millis after) {
  timer_.expires_after(after);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive || stopped_) {
      return;
    }
    if (healthy_) {
      Check();
    } else {
      Recover();
    }
  });
}

void StoreHealthMonitor::Check() {
  if (stopped_ || !healthy_) {
    return;  // while unhealthy, Recover's attempts look
  }
  storage::StoreHealth h = store_.Health();
  if (h.healthy) {
    Arm(options_.check_every);
    return;
  }
  healthy_ = false;
  health_ = std::move(h);
  metrics_.Set(GaugeId::kStoreHealthy, {}, 0);
  LogEvent(LogLevel::kError, "store_unhealthy",
           {{"reason", health_.reason}, {"during", health_.during}, {"error", health_.detail}});
  if (on_change_) {
    on_change_(false);
  }
  backoff_ = options_.first_retry;
  Arm(backoff_);
}

void StoreHealthMonitor::Recover() {
  if (recovering_) {
    return;
  }
  recovering_ = true;
  asio::post(storage_, [this, &store = store_, &io = io_, alive = alive_] {
    Status recovered = store.Recover();
    storage::StoreHealth now = store.Health();
    asio::post(io, [this, alive, recovered = std::move(recovered), now = std::move(now)] {
      if (!*alive) {
        return;
      }
      recovering_ = false;
      if (stopped_) {
        return;
      }
      if (recovered.ok() && now.healthy) {
        healthy_ = true;
        health_ = storage::StoreHealth{};
        backoff_ = Millis(0);
        metrics_.Set(GaugeId::kStoreHealthy, {}, 1);
        LogEvent(LogLevel::kInfo, "store_recovered");
        if (on_change_) {
          on_change_(true);
        }
        Arm(options_.check_every);
        return;
      }
      if (!now.healthy) {
        health_ = now;  // the newest fault: readyz names it
      }
      backoff_ = std::min(backoff_ * 2, options_.max_retry);
      LogEvent(LogLevel::kWarn, "store_recover_failed",
               {{"error", recovered.ToString()}, {"retry_in_ms", backoff_.count()}});
      Arm(backoff_);
    });
  });
}

}  // namespace egress::service
