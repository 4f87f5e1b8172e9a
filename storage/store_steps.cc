#include "storage/store_steps.h"

#include <algorithm>
#include <utility>

#include "storage/delivery_codec.h"
#include "storage/delivery_id.h"

namespace egress::storage {

Delivery NewQueuedDelivery(const NewDelivery& in, std::string id, int64_t now_ms) {
  Delivery d;
  d.id = std::move(id);
  d.tenant = in.tenant;
  d.platform = in.platform;
  d.destination = in.destination;
  d.credential = in.credential;
  d.payload = in.payload;
  d.idempotency_key = in.idempotency_key;
  d.ordering_key = in.ordering_key;
  d.traceparent = in.traceparent;
  d.cost = in.cost;
  d.priority = in.priority;
  d.charges = in.charges;
  d.created_ms = now_ms;
  d.updated_ms = now_ms;
  d.state = DeliveryState::kQueued;
  d.next_attempt_ms = now_ms;
  return d;
}

bool MatchesListFilter(const ListFilter& f, const Delivery& d) {
  return (!f.state || *f.state == d.state) && (f.tenant.empty() || f.tenant == d.tenant) &&
         (f.platform.empty() || f.platform == d.platform) &&
         (f.destination.empty() || f.destination == d.destination) &&
         (f.reason_prefix.empty() || d.reason.starts_with(f.reason_prefix)) &&
         (!f.since_ms || d.created_ms >= *f.since_ms) &&
         (!f.until_ms || d.created_ms < *f.until_ms);
}

ListPage ListLeased(const LeaseTable& leases, const ListFilter& filter) {
  ListPage page;
  std::string start = filter.after_id;
  if (filter.since_ms) {
    start = std::max(start, DeliveryIdFloor(*filter.since_ms));
  }
  size_t scanned = 0;
  std::string last_id;
  leases.Visit(start, [&](const Delivery& d) {
    if (d.id <= filter.after_id) {
      return true;
    }
    if (page.deliveries.size() == filter.limit || scanned == kMaxListScan) {
      page.next_cursor = last_id;
      return false;
    }
    ++scanned;
    last_id = d.id;
    if (MatchesListFilter(filter, d)) {
      page.deliveries.push_back(d);
    }
    return true;
  });
  return page;
}

Result<Delivery> DecodeUnderDestination(std::string_view bytes, std::string_view id,
                                        const DestinationParts& stored,
                                        const DestinationSeal& seal) {
  Result<Delivery> d = DecodeDelivery(bytes);
  if (!d) {
    return d.error();
  }
  if (d->id != id) {
    return Status::Corruption("record holds another id");
  }
  if (d->platform != stored.platform || d->tenant != stored.tenant ||
      d->credential != stored.credential || d->destination != stored.destination) {
    return Status::Corruption("record belongs to another destination");
  }
  Result<std::string> destination = seal.Open(d->destination);
  if (!destination) {
    return Status::Corruption(destination.error().message());
  }
  d->destination = std::move(*destination);
  return d;
}

int64_t RetentionAgeOf(const RetentionPolicy& policy, DeliveryState state) {
  switch (state) {
    case DeliveryState::kDelivered:
      return policy.delivered_ms;
    case DeliveryState::kCancelled:
      return policy.cancelled_ms;
    case DeliveryState::kDead:
      return policy.dead_ms;
    default:
      return 0;
  }
}

uint64_t& PurgedCountOf(PurgeCounts& counts, DeliveryState state) {
  return state == DeliveryState::kDelivered   ? counts.delivered
         : state == DeliveryState::kCancelled ? counts.cancelled
                                              : counts.dead;
}

}  // namespace egress::storage
