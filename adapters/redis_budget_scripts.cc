#include "adapters/redis_budget_scripts.h"

#include <fmt/format.h>
#include <openssl/sha.h>

namespace egress::adapters {
namespace {

// Shared by every script: the clock, number formatting (Lua's tostring writes 1.7e+15) and the
// idle expiry.
#define EGRESS_LUA_PRELUDE                                                                     \
  "local function now_us(arg)\n"                                                               \
  "  if arg ~= nil and arg ~= '' then return tonumber(arg) end\n"                              \
  "  local t = redis.call('TIME')\n"                                                           \
  "  return tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                                       \
  "end\n"                                                                                      \
  "local function int(x) return string.format('%.0f', x) end\n"                                \
  "local LIMIT = 4503599627370496\n"                                                           \
  "local function put(key, value, now)\n"                                                      \
  "  if value > LIMIT then value = LIMIT end\n"                                                \
  "  local ttl = math.floor((value - now) / 1000) + 1000\n"                                    \
  "  if ttl < 1000 then ttl = 1000 end\n"                                                      \
  "  if ttl > 1000000000000 then ttl = 1000000000000 end\n"                                    \
  "  redis.call('SET', key, int(value), 'PX', int(ttl))\n"                                     \
  "end\n"                                                                                      \
  "local function remaining(tat, T, depth, now)\n"                                             \
  "  local base = math.max(tat, now)\n"                                                        \
  "  local room = math.floor((now - (base - depth * T)) / T)\n"                                \
  "  if room < 0 then return 0 end\n"                                                          \
  "  if room > depth then return math.max(0, depth) end\n"                                     \
  "  return room\n"                                                                            \
  "end\n"                                                                                      \
  "local function park_of(key)\n"                                                              \
  "  local v = redis.call('GET', key)\n"                                                       \
  "  if not v then return 0, 0 end\n"                                                          \
  "  local sep = string.find(v, ':', 1, true)\n"                                               \
  "  if not sep then return 0, 0 end\n"                                                        \
  "  return tonumber(string.sub(v, 1, sep - 1)) or 0, tonumber(string.sub(v, sep + 1)) or 0\n" \
  "end\n"

constexpr std::string_view kTake = EGRESS_LUA_PRELUDE
    "local n = tonumber(ARGV[1])\n"
    "local now = now_us(ARGV[2])\n"
    "local ahead = math.max(0, tonumber(ARGV[3]) or 0)\n"
    "for i = 1, n do\n"
    "  local untl, kind = park_of(KEYS[n + i])\n"
    "  if untl > now then return {0, i - 1, untl - now, kind, 0, 0} end\n"
    "end\n"
    "local allowed = true\n"
    "local denied, wait, go = 0, 0, 0\n"
    "local meters = {}\n"
    "for i = 1, n do\n"
    "  local T = tonumber(ARGV[4 + (i - 1) * 3])\n"
    "  local depth0 = tonumber(ARGV[5 + (i - 1) * 3])\n"
    "  local cost = tonumber(ARGV[6 + (i - 1) * 3])\n"
    "  if cost > 0 then\n"
    "    local tat = tonumber(redis.call('GET', KEYS[i]) or '0') or 0\n"
    "    local depth = math.max(depth0, cost)\n"
    "    local allow_at = math.max(tat, now) - (depth - cost) * T\n"
    "    if now + ahead < allow_at then\n"
    "      if allowed or allow_at - now > wait then\n"
    "        denied = i - 1\n"
    "        wait = allow_at - now\n"
    "      end\n"
    "      allowed = false\n"
    "    else\n"
    "      if allow_at - now > go then go = allow_at - now end\n"
    "      meters[i] = {T, depth0, cost, tat, allow_at}\n"
    "    end\n"
    "  end\n"
    "end\n"
    "if not allowed then return {0, denied, wait, 0, 0, 0} end\n"
    "-- The units go at `at` (when the last meter conforms). A meter that conforms earlier is\n"
    "-- charged no earlier than its slice's own time (cost * T) before then, so no meter counts\n"
    "-- a unit much earlier than it is sent (and none is pushed much past its own time).\n"
    "local at = now + go\n"
    "local rem, reset = -1, 0\n"
    "for i = 1, n do\n"
    "  local m = meters[i]\n"
    "  if m then\n"
    "    local c = math.max(now, m[5], at - m[3] * m[1])\n"
    "    local new_tat = math.max(m[4], c) + m[3] * m[1]\n"
    "    put(KEYS[i], new_tat, now)\n"
    "    local r = remaining(new_tat, m[1], m[2], at)\n"
    "    if rem < 0 or r < rem then rem = r end\n"
    "    if new_tat - now > reset then reset = new_tat - now end\n"
    "  end\n"
    "end\n"
    "if rem < 0 then rem = 0 end\n"
    "return {1, 0, go, 0, rem, reset}\n";

constexpr std::string_view kPark = EGRESS_LUA_PRELUDE
    "local now = now_us(ARGV[3])\n"
    "local untl = now + tonumber(ARGV[1])\n"
    "local old = park_of(KEYS[1])\n"
    "if old >= untl then return 0 end\n"
    "local ttl = math.floor((untl - now) / 1000) + 1000\n"
    "redis.call('SET', KEYS[1], int(untl) .. ':' .. ARGV[2], 'PX', int(ttl))\n"
    "return 1\n";

constexpr std::string_view kUnpark = "redis.call('DEL', KEYS[1])\nreturn 1\n";

constexpr std::string_view kRescale = EGRESS_LUA_PRELUDE
    "local from = tonumber(ARGV[1])\n"
    "local to = tonumber(ARGV[2])\n"
    "local now = now_us(ARGV[3])\n"
    "local tat = tonumber(redis.call('GET', KEYS[1]) or '0') or 0\n"
    "if from <= 0 or tat <= now then return 0 end\n"
    "put(KEYS[1], now + math.floor((tat - now) * to / from), now)\n"
    "return 1\n";

constexpr std::string_view kSync = EGRESS_LUA_PRELUDE
    "local T = tonumber(ARGV[1])\n"
    "local burst = math.max(1, tonumber(ARGV[2]))\n"
    "local available = math.min(math.max(tonumber(ARGV[3]), 0), burst)\n"
    "local now = now_us(ARGV[4])\n"
    "put(KEYS[1], now + (burst - available) * T, now)\n"
    "return 1\n";

constexpr std::string_view kInspect = EGRESS_LUA_PRELUDE
    "local T = tonumber(ARGV[1])\n"
    "local depth = tonumber(ARGV[2])\n"
    "local now = now_us(ARGV[3])\n"
    "local tat = tonumber(redis.call('GET', KEYS[1]) or '0') or 0\n"
    "local rem = remaining(tat, T, depth, now)\n"
    "local reset = math.max(tat, now) - now\n"
    "local untl, kind = park_of(KEYS[2])\n"
    "if untl > now then return {0, reset, untl - now, kind} end\n"
    "return {rem, reset, 0, 0}\n";

RedisScript Make(std::string_view text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string hex;
  for (unsigned char byte : digest) {
    hex += fmt::format("{:02x}", byte);
  }
  return RedisScript{text, std::move(hex)};
}

}  // namespace

const RedisScript& TakeScript() {
  static const RedisScript* script = new RedisScript(Make(kTake));
  return *script;
}
const RedisScript& ParkScript() {
  static const RedisScript* script = new RedisScript(Make(kPark));
  return *script;
}
const RedisScript& UnparkScript() {
  static const RedisScript* script = new RedisScript(Make(kUnpark));
  return *script;
}
const RedisScript& RescaleScript() {
  static const RedisScript* script = new RedisScript(Make(kRescale));
  return *script;
}
const RedisScript& SyncScript() {
  static const RedisScript* script = new RedisScript(Make(kSync));
  return *script;
}
const RedisScript& InspectScript() {
  static const RedisScript* script = new RedisScript(Make(kInspect));
  return *script;
}

}  // namespace egress::adapters
