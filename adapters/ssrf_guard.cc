#include "adapters/ssrf_guard.h"

#include <cstdint>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <netinet/in.h>

namespace egress::adapters {

// The first words of every refusal (CheckDestination), which IsSsrfRefusal looks for.
constexpr std::string_view kRefusalPrefix = "destination_not_allowed";

namespace {

struct V4Range {
  uint32_t base;
  int prefix;
  AddressClass cls;
};

// First match wins: the single metadata addresses come before the ranges holding them.
constexpr V4Range kV4Ranges[] = {
    {0xA9FEA9FE, 32, AddressClass::kCloudMetadata},       // 169.254.169.254 AWS/GCP/Azure/OpenStack
    {0xA9FEAA02, 32, AddressClass::kCloudMetadata},       // 169.254.170.2 AWS ECS task metadata
    {0xA83F8110, 32, AddressClass::kCloudMetadata},       // 168.63.129.16 Azure WireServer
    {0x646464C8, 32, AddressClass::kCloudMetadata},       // 100.100.100.200 Alibaba Cloud
    {0xC00000C0, 32, AddressClass::kCloudMetadata},       // 192.0.0.192 Oracle Cloud
    {0x00000000, 8, AddressClass::kUnspecified},          // 0.0.0.0/8
    {0x7F000000, 8, AddressClass::kLoopback},             // 127.0.0.0/8
    {0x0A000000, 8, AddressClass::kPrivate},              // 10.0.0.0/8
    {0xAC100000, 12, AddressClass::kPrivate},             // 172.16.0.0/12
    {0xC0A80000, 16, AddressClass::kPrivate},             // 192.168.0.0/16
    {0x64400000, 10, AddressClass::kSharedAddressSpace},  // 100.64.0.0/10
    {0xA9FE0000, 16, AddressClass::kLinkLocal},           // 169.254.0.0/16
    {0xFFFFFFFF, 32, AddressClass::kBroadcast},           // 255.255.255.255
    {0xE0000000, 4, AddressClass::kMulticast},            // 224.0.0.0/4
    {0xF0000000, 4, AddressClass::kReserved},             // 240.0.0.0/4
    {0xC0000000, 24, AddressClass::kReserved},            // 192.0.0.0/24 IETF protocol assignments
    {0xC0000200, 24, AddressClass::kReserved},            // 192.0.2.0/24 documentation
    {0xC0586300, 24, AddressClass::kReserved},            // 192.88.99.0/24 6to4 relay anycast
    {0xC6120000, 15, AddressClass::kReserved},            // 198.18.0.0/15 benchmarking
    {0xC6336400, 24, AddressClass::kReserved},            // 198.51.100.0/24 documentation
    {0xCB007100, 24, AddressClass::kReserved},            // 203.0.113.0/24 documentation
};

// An IPv6 prefix as two 64-bit halves.
struct V6Range {
  uint64_t hi;
  uint64_t lo;
  int prefix;
  AddressClass cls;
};

// Checked before embedded IPv4, so :: and ::1 are not read as IPv4-compatible 0.0.0.0/0.0.0.1.
constexpr V6Range kV6Exact[] = {
    {0, 0, 128, AddressClass::kUnspecified},                         // ::
    {0, 1, 128, AddressClass::kLoopback},                            // ::1
    {0xFD000EC200000000, 0x254, 128, AddressClass::kCloudMetadata},  // fd00:ec2::254
};

constexpr V6Range kV6Ranges[] = {
    {0x0064FF9B00010000, 0, 48, AddressClass::kReserved},    // 64:ff9b:1::/48
    {0x0100000000000000, 0, 64, AddressClass::kReserved},    // 100::/64 discard
    {0x20010DB800000000, 0, 32, AddressClass::kReserved},    // 2001:db8::/32
    {0x2001000000000000, 0, 32, AddressClass::kReserved},    // 2001::/32 Teredo
    {0xFC00000000000000, 0, 7, AddressClass::kUniqueLocal},  // fc00::/7
    {0xFE80000000000000, 0, 10, AddressClass::kLinkLocal},   // fe80::/10
    {0xFEC0000000000000, 0, 10, AddressClass::kPrivate},     // fec0::/10
    {0xFF00000000000000, 0, 8, AddressClass::kMulticast},    // ff00::/8
};

bool PrefixMatches(uint64_t value, uint64_t base, int bits) {
  if (bits <= 0) {
    return true;
  }
  int shift = 64 - bits;
  return (value >> shift) == (base >> shift);
}

bool InRange(uint64_t hi, uint64_t lo, const V6Range& r) {
  if (r.prefix <= 64) {
    return PrefixMatches(hi, r.hi, r.prefix);
  }
  return hi == r.hi && PrefixMatches(lo, r.lo, r.prefix - 64);
}

AddressClass ClassifyV4(uint32_t addr) {
  for (const V4Range& r : kV4Ranges) {
    if (PrefixMatches(uint64_t{addr} << 32, uint64_t{r.base} << 32, r.prefix)) {
      return r.cls;
    }
  }
  return AddressClass::kPublic;
}

// The IPv4 address embedded in a transition form, if any. Call after :: and ::1 are handled.
std::optional<uint32_t> EmbeddedV4(uint64_t hi, uint64_t lo) {
  auto low32 = static_cast<uint32_t>(lo);
  uint64_t upper = lo >> 32;
  if (hi == 0 && (upper == 0x0000FFFF || upper == 0xFFFF0000 || upper == 0)) {
    return low32;  // mapped ::ffff:a.b.c.d, translated ::ffff:0:a.b.c.d, compatible ::a.b.c.d
  }
  if (hi == 0x0064FF9B00000000 && upper == 0) {
    return low32;  // NAT64 64:ff9b::/96
  }
  if ((hi >> 48) == 0x2002) {
    return static_cast<uint32_t>(hi >> 16);  // 6to4 2002:aabb:ccdd::/48
  }
  return std::nullopt;
}

uint64_t ReadBigEndian64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v = (v << 8) | p[i];
  }
  return v;
}

