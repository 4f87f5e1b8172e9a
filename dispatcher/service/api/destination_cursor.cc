#include "dispatcher/service/api/destination_cursor.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "dispatcher/base/hex.h"

namespace egress::service {
namespace {

constexpr std::string_view kVersion = "d1";

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (parts.size() < 8) {
    const size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) {
      break;
    }
    start = at + 1;
  }
  return parts;
}

// 16 hex digits exactly.
bool ParseHex64(std::string_view text, uint64_t& out) {
  if (text.size() != 16) {
    return false;
  }
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out, 16);
  return ec == std::errc() && p == text.data() + text.size();
}

}  // namespace

std::string EncodeDestinationCursor(uint64_t epoch, bool by_deferral,
                                    const DestinationPosition& at) {
  return fmt::format("{}.{:016x}.{}.{}.{:016x}.{}", kVersion, epoch, by_deferral ? 'o' : 'k',
                     by_deferral ? at.deferral_ms : 0, at.hash, HexEncode(at.tenant));
}

Result<DestinationPosition> DecodeDestinationCursor(std::string_view text, uint64_t epoch,
                                                    bool by_deferral) {
  const auto bad = [](std::string_view why) {
    return Status::InvalidArgument(fmt::format("cursor: {}; list again from the start", why));
  };
  const std::vector<std::string_view> parts = Split(text, '.');
  if (parts.size() != 6 || parts[0] != kVersion) {
    return bad("not a cursor of GET /v1/destinations");
  }
  uint64_t cursor_epoch = 0;
  DestinationPosition at;
  if (!ParseHex64(parts[1], cursor_epoch) || !ParseHex64(parts[4], at.hash) ||
      (parts[2] != "k" && parts[2] != "o")) {
    return bad("not a cursor of GET /v1/destinations");
  }
  if (cursor_epoch != epoch) {
    return bad("made before the service restarted (the order is new)");
  }
  if ((parts[2] == "o") != by_deferral) {
    return bad("made for the other sort");
  }
  auto [p, ec] =
      std::from_chars(parts[3].data(), parts[3].data() + parts[3].size(), at.deferral_ms);
  if (ec != std::errc() || p != parts[3].data() + parts[3].size() || at.deferral_ms < 0) {
    return bad("not a cursor of GET /v1/destinations");
  }
  std::optional<std::string> tenant = HexDecode(parts[5]);
  if (!tenant) {
    return bad("not a cursor of GET /v1/destinations");
  }
  at.tenant = std::move(*tenant);
  return at;
}

}  // namespace egress::service
