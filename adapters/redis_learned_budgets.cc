#include "adapters/redis_learned_budgets.h"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace egress::adapters {
namespace {

using pacing::LearnedUpdate;

// Appends each update (ARGV[4..], from instance ARGV[1]), trims by count (ARGV[2]) and by age
// (ARGV[3] ms, on Redis' clock), and lets the stream expire when no node writes for that long.
// Redis 7 replicates a script's effects, so TIME and an id of '*' are allowed here.
constexpr char kPublishScript[] =
    "local t = redis.call('TIME')\n"
    "local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "for i = 4, #ARGV do\n"
    "  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'n', ARGV[1], 'u', ARGV[i])\n"
    "end\n"
    "redis.call('XTRIM', KEYS[1], 'MINID', '~', tostring(now_ms - tonumber(ARGV[3])))\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[3])\n"
    "return 1\n";

// Reads up to ARGV[2] entries after id ARGV[1] (from ARGV[3] ms ago when ARGV[1] is empty) and
// answers {now_ms, last id read, {{id, n, u}, ...}}, a field over ARGV[4] bytes answered as "".
// Whatever the stream holds, the answer stays small and the last id moves past every entry.
constexpr char kReadScript[] =
    "local t = redis.call('TIME')\n"
    "local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "if redis.call('TYPE', KEYS[1]).ok ~= 'stream' then\n"
    "  return {tostring(now_ms), ARGV[1], {}}\n"
    "end\n"
    "local start = '(' .. ARGV[1]\n"
    "if ARGV[1] == '' then\n"
    "  start = tostring(math.max(0, now_ms - tonumber(ARGV[3]))) .. '-0'\n"
    "end\n"
    "local entries = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', ARGV[2])\n"
    "local max = tonumber(ARGV[4])\n"
    "local out = {}\n"
    "local last = ARGV[1]\n"
    "for _, e in ipairs(entries) do\n"
    "  last = e[1]\n"
    "  local n, u, f = '', '', e[2]\n"
    "  for j = 1, math.min(#f, 8) - 1, 2 do\n"
    "    if f[j] == 'n' and #f[j + 1] <= max then n = f[j + 1] end\n"
    "    if f[j] == 'u' and #f[j + 1] <= max then u = f[j + 1] end\n"
    "  end\n"
    "  out[#out + 1] = {e[1], n, u}\n"
    "end\n"
    "return {tostring(now_ms), last, out}\n";

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

// A stream entry id "<ms>-<seq>", both decimal.
bool ValidStreamId(std::string_view id) {
  const size_t dash = id.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size() || id.size() > 41) {
    return false;
  }
  for (size_t i = 0; i < id.size(); ++i) {
    if (i != dash && (id[i] < '0' || id[i] > '9')) {
      return false;
    }
  }
  return true;
}

}  // namespace

RedisLearnedBudgets::RedisLearnedBudgets(boost::asio::io_context& io, RedisConnection& connection,
                                         std::string key_prefix, std::string instance,
                                         Millis poll_interval, Apply apply)
    : timer_(io),
      connection_(connection),
      stream_(key_prefix + "learned"),
      instance_(std::move(instance)),
      poll_interval_(std::max(poll_interval, Millis(1))),
      apply_(std::move(apply)),
      alive_(std::make_shared<bool>(true)) {}

RedisLearnedBudgets::~RedisLearnedBudgets() { timer_.cancel(); }

void RedisLearnedBudgets::Start() { Arm(Millis(0)); }