AddressClass ClassifyV6(const std::array<uint8_t, 16>& bytes) {
  uint64_t hi = ReadBigEndian64(bytes.data());
  uint64_t lo = ReadBigEndian64(bytes.data() + 8);
  for (const V6Range& r : kV6Exact) {
    if (InRange(hi, lo, r)) {
      return r.cls;
    }
  }
  if (std::optional<uint32_t> v4 = EmbeddedV4(hi, lo)) {
    return ClassifyV4(*v4);
  }
  for (const V6Range& r : kV6Ranges) {
    if (InRange(hi, lo, r)) {
      return r.cls;
    }
  }
  // Only 2000::/3 is allocated as global unicast.
  return (hi >> 61) == 1 ? AddressClass::kPublic : AddressClass::kReserved;
}

// Classes an allowed CIDR may open.
bool Openable(AddressClass c) {
  switch (c) {
    case AddressClass::kLoopback:
    case AddressClass::kPrivate:
    case AddressClass::kSharedAddressSpace:
    case AddressClass::kLinkLocal:
    case AddressClass::kUniqueLocal:
    case AddressClass::kReserved:
      return true;
    default:
      return false;
  }
}

bool RefusedEndpointMatches(const RefusedEndpoint& e, const IpAddress& address, uint16_t port,
                            AddressClass c) {
  if (e.port != port) {
    return false;
  }
  const IpAddress mine = UnmapV4(e.address);
  const IpAddress theirs = UnmapV4(address);
  if (ClassifyAddress(mine) == AddressClass::kUnspecified) {
    // Listening on every address: any address of this host might be it. Loopback and the
    // unspecified address surely are; private ones may be, and are refused too.
    return c != AddressClass::kPublic;
  }
  return mine.is_v4() == theirs.is_v4() &&
         (mine.is_v4() ? mine.v4() == theirs.v4() : mine.v6() == theirs.v6());
}

Status Refusal(std::string_view what) {
  return Status::Rejected(fmt::format("{}: {} address", kRefusalPrefix, what));
}

