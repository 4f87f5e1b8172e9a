#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dispatcher/base/result.h"
#include "dispatcher/service/delivery/destination_index.h"

namespace egress::service {

// The `cursor` / `next_cursor` of GET /v1/destinations (docs/api.md, "Destinations"): where a
// listing stopped in the order it asked for, in printable ASCII:
//   d1.<epoch: 16 hex>.<k | o>.<deferral ms: decimal>.<hash: 16 hex>.<tenant: hex>
// It names no destination (DestinationIndex: the hash is keyed). A cursor made by another
// process (after a restart: another epoch), for the other order, or that is not one of these is
// InvalidArgument, which the API answers 400 invalid_cursor: the listing starts again.
std::string EncodeDestinationCursor(uint64_t epoch, bool by_deferral,
                                    const DestinationPosition& at);
Result<DestinationPosition> DecodeDestinationCursor(std::string_view text, uint64_t epoch,
                                                    bool by_deferral);

}  // namespace egress::service
