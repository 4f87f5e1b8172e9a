#include "adapters/dynamodb_learned_budgets.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace egress::adapters {
namespace {

using pacing::LearnedUpdate;

}  // namespace

DynamoDbLearnedBudgets::DynamoDbLearnedBudgets(boost::asio::io_context& io, DynamoDbClient& client,
                                               const Clock& clock, std::string key_prefix,
                                               std::string instance, Millis poll_interval,
                                               Apply apply)
    : PollingLearnedShare(io, poll_interval, std::move(apply)),
      client_(client),
      clock_(clock),
      log_(client, clock,
           {.name = key_prefix + "learned:",
            .ring = kRing,
            .ttl = kTtl,
            .max_text_bytes = 128 + 1 + kUpdatesPerEntry * (kMaxLearnedUpdateBytes + 1)}),
      instance_(std::move(instance)) {
  log_.SetReplay(kRing);
}

void DynamoDbLearnedBudgets::Flush(std::vector<LearnedUpdate> updates) {
  for (size_t first = 0; first < updates.size(); first += kUpdatesPerEntry) {
    const size_t end = std::min(updates.size(), first + kUpdatesPerEntry);
    std::string text = instance_;
    for (size_t i = first; i < end; ++i) {
      text += '\n';
      text += EncodeLearnedUpdate(updates[i]);
    }
    const uint64_t count = end - first;
    counts_.published += count;
    std::weak_ptr<bool> alive = alive_;
    log_.Append(std::move(text), [this, alive, count](Result<int64_t> appended) {
      if (!alive.expired() && !appended) {
        counts_.dropped += count;
      }
    });
  }
}

void DynamoDbLearnedBudgets::Read() {
  std::weak_ptr<bool> alive = alive_;
  log_.Read([this, alive](Result<DynamoDbLog::Batch> batch) {
    if (alive.expired()) {
      return;
    }
    if (!batch) {
      Arm(poll_interval());
      return;
    }
    counts_.rejected += static_cast<uint64_t>(batch->lost);
    for (const DynamoDbLog::Entry& entry : batch->entries) {
      if (!Consume(entry)) {
        return;
      }
    }
    // More waiting: read on at once (each read is a round trip).
    Arm(batch->more ? Millis(0) : poll_interval());
  });
}

bool DynamoDbLearnedBudgets::Consume(const DynamoDbLog::Entry& entry) {
  std::string_view text = entry.text;
  const size_t newline = text.find('\n');
  if (newline == std::string_view::npos) {
    ++counts_.rejected;
    return true;
  }
  if (text.substr(0, newline) == instance_) {
    return true;  // this instance's own
  }
  const int64_t now_ms = ToUnixMillis(clock_.WallNow());
  const Millis age(std::max<int64_t>(0, now_ms - entry.written_ms));
  if (age > kTtl) {
    return true;  // older than what a node may apply
  }
  text.remove_prefix(newline + 1);
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    Result<LearnedUpdate> update = DecodeLearnedUpdate(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
    if (!update) {
      ++counts_.rejected;
      continue;
    }
    if (!ApplyUpdate(*update, age)) {
      return false;
    }
  }
  return true;
}

}  // namespace egress::adapters
