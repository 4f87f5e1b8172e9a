#pragma once

#include <cstdint>

namespace egress {

// A source of randomness, injected where jitter is drawn (Envoy RandomGenerator). Tests use
// FakeRandom (tests/support/fake_random.h). Not thread-safe: one per loop.
class Random {
 public:
  virtual ~Random() = default;
  // A uniformly distributed 64-bit value.
  virtual uint64_t Next() = 0;
};

// splitmix64: fast, small, good enough for jitter (not for secrets).
class SplitMixRandom final : public Random {
 public:
  explicit SplitMixRandom(uint64_t seed) : state_(seed) {}
  uint64_t Next() override;

 private:
  uint64_t state_;
};

}  // namespace egress
