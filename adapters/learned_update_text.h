#pragma once

// The text of a pacing::LearnedUpdate as the shares store it (RedisLearnedBudgets,
// DynamoDbLearnedBudgets), and the latest-per-key batch a node keeps between polls.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dispatcher/base/result.h"
#include "dispatcher/pacing/learned_share.h"

namespace egress::adapters {

// The longest text Encode writes (and Decode reads).
inline constexpr size_t kMaxLearnedUpdateBytes = 160;

// E.g. "b 00ab..ef 5 5000 5 0 0 0" (budget: key, limit, scale_ms, burst, adaptive, probing,
// hold_ms), "f <key>" (forget), "d <route> <bucket>".
std::string EncodeLearnedUpdate(const pacing::LearnedUpdate& update);
// The inverse; kInvalidArgument naming the field for anything else (numbers out of range
// included).
Result<pacing::LearnedUpdate> DecodeLearnedUpdate(std::string_view text);

// Updates waiting for a share's next poll: the latest per (is a bucket, key), at most `max` keys
// (an update for a new key beyond that is dropped and counted).
class LearnedUpdateBatch {
 public:
  explicit LearnedUpdateBatch(size_t max) : max_(max) {}

  // Keeps `update`, replacing one kept for the same key; false when it was dropped.
  bool Keep(const pacing::LearnedUpdate& update);
  // Hands out what was kept, in the order the keys first came, and starts empty.
  std::vector<pacing::LearnedUpdate> Take();
  size_t size() const { return updates_.size(); }
  bool empty() const { return updates_.empty(); }

 private:
  size_t max_;
  std::vector<pacing::LearnedUpdate> updates_;
  std::map<std::pair<bool, pacing::ScopeKey>, size_t> index_;
};

}  // namespace egress::adapters
