#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace egress::pacing {

// How a PackedId holds its delivery id.
enum class IdForm : uint8_t {
  kNone,    // holds nothing
  kUlid,    // a ULID-shaped id (26 Crockford base32 characters, as storage/delivery_id.h makes):
            // its 128 bits
  kInline,  // an id of at most 15 bytes, verbatim
  kLong,    // fits neither; the owner keeps the text elsewhere
};

// A delivery id in 16 bytes without allocation, for structures held per destination. The form
// is kept by the owner (it packs into spare bits there). Unpack(Pack(id)) == id exactly: only
// canonical upper-case base32 packs as kUlid.
struct PackedId {
  std::array<uint8_t, 16> bytes{};

  // Packs `id` into `out` and returns its form (kLong when it fits no other form).
  static IdForm Pack(std::string_view id, PackedId& out);
  // The id packed with `form`; "" for kNone and kLong.
  std::string Unpack(IdForm form) const;
};

}  // namespace egress::pacing
