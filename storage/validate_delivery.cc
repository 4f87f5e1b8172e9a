#include <algorithm>

#include <fmt/format.h>

#include "dispatcher/base/traceparent.h"
#include "storage/queue_store.h"

namespace egress::storage {
namespace {

Status CheckName(std::string_view field, std::string_view v, bool required, size_t max) {
  if (required && v.empty()) {
    return Status::InvalidArgument(fmt::format("{}: required", field));
  }
  if (v.size() > max) {
    return Status::InvalidArgument(fmt::format("{}: longer than {} bytes", field, max));
  }
  for (char c : v) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return Status::InvalidArgument(fmt::format("{}: contains a control character", field));
    }
  }
  return Status::Ok();
}

}  // namespace

bool ValidQuotaName(std::string_view name) {
  if (name.empty() || name.size() > kMaxChargeQuotaName) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
}

Status CheckCharge(const QuotaCharge& c) {
  if (!ValidQuotaName(c.quota)) {
    return Status::InvalidArgument(fmt::format(
        "charges.quota: a quota name is 1 to {} of A-Z a-z 0-9 _ . -", kMaxChargeQuotaName));
  }
  if (c.window_ms < 1 || c.window_ms > kMaxChargeWindowMs || c.slice_ms < 1 ||
      c.slice_ms > c.window_ms) {
    return Status::InvalidArgument(
        fmt::format("charges.{}: the window must be 1 ms to {} ms and the slice within it", c.quota,
                    kMaxChargeWindowMs));
  }
  if (c.units < 0 || c.units > kMaxChargeUnits) {
    return Status::InvalidArgument(
        fmt::format("charges.{}: units must be 0 to {}", c.quota, kMaxChargeUnits));
  }
  return Status::Ok();
}

Status ValidateNewDelivery(const NewDelivery& d, const StoreOptions& options) {
  const size_t max = options.max_field_bytes;
  for (auto [field, value, required] :
       {std::tuple{"tenant", &d.tenant, true}, std::tuple{"platform", &d.platform, true},
        std::tuple{"destination", &d.destination, true},
        std::tuple{"credential", &d.credential, true},
        std::tuple{"idempotency_key", &d.idempotency_key, false},
        std::tuple{"ordering_key", &d.ordering_key, false}}) {
    if (Status s = CheckName(field, *value, required, max); !s.ok()) {
      return s;
    }
  }
  if (d.payload.size() > options.max_payload_bytes) {
    return Status::InvalidArgument(fmt::format("payload: {} bytes is over the limit of {}",
                                               d.payload.size(), options.max_payload_bytes));
  }
  if (d.cost == 0) {
    return Status::InvalidArgument("cost: must be at least 1");
  }
  if (d.charges.size() > kMaxQuotaCharges) {
    return Status::InvalidArgument(fmt::format("charges: more than {} quotas", kMaxQuotaCharges));
  }
  for (const QuotaCharge& c : d.charges) {
    if (Status s = CheckCharge(c); !s.ok()) {
      return s;
    }
  }
  if (!d.traceparent.empty() && NormalizeTraceparent(d.traceparent) != d.traceparent) {
    return Status::InvalidArgument("traceparent: not a W3C traceparent of version 00");
  }
  return Status::Ok();
}

}  // namespace egress::storage
