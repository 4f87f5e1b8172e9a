#pragma once

#include <string>
#include <string_view>

namespace egress::adapters {

// One Lua script of the Redis budget store and its SHA-1 (for EVALSHA).
struct RedisScript {
  std::string_view text;
  std::string sha1;  // lowercase hex
};

// The scripts of RedisBudgetBackend (docs/pacing.md, "Shared budgets"). Each is atomic in Redis
// and takes its time from Redis TIME unless its `now_us` argument is given (tests). Times and
// intervals are whole microseconds: a Lua number holds integers exactly only up to 2^53, which
// nanoseconds since the epoch pass. Every key written gets a PEXPIRE for when it is idle again.
//
// take:    KEYS meter_1..n, park_1..n; ARGV n, now_us, then interval_us depth cost per scope.
//          Parks first (the first parked scope denies), then every meter with cost > 0 (the
//          longest wait denies), then SET all or none. Returns {allowed, denied_index, wait_us,
//          park_kind, remaining, reset_after_us}.
// park:    KEYS park; ARGV wait_us kind now_us. The later park wins.
// unpark:  KEYS park.
// rescale: KEYS meter; ARGV from_interval_us to_interval_us now_us.
// sync:    KEYS meter; ARGV interval_us depth available now_us.
// inspect: KEYS meter park; ARGV interval_us depth now_us. Returns {remaining, reset_after_us,
//          parked_for_us, park_kind}.
const RedisScript& TakeScript();
const RedisScript& ParkScript();
const RedisScript& UnparkScript();
const RedisScript& RescaleScript();
const RedisScript& SyncScript();
const RedisScript& InspectScript();

}  // namespace egress::adapters
