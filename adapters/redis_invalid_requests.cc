#include "adapters/redis_invalid_requests.h"

#include <algorithm>
#include <utility>

namespace egress::adapters {
namespace {

// ARGV: slot length in ms, slots in the window. Counts one in the current slot (Redis TIME, so
// that every node agrees on the slot), drops slots out of the window, returns age, count pairs.
constexpr char kAddScript[] =
    "local t = redis.call('TIME')\n"
    "local slot_ms = tonumber(ARGV[1])\n"
    "local slots = tonumber(ARGV[2])\n"
    "local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local current = math.floor(now_ms / slot_ms)\n"
    "redis.call('HINCRBY', KEYS[1], tostring(current), 1)\n"
    "local all = redis.call('HGETALL', KEYS[1])\n"
    "local out = {}\n"
    "for i = 1, #all, 2 do\n"
    "  local age = current - (tonumber(all[i]) or -1)\n"
    "  if age < 0 or age >= slots then\n"
    "    redis.call('HDEL', KEYS[1], all[i])\n"
    "  else\n"
    "    out[#out + 1] = age\n"
    "    out[#out + 1] = tonumber(all[i + 1]) or 0\n"
    "  end\n"
    "end\n"
    "redis.call('PEXPIRE', KEYS[1], slot_ms * (slots + 1))\n"
    "return out\n";

}  // namespace

RedisInvalidRequests::RedisInvalidRequests(RedisConnection& connection, std::string key_prefix,
                                           Millis window)
    : connection_(connection),
      prefix_(std::move(key_prefix) + "discord_invalid:"),
      slot_ms_(std::max<int64_t>(1, window.count() / InvalidRequestCounter::kSlots)) {}

void RedisInvalidRequests::Add(const std::string& token_key, Done done) {
  connection_.Command(
      {"EVAL", kAddScript, "1", prefix_ + token_key, std::to_string(slot_ms_),
       std::to_string(InvalidRequestCounter::kSlots)},
      [done = std::move(done)](Result<RedisReply> reply) {
        if (!reply) {
          done(reply.error());
          return;
        }
        const auto& e = reply->elements;
        // At most one pair per slot, of integers: anything else is not this script's answer.
        if (reply->type != RedisReply::Type::kArray || e.size() % 2 != 0 ||
            e.size() > 2 * static_cast<size_t>(InvalidRequestCounter::kSlots) ||
            std::any_of(e.begin(), e.end(),
                        [](const RedisReply& r) { return r.type != RedisReply::Type::kInteger; })) {
          done(Status::Unavailable("redis answered the invalid-request count wrongly"));
          return;
        }
        SlotCounts slots;
        slots.reserve(e.size() / 2);
        for (size_t i = 0; i < e.size(); i += 2) {
          slots.push_back({e[i].integer, e[i + 1].integer});
        }
        done(std::move(slots));
      });
}

}  // namespace egress::adapters
