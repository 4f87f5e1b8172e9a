#pragma once

#include <cstdint>
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

// The most bytes the record of `d` can take once enqueued, as QueueStore::TenantStoredBytes
// counts them (the id as key and field, every field with its tag and longest length, each
// integer at its longest, the destination as long as its sealed form): what an admission check
// adds before the write, which alone knows the exact size. Never less than the exact size.
uint64_t EnqueuedBytesBound(const NewDelivery& d);

}  // namespace egress::storage
