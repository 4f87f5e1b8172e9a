#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/delivery.h"

namespace egress::storage {

// Keys of the store's indexes (docs/storage.md, "Key layout"). Byte order is the order each
// index is read in; tests/storage/index_keys_test.cc pins it. Fields never contain '\0'
// (ValidateNewDelivery refuses control characters), so '\0' separates them.

// due: next attempt time, then id: iteration order is schedule order.
std::string DueKey(int64_t due_ms, std::string_view id);
// Splits a due key; false when it is not one.
bool ParseDueKey(std::string_view key, int64_t& due_ms, std::string_view& id);

// dest: destination key, '\0', id: one destination's work in enqueue order.
std::string DestIndexKey(std::string_view destination_key, std::string_view id);
// The destination key part of a dest index key (up to the '\0').
std::string_view DestOfIndexKey(std::string_view key);
std::string_view IdOfDestIndexKey(std::string_view key);
// The smallest key after every key of `destination_key`.
std::string DestUpperBound(std::string_view destination_key);

// state: one byte of state, then id: the deliveries in one state in id order.
std::string StateKey(DeliveryState state, std::string_view id);

// done: the retention index, one class of entries per leading tag byte, each in age order.
// A finished record (delivered, dead, cancelled): its state byte, finish time, id -> ''.
std::string DoneKey(DeliveryState state, int64_t finished_ms, std::string_view id);
// The idempotency key of a finished delivery: 'i', finish time, id -> IdemKey(tenant, key).
inline constexpr char kIdemExpiryTag = 'i';
std::string IdemExpiryKey(int64_t finished_ms, std::string_view id);
// The smallest key of a class whose finish time is `finished_ms` or later: the exclusive bound
// of the entries older than `finished_ms`.
std::string DoneBound(char tag, int64_t finished_ms);
// Splits a done key; false when it is not one.
bool ParseDoneKey(std::string_view key, char& tag, int64_t& finished_ms, std::string_view& id);

// idem: tenant, '\0', idempotency key -> id.
std::string IdemKey(std::string_view tenant, std::string_view key);

// meta: exact count of deliveries in one state (a merged signed 64-bit counter).
std::string CountKey(DeliveryState state);
// meta: exact count of one tenant's non-terminal deliveries (merged counter).
std::string BacklogKey(std::string_view tenant);
// meta: the bytes one tenant's records take in the store (merged counter; QueueStore::
// TenantStoredBytes): "storedbytes/" then the tenant. No other counter starts with that prefix,
// so every tenant name has a key of its own.
inline constexpr std::string_view kStoredBytesPrefix = "storedbytes/";
std::string StoredBytesKey(std::string_view tenant);
// meta: exact count of one destination's deliveries in a non-terminal state (merged counter).
std::string DestCountKey(std::string_view destination_key, DeliveryState state);
// The same key written over `out` (whose capacity is reused).
void SetDestCountKey(std::string& out, std::string_view destination_key, DeliveryState state);
// What a destination's counter key counts: its state and the (tenant, platform) its destination
// key begins with ("<platform>\x1f<tenant>\x1f..."; a sealed key keeps both in the clear). False
// when `key` is no such key.
struct DestCountKeyParts {
  DeliveryState state{};
  std::string_view tenant;
  std::string_view platform;
};
bool ParseDestCountKey(std::string_view key, DestCountKeyParts& out);
// A destination's counter key split into its state and destination key, whatever that holds;
// false when `key` is not "destcount/<state>/...".
bool SplitDestCountKey(std::string_view key, DeliveryState& state, std::string_view& destination);

// meta: the units charged to one slice of a tenant's quota (a merged signed counter):
// "quota/", tenant, '\x1f', quota, '\x1f', be64(expires_ms). Tenant and quota names hold no
// control character.
inline constexpr std::string_view kQuotaSlicePrefix = "quota/";
std::string QuotaSliceKey(std::string_view tenant, std::string_view quota, int64_t expires_ms);
// Splits a quota slice key into "tenant\x1fquota" and the slice's expiry; false when it is not
// one.
bool ParseQuotaSliceKey(std::string_view key, std::string_view& quota_id, int64_t& expires_ms);
// "tenant\x1fquota": how the store names one tenant's quota in memory.
std::string QuotaId(std::string_view tenant, std::string_view quota);

}  // namespace egress::storage
