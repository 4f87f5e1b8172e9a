#include <algorithm>

#include "dispatcher/pacing/scheduler.h"

// Scheduler: the wiring of the connection budget (docs/pacing.md, "Connections"): grants made
// ready, the send gate and the connections a tenant keeps for its next head.
namespace egress::pacing {

void Scheduler::ApplyGrants() {
  for (const uint32_t d : conns_.TakeGrants()) {
    Dest& dest = dests_[d];
    dest.conn_grant = true;
    if (dest.state == State::kConnWait) {
      MakeReady(d);
    } else {
      // Left the wait some other way meanwhile (it cannot: a waiter stays until granted); keep
      // the books straight all the same.
      dest.conn_grant = false;
      conns_.Return(dest.origin, dest.tenant);
    }
  }
}

Status Scheduler::SetMultiplexed(DestinationId id) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return found.error();
  }
  conns_.SetMultiplexed((*found)->origin);
  ApplyGrants();
  return Status::Ok();
}

bool Scheduler::StartSend(DestinationId id, uint64_t token, Priority priority) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return true;  // not scheduled here: nothing to count
  }
  const Dest& dest = **found;
  const bool sent =
      conns_.StartSend(dest.origin, dest.tenant, tenants_[dest.tenant].weight, token, priority);
  if (!kept_.empty()) {
    std::erase_if(kept_, [&](const KeptConnection& k) {
      return k.origin == dest.origin && k.tenant == dest.tenant &&
             conns_.kept(k.origin, k.tenant) == 0;
    });
  }
  return sent;
}

void Scheduler::EndSend(DestinationId id) {
  Result<Dest*> found = Find(id);
  if (!found.has_value()) {
    return;
  }
  const Dest& dest = **found;
  const int64_t keep_ns = Nanos(options_.connection_keep).count();
  if (dest.origin == ConnectionBudget::kNoOrigin || keep_ns <= 0 || !dest.has_head) {
    conns_.EndSend(dest.origin, dest.tenant);
    return;
  }
  // When is its next head due? Ready or held by an outcome: at once; on a timer: then.
  const int64_t now_ns = ToNanos(clock_.Now());
  int64_t due_ns = INT64_MAX;
  if (dest.state == State::kReady || dest.state == State::kBlocked ||
      dest.state == State::kConnWait) {
    due_ns = now_ns;
  } else if (dest.state == State::kTimer || dest.state == State::kScopeWait) {
    due_ns = std::max(now_ns, dest.until_ns);
  }
  if (due_ns - now_ns > keep_ns) {
    conns_.EndSend(dest.origin, dest.tenant);
    return;
  }
  if (!conns_.Keep(dest.origin, dest.tenant)) {
    return;  // not kept: ended as by EndSend
  }
  for (KeptConnection& k : kept_) {
    if (k.origin == dest.origin && k.tenant == dest.tenant) {
      k.until_ns = std::max(k.until_ns, due_ns + keep_ns);
      return;
    }
  }
  kept_.push_back(KeptConnection{dest.origin, dest.tenant, due_ns + keep_ns});
}

void Scheduler::ExpireKept(int64_t now_ns) {
  std::erase_if(kept_, [&](const KeptConnection& k) {
    if (k.until_ns > now_ns && conns_.kept(k.origin, k.tenant) > 0) {
      return false;
    }
    conns_.Unkeep(k.origin, k.tenant);
    return true;
  });
}

std::vector<uint64_t> Scheduler::TakeSendGrants() { return conns_.TakeSendGrants(); }

}  // namespace egress::pacing
