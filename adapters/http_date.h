#pragma once

#include <optional>
#include <string_view>

#include "dispatcher/base/clock.h"

namespace egress::adapters {

// Parses an HTTP-date (RFC 9110 section 5.6.7) in any of its three forms:
//   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
//   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"
//   asctime      "Sun Nov  6 08:49:37 1994"
// Leniently: names are case-insensitive, the weekday may be missing and is not checked against
// the date, the zone may be GMT, UTC, UT, +0000, -0000 or absent; any other zone or trailing
// text is nullopt. A two-digit year is the one in the century of `reference` unless that lies
// more than 50 years after it, then the century before (RFC 9110's rule). Years outside
// 1900..2200 are nullopt (beyond them WallTime's nanoseconds overflow). Never throws.
std::optional<WallTime> ParseHttpDate(std::string_view text, WallTime reference);

}  // namespace egress::adapters
