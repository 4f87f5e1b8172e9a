#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dispatcher/base/status.h"
#include "dispatcher/pacing/priority.h"

namespace egress::storage {

// The life of a delivery; docs/storage.md draws the state machine. Values are persisted: never
// renumber, only append.
enum class DeliveryState : uint8_t {
  kQueued = 1,
  kInFlight = 2,
  kDeferred = 3,
  kDelivered = 4,
  kDead = 5,
  kCancelled = 6,
};
inline constexpr std::array<DeliveryState, 6> kAllStates = {
    DeliveryState::kQueued,    DeliveryState::kInFlight, DeliveryState::kDeferred,
    DeliveryState::kDelivered, DeliveryState::kDead,     DeliveryState::kCancelled};

// "queued", "in_flight", ... as in the API and the CLI.
std::string_view StateName(DeliveryState state);
std::optional<DeliveryState> ParseState(std::string_view name);
// Delivered, dead and cancelled: the delivery has ended (dead can still be replayed).
bool IsTerminal(DeliveryState state);
// Queued and deferred: waiting in the due index for their next attempt time.
bool IsWaiting(DeliveryState state);

// One try at sending, as kept in a delivery's bounded history.
struct Attempt {
  int64_t at_ms = 0;           // wall clock, Unix ms
  int64_t duration_ms = 0;     // request to response
  int32_t http_status = 0;     // 0 when no response (connect error, timeout)
  std::string platform_error;  // e.g. Slack "channel_not_found", Discord "10015"
  std::string detail;          // transport error text or a short note
  // Rate-limit headers the platform sent (names lower-cased), in arrival order.
  std::vector<std::pair<std::string, std::string>> rate_limit_headers;

  friend bool operator==(const Attempt&, const Attempt&) = default;
};

// Units of a delivery charged to one of its tenant's quotas (docs/storage.md, "Quotas"): they
// count in the quota's slice that stops counting at `expires_ms` while the delivery is neither
// dead nor cancelled. The store moves them with the delivery's state, in the same write: a
// delivery that ends dead or cancelled gives them back, a replay charges them again (in the
// slice of the replay's time), an outcome with an actual cost corrects them.
struct QuotaCharge {
  std::string quota;      // the quota's name; the tenant is the delivery's
  int64_t window_ms = 0;  // the quota's window and slice when charged (pacing::WindowShape)
  int64_t slice_ms = 0;
  int64_t expires_ms = 0;  // the slice: when these units stop counting (Unix ms)
  int64_t units = 0;

  friend bool operator==(const QuotaCharge&, const QuotaCharge&) = default;
};

// What the product hands us. Validated by the store (ValidateNewDelivery).
struct NewDelivery {
  std::string tenant;
  std::string platform;         // slack | discord | line | webhook (checked by the intake layer)
  std::string destination;      // platform-specific: channel id, webhook URL, ...
  std::string credential;       // name of a credential registered for the tenant
  std::string payload;          // bytes, the platform-native body
  std::string idempotency_key;  // optional; (tenant, key) maps to one delivery
  std::string ordering_key;     // optional; same key leaves in enqueue order
  uint32_t cost = 1;            // budget units this delivery takes
  // Its place among the heads under a shared scope (pacing::Priority). Default: normal.
  pacing::Priority priority = pacing::Priority::kNormal;
  // The quotas intake charged (at most kMaxQuotaCharges). Default: none.
  std::vector<QuotaCharge> charges;
  // Optional W3C traceparent, version 00 (55 characters; dispatcher/base/traceparent.h); sent
  // on webhook requests.
  std::string traceparent;
};

// Most quotas one delivery may be charged to.
inline constexpr size_t kMaxQuotaCharges = 32;
// What a stored charge is checked against when a record is read (records on disk are hostile):
// its units and window. The config's quota bounds are these (config/tenant_config.h).
inline constexpr int64_t kMaxChargeUnits = 1'000'000'000'000;
inline constexpr int64_t kMaxChargeWindowMs = 366LL * 24 * 3600 * 1000;
inline constexpr size_t kMaxChargeQuotaName = 64;

// A quota's (or tier's) name: 1 to kMaxChargeQuotaName of A-Z a-z 0-9 _ . - (the config and the
// admin API hold names to it as well).
bool ValidQuotaName(std::string_view name);
// OK when `c` is a charge intake could have made: a valid name, a window of 1 ms to
// kMaxChargeWindowMs, a slice within it, 0 to kMaxChargeUnits units; else InvalidArgument naming
// the field.
Status CheckCharge(const QuotaCharge& c);

// A stored delivery. `id` is time-ordered: ids sort in enqueue order.
struct Delivery {
  std::string id;
  std::string tenant;
  std::string platform;
  std::string destination;
  std::string credential;
  std::string payload;
  std::string idempotency_key;
  std::string ordering_key;
  uint32_t cost = 1;
  pacing::Priority priority = pacing::Priority::kNormal;  // normal in records before tag 20
  int64_t created_ms = 0;
  std::string traceparent;  // empty when none (and in records written before tag 19)
  DeliveryState state = DeliveryState::kQueued;
  uint32_t attempts = 0;             // attempts that counted against the retry limit
  int64_t next_attempt_ms = 0;       // when a waiting delivery is due (Unix ms)
  std::string reason;                // why it is deferred or dead; empty otherwise
  int64_t updated_ms = 0;            // last state change
  int64_t finished_ms = 0;           // when it became delivered, dead or cancelled; else 0
  std::vector<Attempt> history;      // newest last, bounded by StoreOptions::history_limit
  std::vector<QuotaCharge> charges;  // counted unless dead or cancelled

  friend bool operator==(const Delivery&, const Delivery&) = default;
};

// Where a delivery's work is queued: all deliveries with one key are found together in enqueue
// order. Platform, tenant, credential and destination, joined by '\x1f'.
std::string DestinationKeyOf(std::string_view platform, std::string_view tenant,
                             std::string_view credential, std::string_view destination);
inline std::string DestinationKeyOf(const Delivery& d) {
  return DestinationKeyOf(d.platform, d.tenant, d.credential, d.destination);
}

// The inverse of DestinationKeyOf; false when `key` is not one.
struct DestinationParts {
  std::string platform, tenant, credential, destination;
};
bool SplitDestinationKey(std::string_view key, DestinationParts& parts);

}  // namespace egress::storage
