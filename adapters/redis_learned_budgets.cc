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

bool ParseInt(std::string_view text, int64_t low, int64_t high, int64_t& value) {
  if (text.empty() || text.size() > 19) {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value >= low && value <= high;
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
    : PollingLearnedShare(io, poll_interval, std::move(apply)),
      connection_(connection),
      stream_(key_prefix + "learned"),
      instance_(std::move(instance)) {}

void RedisLearnedBudgets::Flush(std::vector<LearnedUpdate> updates) {
  std::vector<std::string> argv{"EVAL",
                                kPublishScript,
                                "1",
                                stream_,
                                instance_,
                                std::to_string(kMaxEntries),
                                std::to_string(kTtl.count())};
  argv.reserve(argv.size() + updates.size());
  for (const LearnedUpdate& update : updates) {
    argv.push_back(EncodeLearnedUpdate(update));
  }
  const uint64_t count = updates.size();
  counts_.published += count;
  std::weak_ptr<bool> alive = alive_;
  connection_.Command(std::move(argv), [this, alive, count](Result<RedisReply> reply) {
    if (alive.expired()) {
      return;
    }
    if (!reply || reply->type != RedisReply::Type::kInteger) {
      counts_.dropped += count;
    }
  });
}

void RedisLearnedBudgets::Read() {
  std::weak_ptr<bool> alive = alive_;
  connection_.Command({"EVAL", kReadScript, "1", stream_, last_id_, std::to_string(kReadCount),
                       std::to_string(kTtl.count()), std::to_string(kMaxLearnedUpdateBytes)},
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
                        Arm(read >= kReadCount ? Millis(0) : poll_interval());
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
    ++counts_.rejected;
    return -1;
  }
  if (!reply.elements[1].text.empty()) {
    last_id_ = reply.elements[1].text;
  }
  const auto& entries = reply.elements[2].elements;
  for (const RedisReply& entry : entries) {
    int64_t id_ms = 0;
    if (entry.type != Type::kArray || entry.elements.size() != 3 ||
        entry.elements[0].type != Type::kString || entry.elements[1].type != Type::kString ||
        entry.elements[2].type != Type::kString || !ValidStreamId(entry.elements[0].text) ||
        !ParseInt(
            std::string_view(entry.elements[0].text).substr(0, entry.elements[0].text.find('-')), 0,
            INT64_MAX / 2, id_ms)) {
      ++counts_.rejected;
      continue;
    }
    if (entry.elements[1].text == instance_) {
      continue;  // this instance's own
    }
    Result<LearnedUpdate> update = DecodeLearnedUpdate(entry.elements[2].text);
    if (!update) {
      ++counts_.rejected;
      continue;
    }
    if (!ApplyUpdate(*update, Millis(std::max<int64_t>(0, now_ms - id_ms)))) {
      return static_cast<int64_t>(entries.size());
    }
  }
  return static_cast<int64_t>(entries.size());
}

}  // namespace egress::adapters
