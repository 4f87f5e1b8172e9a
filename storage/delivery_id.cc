#include "storage/delivery_id.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace egress::storage {
namespace {

constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// The value of each byte as a base32 digit, -1 for a byte outside kAlphabet: a table, as the
// loop decodes a delivery's id on every offer (a linear search was ~2k instructions an id).
constexpr std::array<int8_t, 256> kDigits = [] {
  std::array<int8_t, 256> digits{};
  digits.fill(-1);
  for (int i = 0; i < 32; ++i) {
    digits[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  }
  return digits;
}();

int DecodeChar(char c) { return kDigits[static_cast<unsigned char>(c)]; }

// 128 bits as (time:48 | hi:16 | lo:64) to 26 base32 characters, most significant first.
std::string Encode(uint64_t ms, uint16_t hi, uint64_t lo) {
  const unsigned __int128 v = (static_cast<unsigned __int128>((ms << 16) | hi) << 64) | lo;
  std::string out(26, '0');
  for (int i = 25; i >= 0; --i) {
    out[i] = kAlphabet[static_cast<int>((v >> (5 * (25 - i))) & 31)];
  }
  return out;
}

bool Decode(std::string_view id, unsigned __int128& v) {
  if (id.size() != 26) {
    return false;
  }
  v = 0;
  for (char c : id) {
    const int d = DecodeChar(c);
    if (d < 0) {
      return false;
    }
    v = (v << 5) | static_cast<unsigned>(d);
  }
  return DecodeChar(id.front()) <= 7;  // 26*5 = 130 bits: the top two must be zero
}

}  // namespace

DeliveryIdGenerator::DeliveryIdGenerator(uint64_t seed, std::string_view floor)
    : rng_state_(seed | 1) {
  unsigned __int128 v = 0;
  if (Decode(floor, v)) {
    last_ms_ = static_cast<int64_t>(static_cast<uint64_t>(v >> 80));
    counter_ = static_cast<uint16_t>(v >> 64);
  }
}

uint64_t DeliveryIdGenerator::NextRandom() {
  // splitmix64: ids need uniqueness, not unpredictability.
  uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string DeliveryIdGenerator::Next(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (now_ms > last_ms_) {
    last_ms_ = now_ms;
    counter_ = 0;
  } else if (++counter_ == 0) {
    ++last_ms_;  // 65,536 ids in one millisecond: borrow the next one
  }
  return Encode(static_cast<uint64_t>(last_ms_), counter_, NextRandom());
}

bool IsDeliveryId(std::string_view id) {
  unsigned __int128 v = 0;
  return Decode(id, v);
}

uint64_t DeliveryIdSequence(std::string_view id) {
  unsigned __int128 v = 0;
  return Decode(id, v) ? static_cast<uint64_t>(v >> 64) : 0;
}

std::string DeliveryIdFloor(int64_t ms) {
  constexpr int64_t kMaxMs = (int64_t{1} << 48) - 1;
  return Encode(static_cast<uint64_t>(std::clamp<int64_t>(ms, 0, kMaxMs)), 0, 0);
}

int64_t DeliveryIdMillis(std::string_view id) {
  unsigned __int128 v = 0;
  if (!Decode(id, v)) {
    return -1;
  }
  return static_cast<int64_t>(static_cast<uint64_t>(v >> 80));
}

}  // namespace egress::storage
