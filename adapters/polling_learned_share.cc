#include "adapters/polling_learned_share.h"

#include <algorithm>
#include <utility>

namespace egress::adapters {

PollingLearnedShare::PollingLearnedShare(boost::asio::io_context& io, Millis poll_interval,
                                         Apply apply)
    : alive_(std::make_shared<bool>(true)),
      timer_(io),
      poll_interval_(std::max(poll_interval, Millis(1))),
      apply_(std::move(apply)),
      pending_(kMaxPending) {}

PollingLearnedShare::~PollingLearnedShare() { timer_.cancel(); }

void PollingLearnedShare::Publish(const pacing::LearnedUpdate& update) {
  if (!pending_.Keep(update)) {
    ++counts_.dropped;
  }
}

void PollingLearnedShare::Arm(Millis wait) {
  timer_.expires_after(wait);
  std::weak_ptr<bool> alive = alive_;
  timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) {
      return;
    }
    Poll();
  });
}

void PollingLearnedShare::Poll() {
  if (!StoreUp()) {
    counts_.dropped += pending_.Take().size();
    Arm(poll_interval_);
    return;
  }
  if (!pending_.empty()) {
    Flush(pending_.Take());
  }
  Read();
}

bool PollingLearnedShare::ApplyUpdate(const pacing::LearnedUpdate& update, Millis age) {
  std::weak_ptr<bool> alive = alive_;
  ++counts_.applied;
  apply_(update, age);
  return !alive.expired();
}

}  // namespace egress::adapters
