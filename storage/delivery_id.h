#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace egress::storage {

// Makes delivery ids: 26-character ULIDs (48-bit Unix ms, 80 random bits, Crockford base32).
// Ids from one generator are strictly increasing as strings, even when the clock stalls or
// steps back, so they sort in enqueue order. Thread-safe.
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
  // The 80 random bits of the last id: hi_ holds 16, lo_ 64.
  uint16_t hi_ = 0;
  uint64_t lo_ = 0;
};

// True when `id` has the shape of a delivery id (26 Crockford base32 characters).
bool IsDeliveryId(std::string_view id);

// The Unix ms encoded in a delivery id, or -1 when it is not one.
int64_t DeliveryIdMillis(std::string_view id);

}  // namespace egress::storage
