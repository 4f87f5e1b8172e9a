#include "dispatcher/service/api/auth_failure_limiter.h"

#include <algorithm>

#include <boost/asio/ip/address_v6.hpp>

namespace egress::service {

AuthFailureLimiter::AuthFailureLimiter(const Clock& clock, pacing::Budget budget,
                                       size_t max_sources)
    : clock_(clock),
      params_(pacing::GcraParams::FromBudget(budget)),
      max_sources_(std::max<size_t>(1, max_sources)) {}

std::string AuthFailureLimiter::SourceOf(const boost::asio::ip::address& peer) {
  if (peer.is_v4()) {
    return peer.to_v4().to_string();
  }
  boost::asio::ip::address_v6 v6 = peer.to_v6();
  if (v6.is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).to_string();
  }
  boost::asio::ip::address_v6::bytes_type bytes = v6.to_bytes();
  std::fill(bytes.begin() + 8, bytes.end(), 0);
  return boost::asio::ip::address_v6(bytes).to_string() + "/64";
}

Millis AuthFailureLimiter::Blocked(const boost::asio::ip::address& peer) const {
  auto it = tat_of_.find(SourceOf(peer));
  if (it == tat_of_.end()) {
    return Millis(0);
  }
  const pacing::GcraDecision d =
      pacing::GcraEvaluate(it->second, params_, 1, pacing::ToNanos(clock_.Now()));
  if (d.allowed) {
    return Millis(0);
  }
  // Rounded up: a wait of 0.4 ms is still a wait.
  return std::chrono::ceil<Millis>(d.retry_after);
}

void AuthFailureLimiter::Fail(const boost::asio::ip::address& peer) {
  const std::string source = SourceOf(peer);
  const int64_t now_ns = pacing::ToNanos(clock_.Now());
  auto it = tat_of_.find(source);
  const int64_t tat = it == tat_of_.end() ? 0 : it->second;
  const pacing::GcraDecision d = pacing::GcraEvaluate(tat, params_, 1, now_ns);
  if (!d.allowed) {
    return;  // full already: the source is refused until the meter drains
  }
  if (it != tat_of_.end()) {
    Forget(source);
  }
  while (tat_of_.size() >= max_sources_) {
    const std::string oldest = by_tat_.begin()->second;
    Forget(oldest);
  }
  tat_of_[source] = d.tat_ns;
  by_tat_.emplace(d.tat_ns, source);
}

void AuthFailureLimiter::Forget(const std::string& source) {
  auto it = tat_of_.find(source);
  if (it == tat_of_.end()) {
    return;
  }
  by_tat_.erase({it->second, source});
  tat_of_.erase(it);
}

}  // namespace egress::service
