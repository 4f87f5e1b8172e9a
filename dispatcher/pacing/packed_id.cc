#include "dispatcher/pacing/packed_id.h"

#include <array>
#include <cstring>

namespace egress::pacing {
namespace {

constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
constexpr size_t kUlidLength = 26;
constexpr size_t kInlineMax = 15;

// The 5-bit value of each canonical Crockford base32 character, -1 for every other byte.
constexpr std::array<int8_t, 256> kDecode = [] {
  std::array<int8_t, 256> table{};
  table.fill(-1);
  for (int i = 0; i < 32; ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  }
  return table;
}();

}  // namespace

IdForm PackedId::Pack(std::string_view id, PackedId& out) {
  out.bytes = {};
  if (id.size() == kUlidLength && id[0] >= '0' && id[0] <= '7') {
    // 26 characters of 5 bits hold 130 bits; the first carries only the top 3 of 128. Characters
    // 0-12 are the top 63 bits, character 13 straddles the halves, 14-25 are the low 60 bits.
    int invalid = 0;
    auto take = [&](size_t from, size_t to) {
      uint64_t bits = 0;
      for (size_t i = from; i < to; ++i) {
        const int v = kDecode[static_cast<unsigned char>(id[i])];
        invalid |= v;
        bits = (bits << 5) | static_cast<uint64_t>(v & 31);
      }
      return bits;
    };
    const uint64_t top = take(0, 13);
    const uint64_t middle = take(13, 14);
    const uint64_t low = take(14, 26);
    if (invalid >= 0) {
      const uint64_t hi = (top << 1) | (middle >> 4);
      const uint64_t lo = (middle << 60) | low;
      std::memcpy(out.bytes.data(), &hi, 8);
      std::memcpy(out.bytes.data() + 8, &lo, 8);
      return IdForm::kUlid;
    }
  }
  if (id.size() <= kInlineMax) {
    std::memcpy(out.bytes.data(), id.data(), id.size());
    out.bytes[15] = static_cast<uint8_t>(id.size());
    return IdForm::kInline;
  }
  return IdForm::kLong;
}

std::string PackedId::Unpack(IdForm form) const {
  if (form == IdForm::kInline) {
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes[15]);
  }
  if (form != IdForm::kUlid) {
    return std::string();
  }
  uint64_t hi;
  uint64_t lo;
  std::memcpy(&hi, bytes.data(), 8);
  std::memcpy(&lo, bytes.data() + 8, 8);
  char text[kUlidLength];
  for (size_t i = kUlidLength; i-- > 14;) {
    text[i] = kAlphabet[lo & 31];
    lo >>= 5;
  }
  text[13] = kAlphabet[(lo & 15) | ((hi & 1) << 4)];
  hi >>= 1;
  for (size_t i = 13; i-- > 0;) {
    text[i] = kAlphabet[hi & 31];
    hi >>= 5;
  }
  std::string id(text, kUlidLength);
  return id;
}

}  // namespace egress::pacing
