#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace egress::storage {

// Makes delivery ids: 26-character ULID-shaped strings (Crockford base32 of 128 bits: 48-bit
// Unix ms, a 16-bit counter within the millisecond, 64 random bits). Ids from one generator are
// strictly increasing as strings, even when the clock stalls or steps back, so they sort in
// enqueue order, and so do their top 64 bits (DeliveryIdSequence). Thread-safe.
class DeliveryIdGenerator {
 public:
  // `seed` feeds the random part. `floor`, when not empty, is an id every new id must exceed
  // (the newest id already stored).
  DeliveryIdGenerator(uint64_t seed, std::string_view floor);

  std::string Next(int64_t now_ms);

 private:
  uint64_t NextRandom();

  std::mutex mu_;
  uint64_t rng_state_;
  int64_t last_ms_ = 0;
  uint16_t counter_ = 0;  // ids made in last_ms_, minus one
};

// True when `id` has the shape of a delivery id (26 Crockford base32 characters).
bool IsDeliveryId(std::string_view id);

// The Unix ms encoded in a delivery id, or -1 when it is not one.
int64_t DeliveryIdMillis(std::string_view id);

// The smallest id that can be minted at `ms` (clamped to the 48-bit range). A generator never
// mints an id older than the `now_ms` it is given, so every delivery created at or after `ms`
// has an id >= this: a lower bound to seek to.
std::string DeliveryIdFloor(int64_t ms);

// The id's top 64 bits (ms and counter): ordered like the ids themselves. 0 when not an id.
uint64_t DeliveryIdSequence(std::string_view id);

}  // namespace egress::storage
