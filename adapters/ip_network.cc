#include "adapters/ip_network.h"

#include <charconv>

#include <fmt/format.h>

namespace egress::adapters {
namespace {

// Whether the first `bits` bits of `a` and `b` (16 bytes each) agree.
bool PrefixEqual(const std::array<uint8_t, 16>& a, const std::array<uint8_t, 16>& b, int bits) {
  int i = 0;
  for (; bits >= 8; bits -= 8, ++i) {
    if (a[i] != b[i]) {
      return false;
    }
  }
  if (bits == 0) {
    return true;
  }
  const auto mask = static_cast<uint8_t>(0xFF << (8 - bits));
  return (a[i] & mask) == (b[i] & mask);
}

std::array<uint8_t, 16> BytesOf(const IpAddress& a) {
  if (!a.is_v4()) {
    return a.v6();
  }
  const uint32_t v = a.v4();
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}

}  // namespace

IpAddress UnmapV4(const IpAddress& address) {
  if (address.is_v4()) {
    return address;
  }
  const auto& b = address.v6();
  for (int i = 0; i < 10; ++i) {
    if (b[i] != 0) {
      return address;
    }
  }
  if (b[10] != 0xFF || b[11] != 0xFF) {
    return address;
  }
  return IpAddress::V4((uint32_t{b[12]} << 24) | (uint32_t{b[13]} << 16) | (uint32_t{b[14]} << 8) |
                       b[15]);
}

Result<IpNetwork> IpNetwork::Parse(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return Status::InvalidArgument("must be <address>/<prefix>, e.g. 10.20.0.0/16");
  }
  Result<IpAddress> base = IpAddress::Parse(text.substr(0, slash));
  if (!base) {
    return Status::InvalidArgument("not an IP address before the '/'");
  }
  const std::string_view bits = text.substr(slash + 1);
  int prefix = -1;
  auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), prefix);
  const int max = base->is_v4() ? 32 : 128;
  if (bits.empty() || ec != std::errc() || end != bits.data() + bits.size() || prefix < 0 ||
      prefix > max) {
    return Status::InvalidArgument(fmt::format("the prefix must be 0 to {}", max));
  }
  IpNetwork n;
  n.base_ = UnmapV4(*base);
  n.prefix_ = (!base->is_v4() && n.base_.is_v4()) ? prefix - 96 : prefix;
  if (n.prefix_ < 0) {
    return Status::InvalidArgument("an IPv4-mapped prefix must be at least 96");
  }
  const std::array<uint8_t, 16> bytes = BytesOf(n.base_);
  // Bits set past the prefix.
  const int total = n.base_.is_v4() ? 32 : 128;
  for (int bit = n.prefix_; bit < total; ++bit) {
    if ((bytes[bit / 8] >> (7 - bit % 8)) & 1) {
      return Status::InvalidArgument("address bits are set past the prefix");
    }
  }
  return n;
}

bool IpNetwork::Contains(const IpAddress& address) const {
  const IpAddress a = UnmapV4(address);
  if (a.is_v4() != base_.is_v4()) {
    return false;
  }
  return PrefixEqual(BytesOf(a), BytesOf(base_), prefix_);
}

std::string IpNetwork::ToString() const { return fmt::format("{}/{}", base_.ToString(), prefix_); }

}  // namespace egress::adapters
