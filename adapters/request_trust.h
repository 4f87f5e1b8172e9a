#pragma once

#include <array>
#include <string>

#include "dispatcher/base/platform.h"

namespace egress::adapters {

// A platform's own trust store ([platforms.<platform>] ca_file, ca_path). When either is set,
// the CAs the platform's servers must chain to instead of the transport's: it replaces
// TransportOptions::ca_file and ca_path whole (HttpRequest::ca_file, ca_path). Default: neither,
// the transport's.
struct RequestTrust {
  std::string ca_file;  // a PEM bundle
  std::string ca_path;  // a directory of CA certificates (OpenSSL hashed names)

  bool empty() const { return ca_file.empty() && ca_path.empty(); }
  friend bool operator==(const RequestTrust&, const RequestTrust&) = default;
};

// Indexed by Platform.
using PlatformTrust = std::array<RequestTrust, kMaxPlatforms>;

}  // namespace egress::adapters
