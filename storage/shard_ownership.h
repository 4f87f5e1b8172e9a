#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace egress::storage {

// Which destinations this node may dispatch, when several nodes serve one store
// (QueueStore::ownership(): the PostgreSQL store with shard leases, storage/pg_shard_leases.h;
// docs/storage.md, "Shards and leases"). Destinations hash into a fixed number of shards; a node
// dispatches only the work of the shards it holds a lease on, and the store refuses a write the
// dispatcher makes as a shard's owner (StateChange::as_owner) unless the node's lease epoch of
// that shard is still the store's, checked in the writing transaction. A store of one node has
// no ownership (nullptr): it owns everything. Thread-safe.
class ShardOwnership {
 public:
  virtual ~ShardOwnership() = default;

  // The shard of a destination key (DestinationKeyOf): the same on every node and build. Cheap
  // enough to call once per destination, not per delivery (it may seal the destination).
  virtual int ShardOf(std::string_view destination_key) const = 0;

  // Whether this node may start sending the shard's work now: it holds the lease, is not handing
  // the shard to another node, and by its own monotonic clock the lease cannot have expired
  // (it stops a margin before the expiry it last renewed to). Cheap: no I/O.
  virtual bool MayDispatch(int shard) const = 0;

  // How many shards there are, and how many this node may dispatch now.
  virtual int shard_count() const = 0;
  virtual int held_count() const = 0;

  // Called (on a thread of the ownership's own) when the shards this node may dispatch changed:
  // the caller forgets the work of shards it lost and loads that of shards it gained. Also
  // called after the wake-up channel was lost and came back (work may have arrived unseen).
  virtual void SetOwnershipObserver(std::function<void()> changed) = 0;

  // Called (on a thread of the ownership's own) with the ids of deliveries another node (or
  // this one) made waiting in a shard: intake, a replay. Ids of any shard may come; the caller
  // keeps those of shards it may dispatch.
  virtual void SetWakeObserver(std::function<void(std::vector<std::string> ids)> woken) = 0;
};

}  // namespace egress::storage
