#include "storage/delivery_codec.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include <fmt/format.h>

#include "dispatcher/base/saturating.h"
#include "dispatcher/base/traceparent.h"
#include "storage/coding.h"
#include "storage/destination_seal.h"

namespace egress::storage {
namespace {

constexpr char kFormatV1 = 1;

// Field tags. Persisted: never reuse or renumber.
enum Tag : uint64_t {
  kId = 1,
  kTenant = 2,
  kPlatform = 3,
  kDestination = 4,
  kCredential = 5,
  kPayload = 6,
  kIdempotencyKey = 7,
  kOrderingKey = 8,
  kCost = 9,
  kCreatedMs = 10,
  kState = 11,
  kAttempts = 12,
  kNextAttemptMs = 13,
  kReason = 14,
  kUpdatedMs = 15,
  kFinishedMs = 16,
  kAttempt = 17,  // repeated, nested record
  kCharge = 18,   // repeated, nested record (QuotaCharge)
  kTraceparent = 19,
  kPriority = 20,  // written only when not normal: a record without one is what older builds wrote
};

// The text fields, in encoding order.
constexpr std::pair<Tag, std::string Delivery::*> kTextFields[] = {
    {kId, &Delivery::id},
    {kTenant, &Delivery::tenant},
    {kPlatform, &Delivery::platform},
    {kDestination, &Delivery::destination},
    {kCredential, &Delivery::credential},
    {kPayload, &Delivery::payload},
    {kIdempotencyKey, &Delivery::idempotency_key},
    {kOrderingKey, &Delivery::ordering_key},
    {kReason, &Delivery::reason},
    {kTraceparent, &Delivery::traceparent},
};

enum AttemptTag : uint64_t {
  kAtMs = 1,
  kDurationMs = 2,
  kHttpStatus = 3,
  kPlatformError = 4,
  kDetail = 5,
  kHeader = 6,  // repeated: length-prefixed name then value
};

enum ChargeTag : uint64_t {
  kChargeQuota = 1,
  kChargeWindowMs = 2,
  kChargeSliceMs = 3,
  kChargeExpiresMs = 4,
  kChargeUnits = 5,
};

void PutBytes(std::string& dst, uint64_t tag, std::string_view v) {
  PutVarint64(dst, tag);
  PutLengthPrefixed(dst, v);
}

void PutInt(std::string& dst, uint64_t tag, int64_t v) {
  std::string tmp;
  PutVarint64(tmp, ZigZag(v));
  PutBytes(dst, tag, tmp);
}

std::string EncodeAttempt(const Attempt& a) {
  std::string out;
  PutInt(out, kAtMs, a.at_ms);
  PutInt(out, kDurationMs, a.duration_ms);
  PutInt(out, kHttpStatus, a.http_status);
  PutBytes(out, kPlatformError, a.platform_error);
  PutBytes(out, kDetail, a.detail);
  for (const auto& [name, value] : a.rate_limit_headers) {
    std::string pair;
    PutLengthPrefixed(pair, name);
    PutLengthPrefixed(pair, value);
    PutBytes(out, kHeader, pair);
  }
  return out;
}

std::string EncodeCharge(const QuotaCharge& c) {
  std::string out;
  PutBytes(out, kChargeQuota, c.quota);
  PutInt(out, kChargeWindowMs, c.window_ms);
  PutInt(out, kChargeSliceMs, c.slice_ms);
  PutInt(out, kChargeExpiresMs, c.expires_ms);
  PutInt(out, kChargeUnits, c.units);
  return out;
}

// Calls fn(tag, value) for each field; false when the bytes are truncated.
template <class Fn>
bool ForEachField(std::string_view in, Fn&& fn) {
  while (!in.empty()) {
    uint64_t tag = 0;
    std::string_view value;
    if (!GetVarint64(in, tag) || !GetLengthPrefixed(in, value)) {
      return false;
    }
    if (!fn(tag, value)) {
      return false;
    }
  }
  return true;
}

bool ParseInt(std::string_view v, int64_t& out) {
  uint64_t raw = 0;
  if (!GetVarint64(v, raw) || !v.empty()) {
    return false;
  }
  out = UnZigZag(raw);
  return true;
}

bool DecodeAttempt(std::string_view bytes, Attempt& a) {
  return ForEachField(bytes, [&](uint64_t tag, std::string_view v) {
    int64_t n = 0;
    switch (tag) {
      case kAtMs:
        return ParseInt(v, a.at_ms);
      case kDurationMs:
        return ParseInt(v, a.duration_ms);
      case kHttpStatus:
        if (!ParseInt(v, n)) {
          return false;
        }
        a.http_status = static_cast<int32_t>(n);
        return true;
      case kPlatformError:
        a.platform_error = v;
        return true;
      case kDetail:
        a.detail = v;
        return true;
      case kHeader: {
        std::string_view name, value;
        if (!GetLengthPrefixed(v, name) || !GetLengthPrefixed(v, value)) {
          return false;
        }
        a.rate_limit_headers.emplace_back(name, value);
        return true;
      }
      default:
        return true;  // a field from a newer version
    }
  });
}

bool DecodeCharge(std::string_view bytes, QuotaCharge& c) {
  return ForEachField(bytes, [&](uint64_t tag, std::string_view v) {
    switch (tag) {
      case kChargeQuota:
        c.quota = v;
        return true;
      case kChargeWindowMs:
        return ParseInt(v, c.window_ms);
      case kChargeSliceMs:
        return ParseInt(v, c.slice_ms);
      case kChargeExpiresMs:
        return ParseInt(v, c.expires_ms);
      case kChargeUnits:
        return ParseInt(v, c.units);
      default:
        return true;  // a field from a newer version
    }
  });
}

// A charge as intake and the state machine write one (CheckCharge), with an expiry at most a
// window and a slice after the delivery's last change (when the charge was made or moved). A
// stored charge outside these would overflow the counters or hold a tenant over its quota for
// centuries.
bool ChargeIsSane(const QuotaCharge& c, const Delivery& d) {
  const int64_t last_change = std::max(d.created_ms, d.updated_ms);
  return CheckCharge(c).ok() && c.expires_ms >= 0 &&
         c.expires_ms <= SatAdd(last_change, SatAdd(c.window_ms, c.slice_ms));
}

bool DecodeScalar(uint64_t tag, std::string_view v, Delivery& d) {
  int64_t n = 0;
  if (!ParseInt(v, n)) {
    return false;
  }
  switch (tag) {
    case kCost:
      d.cost = static_cast<uint32_t>(n);
      return true;
    case kCreatedMs:
      d.created_ms = n;
      return true;
    case kState:
      if (n < 1 || n > 6) {
        return false;
      }
      d.state = static_cast<DeliveryState>(n);
      return true;
    case kAttempts:
      d.attempts = static_cast<uint32_t>(n);
      return true;
    case kNextAttemptMs:
      d.next_attempt_ms = n;
      return true;
    case kUpdatedMs:
      d.updated_ms = n;
      return true;
    case kFinishedMs:
      d.finished_ms = n;
      return true;
    case kPriority:
      if (n < 0 || n >= pacing::kPriorityCount) {
        return false;
      }
      d.priority = static_cast<pacing::Priority>(n);
      return true;
    default:
      return false;
  }
}

bool DecodeField(uint64_t tag, std::string_view v, Delivery& d) {
  for (const auto& [text_tag, member] : kTextFields) {
    if (tag == text_tag) {
      (d.*member).assign(v);
      return true;
    }
  }
  switch (tag) {
    case kAttempt: {
      Attempt a;
      if (!DecodeAttempt(v, a)) {
        return false;
      }
      d.history.push_back(std::move(a));
      return true;
    }
    case kCharge: {
      QuotaCharge c;
      if (d.charges.size() >= kMaxQuotaCharges || !DecodeCharge(v, c)) {
        return false;
      }
      d.charges.push_back(std::move(c));
      return true;
    }
    case kCost:
    case kCreatedMs:
    case kState:
    case kAttempts:
    case kNextAttemptMs:
    case kUpdatedMs:
    case kFinishedMs:
    case kPriority:
      return DecodeScalar(tag, v, d);
    default:
      return true;  // a field from a newer version
  }
}

}  // namespace

std::string EncodeDelivery(const Delivery& d) { return EncodeDelivery(d, d.destination); }

std::string EncodeDelivery(const Delivery& d, std::string_view stored_destination) {
  std::string out;
  out.reserve(d.payload.size() + stored_destination.size() + 128);
  out.push_back(kFormatV1);
  for (const auto& [tag, member] : kTextFields) {
    if (tag == kTraceparent && (d.*member).empty()) {
      continue;  // optional and new: a record without one is what older builds wrote
    }
    PutBytes(out, tag, member == &Delivery::destination ? stored_destination : d.*member);
  }
  PutInt(out, kCost, d.cost);
  PutInt(out, kCreatedMs, d.created_ms);
  PutInt(out, kState, static_cast<int64_t>(d.state));
  PutInt(out, kAttempts, d.attempts);
  PutInt(out, kNextAttemptMs, d.next_attempt_ms);
  PutInt(out, kUpdatedMs, d.updated_ms);
  PutInt(out, kFinishedMs, d.finished_ms);
  if (d.priority != pacing::Priority::kNormal) {
    PutInt(out, kPriority, pacing::PriorityIndex(d.priority));
  }
  for (const Attempt& a : d.history) {
    PutBytes(out, kAttempt, EncodeAttempt(a));
  }
  for (const QuotaCharge& c : d.charges) {
    PutBytes(out, kCharge, EncodeCharge(c));
  }
  return out;
}

Result<Delivery> DecodeDelivery(std::string_view bytes) {
  if (bytes.empty() || bytes.front() != kFormatV1) {
    return Status::Corruption(fmt::format("delivery record has unknown format byte {}",
                                          bytes.empty() ? -1 : static_cast<int>(bytes.front())));
  }
  bytes.remove_prefix(1);
  Delivery d;
  if (!ForEachField(bytes,
                    [&](uint64_t tag, std::string_view v) { return DecodeField(tag, v, d); })) {
    return Status::Corruption("delivery record is truncated or has a malformed field");
  }
  if (d.id.empty()) {
    return Status::Corruption("delivery record has no id");
  }
  // A traceparent goes into a webhook request's header as it is: one that is not what intake
  // checked (a CR or LF would add headers of its own) is dropped, the delivery kept.
  if (!d.traceparent.empty() && NormalizeTraceparent(d.traceparent) != d.traceparent) {
    d.traceparent.clear();
  }
  for (const QuotaCharge& c : d.charges) {
    if (!ChargeIsSane(c, d)) {
      return Status::Corruption("delivery record has a quota charge out of range");
    }
  }
  return d;
}

uint64_t EnqueuedBytesBound(const NewDelivery& d) {
  constexpr uint64_t kIdBytes = 26;            // delivery_id.h
  constexpr uint64_t kField = 1 + 10;          // a tag and a length, each a varint
  constexpr uint64_t kInt = kField + 10;       // and a value, a zig-zag varint
  constexpr uint64_t kSealOverhead = 12 + 16;  // the nonce and tag sealed with a destination
  const uint64_t sealed =
      kSealedDestinationPrefix.size() + 2 * (kSealOverhead + d.destination.size());
  uint64_t n = kIdBytes + 1 + std::size(kTextFields) * kField + kIdBytes + d.tenant.size() +
               d.platform.size() + std::max<uint64_t>(sealed, d.destination.size()) +
               d.credential.size() + d.payload.size() + d.idempotency_key.size() +
               d.ordering_key.size() + d.traceparent.size() + 8 * kInt;
  for (const QuotaCharge& c : d.charges) {
    n += kField + kField + c.quota.size() + 4 * kInt;
  }
  return n;
}

}  // namespace egress::storage
