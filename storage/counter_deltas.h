#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "dispatcher/base/saturating.h"
#include "storage/string_view_hash.h"

namespace egress::storage {

// Counters by key, searched by view (no key string built for a counter already present).
using CounterMap = std::unordered_map<std::string, int64_t, StringViewHash, std::equal_to<>>;

// Counter changes of one write, netted per key (a -1 and a +1 on one key cancel out), in no
// particular order.
class CounterDeltas {
 public:
  void Add(std::string_view key, int64_t delta) {
    auto it = deltas_.find(key);
    if (it == deltas_.end()) {
      it = deltas_.emplace(std::string(key), 0).first;
    }
    it->second = SatAdd(it->second, delta);
  }
  const CounterMap& deltas() const { return deltas_; }

 private:
  CounterMap deltas_;
};

}  // namespace egress::storage
