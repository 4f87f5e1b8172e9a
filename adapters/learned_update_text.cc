#include "adapters/learned_update_text.h"

#include <charconv>

#include <fmt/format.h>

namespace egress::adapters {
namespace {

using pacing::LearnedUpdate;

// Splits on single spaces; at most `max` fields (more: returns max + 1 so the caller refuses).
std::vector<std::string_view> Fields(std::string_view text, size_t max) {
  std::vector<std::string_view> out;
  while (out.size() <= max) {
    const size_t space = text.find(' ');
    out.push_back(text.substr(0, space));
    if (space == std::string_view::npos) {
      break;
    }
    text.remove_prefix(space + 1);
  }
  return out;
}

bool ParseInt(std::string_view text, int64_t low, int64_t high, int64_t& value) {
  if (text.empty() || text.size() > 19) {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value >= low && value <= high;
}

bool ParseKey(std::string_view text, uint64_t& key) {
  if (text.size() != 16) {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), key, 16);
  return ec == std::errc() && end == text.data() + text.size();
}

bool ParseFlag(std::string_view text, bool& flag) {
  if (text != "0" && text != "1") {
    return false;
  }
  flag = text == "1";
  return true;
}

}  // namespace

std::string EncodeLearnedUpdate(const LearnedUpdate& u) {
  switch (u.kind) {
    case LearnedUpdate::Kind::kBudget:
      return fmt::format("b {:016x} {} {} {} {} {} {}", u.key, u.budget.limit, u.budget.scale_ms,
                         u.budget.burst, u.adaptive ? 1 : 0, u.probing ? 1 : 0, u.hold.count());
    case LearnedUpdate::Kind::kForget:
      return fmt::format("f {:016x}", u.key);
    case LearnedUpdate::Kind::kDiscordBucket:
      return fmt::format("d {:016x} {:016x}", u.key, u.bucket);
  }
  return "";
}

Result<LearnedUpdate> DecodeLearnedUpdate(std::string_view text) {
  if (text.size() > kMaxLearnedUpdateBytes) {
    return Status::InvalidArgument("learned update too long");
  }
  const std::vector<std::string_view> f = Fields(text, 8);
  LearnedUpdate u;
  if (f[0] == "b" && f.size() == 8) {
    u.kind = LearnedUpdate::Kind::kBudget;
    int64_t hold = 0;
    if (!ParseKey(f[1], u.key)) {
      return Status::InvalidArgument("learned update: bad key");
    }
    if (!ParseInt(f[2], 1, pacing::kMaxBudgetLimit, u.budget.limit) ||
        !ParseInt(f[3], 1, pacing::kMaxBudgetScaleMs, u.budget.scale_ms) ||
        !ParseInt(f[4], 1, pacing::kMaxBudgetBurst, u.budget.burst)) {
      return Status::InvalidArgument("learned update: budget out of range");
    }
    if (!ParseFlag(f[5], u.adaptive) || !ParseFlag(f[6], u.probing)) {
      return Status::InvalidArgument("learned update: bad flag");
    }
    if (!ParseInt(f[7], 0, pacing::kLearnedTtl.count(), hold)) {
      return Status::InvalidArgument("learned update: hold out of range");
    }
    u.hold = Millis(hold);
    return u;
  }
  if (f[0] == "f" && f.size() == 2) {
    u.kind = LearnedUpdate::Kind::kForget;
    if (!ParseKey(f[1], u.key)) {
      return Status::InvalidArgument("learned update: bad key");
    }
    return u;
  }
  if (f[0] == "d" && f.size() == 3) {
    u.kind = LearnedUpdate::Kind::kDiscordBucket;
    if (!ParseKey(f[1], u.key) || !ParseKey(f[2], u.bucket)) {
      return Status::InvalidArgument("learned update: bad key");
    }
    return u;
  }
  return Status::InvalidArgument("learned update: unknown shape");
}

bool LearnedUpdateBatch::Keep(const LearnedUpdate& update) {
  const std::pair<bool, pacing::ScopeKey> key{update.kind == LearnedUpdate::Kind::kDiscordBucket,
                                              update.key};
  if (auto it = index_.find(key); it != index_.end()) {
    updates_[it->second] = update;
    return true;
  }
  if (updates_.size() >= max_) {
    return false;
  }
  index_.emplace(key, updates_.size());
  updates_.push_back(update);
  return true;
}

std::vector<LearnedUpdate> LearnedUpdateBatch::Take() {
  std::vector<LearnedUpdate> out = std::move(updates_);
  updates_.clear();
  index_.clear();
  return out;
}

}  // namespace egress::adapters
