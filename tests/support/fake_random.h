#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dispatcher/base/random.h"

namespace egress {

// Returns scripted values in a cycle (or `value` forever) and counts draws.
class FakeRandom final : public Random {
 public:
  explicit FakeRandom(uint64_t value = 0) : values_{value} {}
  explicit FakeRandom(std::vector<uint64_t> values) : values_(std::move(values)) {}

  uint64_t Next() override {
    uint64_t v = values_[draws_ % values_.size()];
    ++draws_;
    return v;
  }
  size_t draws() const { return draws_; }

 private:
  std::vector<uint64_t> values_;
  size_t draws_ = 0;
};

}  // namespace egress
