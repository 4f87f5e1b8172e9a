#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <sys/socket.h>

#include "adapters/ip_address.h"
#include "adapters/ip_network.h"
#include "dispatcher/base/status.h"

namespace egress::adapters {

// Decides whether the transport may connect to an already-resolved address. Check the address
// the connection will actually use (e.g. in curl's open-socket callback), not the host name, so a
// name that resolves to 169.254.169.254 is refused too. Pure functions, safe from any thread;
// nothing here resolves names or opens sockets.

// What an address is, most specific first. IPv6 forms that embed an IPv4 address (IPv4-mapped
// ::ffff:a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, IPv4-compatible ::a.b.c.d, NAT64
// 64:ff9b::/96, 6to4 2002::/16) take the class of the embedded IPv4 address.
enum class AddressClass {
  kPublic,
  kUnspecified,         // 0.0.0.0/8, ::  (connecting to it reaches this host on Linux)
  kLoopback,            // 127.0.0.0/8, ::1
  kPrivate,             // 10/8, 172.16/12, 192.168/16, deprecated site-local fec0::/10
  kSharedAddressSpace,  // 100.64.0.0/10 (carrier-grade NAT)
  kLinkLocal,           // 169.254.0.0/16, fe80::/10
  kUniqueLocal,         // fc00::/7
  kCloudMetadata,       // 169.254.169.254, 169.254.170.2, 168.63.129.16, 100.100.100.200,
                        // 192.0.0.192, fd00:ec2::254
  kMulticast,           // 224.0.0.0/4, ff00::/8
  kBroadcast,           // 255.255.255.255
  kReserved,  // 240/4, 192.0.0/24, 198.18/15, documentation ranges, 100::/64, 2001::/32 Teredo,
              // 2001:db8::/32, 64:ff9b:1::/48, and any IPv6 outside 2000::/3
};

std::string_view AddressClassName(AddressClass c);

// The class a refusal tells the tenant: "loopback", "private" (private, shared address space,
// unique-local), "link-local", "metadata", "reserved" (reserved, unspecified, multicast,
// broadcast) or "public".
std::string_view RefusalClassName(AddressClass c);

// An address and port refused whatever else the policy says (the service's own API).
struct RefusedEndpoint {
  IpAddress address;  // unspecified (0.0.0.0, ::): every non-public address of this host
  uint16_t port = 0;
};

AddressClass ClassifyAddress(const IpAddress& address);

// Per-destination profile switches.
struct SsrfPolicy {
  // Allows loopback, private, shared, link-local, unique-local and reserved addresses (tests, the
  // simulator, on-premises receivers). Cloud metadata stays refused. Default: false.
  bool allow_private_networks = false;
  // Allows cloud metadata addresses. Default: false.
  bool allow_cloud_metadata = false;
  // Opens these ranges even when allow_private_networks is false (a tenant's on-premises
  // receivers). Unspecified, multicast, broadcast and cloud metadata addresses stay refused.
  // Default: none.
  std::vector<IpNetwork> allowed_cidrs;
  // Always refused, whatever the switches above say: the service's own listen address, so no
  // tenant can make the service call its own API. Checked only where a port is known (the
  // transport's socket address). Default: none.
  std::vector<RefusedEndpoint> refused_endpoints;
};

// Ok when `policy` allows connecting to `address` (at `port`, when known); otherwise Rejected with
// "destination_not_allowed: <class> address" (RefusalClassName; "service address" for a refused
// endpoint). The message never names the address: it reaches the tenant. Unspecified, multicast
// and broadcast addresses are always refused.
Status CheckDestination(const IpAddress& address, const SsrfPolicy& policy);
Status CheckDestination(const IpAddress& address, uint16_t port, const SsrfPolicy& policy);

// As above for a literal; a text that is not an IP literal is InvalidArgument (refused).
Status CheckDestination(std::string_view address_text, const SsrfPolicy& policy);

// As above for a resolver's or curl's socket address; other families are InvalidArgument.
Status CheckDestination(const sockaddr* addr, socklen_t len, const SsrfPolicy& policy);

// True for a refusal CheckDestination wrote (Rejected, "destination_not_allowed: ..."), which
// reaches the tenant as it is, unlike a certificate the peer got wrong (also Rejected).
bool IsSsrfRefusal(const Status& status);

}  // namespace egress::adapters
