#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <boost/asio/ip/address.hpp>

#include "dispatcher/base/clock.h"
#include "dispatcher/pacing/budget.h"
#include "dispatcher/pacing/gcra_meter.h"

namespace egress::service {

// The brute-force rule (server.auth_failure_budget): failed authentications are metered per
// source with GCRA; a source whose meter is full is refused (the API answers 429 with
// Retry-After) until the meter lets one more through. A source is an IPv4 address, or the /64
// prefix of an IPv6 address (one host usually holds a whole /64). At most `max_sources` sources
// are remembered; past that the one closest to an empty meter is forgotten first, so memory is
// bounded whatever the number of addresses. Loop thread only.
class AuthFailureLimiter {
 public:
  // `budget`: failures allowed per scale_ms, with a burst of budget.burst.
  AuthFailureLimiter(const Clock& clock, pacing::Budget budget, size_t max_sources = 10'000);

  // Zero when `peer` may try now; else the wait until it may.
  Millis Blocked(const boost::asio::ip::address& peer) const;
  // Counts one failed attempt of `peer`.
  void Fail(const boost::asio::ip::address& peer);
  // Sources remembered now.
  size_t size() const { return tat_of_.size(); }

  // The source `peer` is metered as: "a.b.c.d" or "x:x:x:x::/64".
  static std::string SourceOf(const boost::asio::ip::address& peer);

 private:
  void Forget(const std::string& source);

  const Clock& clock_;
  pacing::GcraParams params_;
  size_t max_sources_;
  std::map<std::string, int64_t> tat_of_;             // source -> theoretical arrival time
  std::set<std::pair<int64_t, std::string>> by_tat_;  // the same, oldest tat first
};

}  // namespace egress::service
