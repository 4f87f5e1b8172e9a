#pragma once

#include <string>
#include <string_view>

#include "dispatcher/base/result.h"
#include "storage/delivery.h"

namespace egress::storage {

// The persisted form of a Delivery (docs/storage.md, "Record format"): a format byte, then
// tag-length-value fields. Decoders skip tags they do not know, so fields can be added
// without breaking old readers, and old records decode with new fields at their defaults.
std::string EncodeDelivery(const Delivery& d);
// The same with `stored_destination` in place of d.destination (its sealed form at rest:
// destination_seal.h), without copying the delivery.
std::string EncodeDelivery(const Delivery& d, std::string_view stored_destination);

// Corruption naming the problem when `bytes` is not a record this code can read.
Result<Delivery> DecodeDelivery(std::string_view bytes);

}  // namespace egress::storage