bool Allowed(AddressClass c, const SsrfPolicy& policy) {
  switch (c) {
    case AddressClass::kPublic:
      return true;
    case AddressClass::kCloudMetadata:
      return policy.allow_cloud_metadata;
    case AddressClass::kUnspecified:
    case AddressClass::kMulticast:
    case AddressClass::kBroadcast:
      return false;
    case AddressClass::kLoopback:
    case AddressClass::kPrivate:
    case AddressClass::kSharedAddressSpace:
    case AddressClass::kLinkLocal:
    case AddressClass::kUniqueLocal:
    case AddressClass::kReserved:
      return policy.allow_private_networks;
  }
  return false;
}

}  // namespace

std::string_view AddressClassName(AddressClass c) {
  switch (c) {
    case AddressClass::kPublic:
      return "public";
    case AddressClass::kUnspecified:
      return "unspecified";
    case AddressClass::kLoopback:
      return "loopback";
    case AddressClass::kPrivate:
      return "private";
    case AddressClass::kSharedAddressSpace:
      return "shared address space (CGNAT)";
    case AddressClass::kLinkLocal:
      return "link-local";
    case AddressClass::kUniqueLocal:
      return "unique-local";
    case AddressClass::kCloudMetadata:
      return "cloud metadata";
    case AddressClass::kMulticast:
      return "multicast";
    case AddressClass::kBroadcast:
      return "broadcast";
    case AddressClass::kReserved:
      return "reserved";
  }
  return "unknown";
}

AddressClass ClassifyAddress(const IpAddress& address) {
  return address.is_v4() ? ClassifyV4(address.v4()) : ClassifyV6(address.v6());
}

std::string_view RefusalClassName(AddressClass c) {
  switch (c) {
    case AddressClass::kPublic:
      return "public";
    case AddressClass::kLoopback:
      return "loopback";
    case AddressClass::kPrivate:
    case AddressClass::kSharedAddressSpace:
    case AddressClass::kUniqueLocal:
      return "private";
    case AddressClass::kLinkLocal:
      return "link-local";
    case AddressClass::kCloudMetadata:
      return "metadata";
    case AddressClass::kUnspecified:
    case AddressClass::kMulticast:
    case AddressClass::kBroadcast:
    case AddressClass::kReserved:
      return "reserved";
  }
  return "reserved";
}

Status CheckDestination(const IpAddress& address, const SsrfPolicy& policy) {
  AddressClass c = ClassifyAddress(address);
  if (Allowed(c, policy)) {
    return Status::Ok();
  }
  if (Openable(c)) {
    for (const IpNetwork& n : policy.allowed_cidrs) {
      if (n.Contains(address)) {
        return Status::Ok();
      }
    }
  }
  return Refusal(RefusalClassName(c));
}

Status CheckDestination(const IpAddress& address, uint16_t port, const SsrfPolicy& policy) {
  const AddressClass c = ClassifyAddress(address);
  for (const RefusedEndpoint& e : policy.refused_endpoints) {
    if (RefusedEndpointMatches(e, address, port, c)) {
      return Refusal("service");
    }
  }
  return CheckDestination(address, policy);
}

Status CheckDestination(std::string_view address_text, const SsrfPolicy& policy) {
  Result<IpAddress> address = IpAddress::Parse(address_text);
  if (!address.has_value()) {
    return address.error();
  }
  return CheckDestination(*address, policy);
}

Status CheckDestination(const sockaddr* addr, socklen_t len, const SsrfPolicy& policy) {
  Result<IpAddress> address = IpAddress::FromSockaddr(addr, len);
  if (!address.has_value()) {
    return address.error();
  }
  // FromSockaddr checked the family and the length.
  uint16_t port = 0;
  if (addr->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, addr, sizeof(in));
    port = ntohs(in.sin_port);
  } else {
    sockaddr_in6 in6{};
    std::memcpy(&in6, addr, sizeof(in6));
    port = ntohs(in6.sin6_port);
  }
  return CheckDestination(*address, port, policy);
}

bool IsSsrfRefusal(const Status& status) {
  return status.code() == Status::Code::kRejected && status.message().starts_with(kRefusalPrefix);
}

}  // namespace egress::adapters