std::string RedisLearnedBudgets::Encode(const LearnedUpdate& u) {
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

Result<LearnedUpdate> RedisLearnedBudgets::Decode(std::string_view text) {
  if (text.size() > kMaxEntryBytes) {
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
    if (!ParseInt(f[7], 0, kTtl.count(), hold)) {
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

void RedisLearnedBudgets::Publish(const LearnedUpdate& update) {
  const std::pair<bool, pacing::ScopeKey> key{update.kind == LearnedUpdate::Kind::kDiscordBucket,
                                              update.key};
  if (auto it = pending_index_.find(key); it != pending_index_.end()) {
    pending_[it->second] = update;
    return;
  }
  if (pending_.size() >= kMaxPending) {
    ++dropped_;
    return;
  }
  pending_index_.emplace(key, pending_.size());
  pending_.push_back(update);
}

void RedisLearnedBudgets::Arm(Millis wait) {
  timer_.expires_after(wait);
  std::weak_ptr<bool> alive = alive_;
  timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || alive.expired()) {
      return;
    }
    Poll();
  });
}

void RedisLearnedBudgets::Poll() {
  if (!connection_.up()) {
    dropped_ += pending_.size();
    pending_.clear();
    pending_index_.clear();
    Arm(poll_interval_);
    return;
  }
  Flush();
  Read();
}

void RedisLearnedBudgets::Flush() {
  if (pending_.empty()) {
    return;
  }
  std::vector<std::string> argv{"EVAL",
                                kPublishScript,
                                "1",
                                stream_,
                                instance_,
                                std::to_string(kMaxEntries),
                                std::to_string(kTtl.count())};
  argv.reserve(argv.size() + pending_.size());
  for (const LearnedUpdate& update : pending_) {
    argv.push_back(Encode(update));
  }
  const uint64_t count = pending_.size();
  pending_.clear();
  pending_index_.clear();
  published_ += count;
  std::weak_ptr<bool> alive = alive_;
  connection_.Command(std::move(argv), [this, alive, count](Result<RedisReply> reply) {
    if (alive.expired()) {
      return;
    }
    if (!reply || reply->type != RedisReply::Type::kInteger) {
      dropped_ += count;
    }
  });
}

void RedisLearnedBudgets::Read() {
  std::weak_ptr<bool> alive = alive_;
  connection_.Command({"EVAL", kReadScript, "1", stream_, last_id_, std::to_string(kReadCount),
                       std::to_string(kTtl.count()), std::to_string(kMaxEntryBytes)},
                      [this, alive](Result<RedisReply> reply) {
                        if (alive.expired()) {
                          return;
                        }
                        const int64_t read = reply ? Consume(*reply) : -1;
                        if (alive.expired()) {
                          return;
                        }
                        // A full batch: more are waiting, read on at once (each read is a
                        // round trip, and the stream holds at most about kMaxEntries).
                        Arm(read >= kReadCount ? Millis(0) : poll_interval_);
                      });
}

int64_t RedisLearnedBudgets::Consume(const RedisReply& reply) {
  // {now_ms, last id, {{id, n, u}, ...}}
  using Type = RedisReply::Type;
  int64_t now_ms = 0;
  if (reply.type != Type::kArray || reply.elements.size() != 3 ||
      reply.elements[0].type != Type::kString || reply.elements[1].type != Type::kString ||
      reply.elements[2].type != Type::kArray ||
      !ParseInt(reply.elements[0].text, 0, INT64_MAX / 2, now_ms) ||
      reply.elements[2].elements.size() > static_cast<size_t>(kReadCount) ||
      (!reply.elements[1].text.empty() && !ValidStreamId(reply.elements[1].text))) {
    ++rejected_;
    return -1;
  }
  if (!reply.elements[1].text.empty()) {
    last_id_ = reply.elements[1].text;
  }
  std::weak_ptr<bool> alive = alive_;
  const auto& entries = reply.elements[2].elements;
  for (const RedisReply& entry : entries) {
    int64_t id_ms = 0;
    if (entry.type != Type::kArray || entry.elements.size() != 3 ||
        entry.elements[0].type != Type::kString || entry.elements[1].type != Type::kString ||
        entry.elements[2].type != Type::kString || !ValidStreamId(entry.elements[0].text) ||
        !ParseInt(
            std::string_view(entry.elements[0].text).substr(0, entry.elements[0].text.find('-')), 0,
            INT64_MAX / 2, id_ms)) {
      ++rejected_;
      continue;
    }
    if (entry.elements[1].text == instance_) {
      continue;  // this instance's own
    }
    Result<LearnedUpdate> update = Decode(entry.elements[2].text);
    if (!update) {
      ++rejected_;
      continue;
    }
    ++applied_;
    apply_(*update, Millis(std::max<int64_t>(0, now_ms - id_ms)));
    if (alive.expired()) {
      return static_cast<int64_t>(entries.size());
    }
  }
  return static_cast<int64_t>(entries.size());
}

}  // namespace egress::adapters
