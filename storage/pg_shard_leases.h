#pragma once

#include <array>
#include <atomic>
#include <bitset>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dispatcher/base/clock.h"
#include "dispatcher/base/result.h"
#include "storage/pg_connection.h"
#include "storage/pg_schema.h"
#include "storage/shard_ownership.h"

namespace egress::storage {

struct ShardLeaseOptions {
  // This node's name in egress_shards.owner and egress_nodes: unique per process start (two
  // nodes with one id would both think they own a shard). 1 to 200 bytes of UTF-8.
  std::string node_id;
  // How long a lease (and a node's heartbeat) lasts past its renewal, on the database's clock.
  // Default: 5 s.
  Millis ttl{5000};
  // How often the leases are renewed, claimed and handed over. Default: 1 s.
  Millis renew_every{1000};
  // This node stops sending a shard's work this long before the expiry it renewed to, measured
  // from before the renewal was sent on its own monotonic clock, so that it has stopped before
  // another node can claim the shard, whatever the two clocks say. Default: 1 s.
  Millis margin{1000};
  // A shard handed to another node (it joined) is released once this node holds nothing of the
  // shard in flight, or after this long regardless. Default: 30 s.
  Millis handoff_timeout{30'000};
};

// The shard leases of one node of a PostgreSQL store (docs/storage.md, "Shards and leases";
// the ShardOwnership contract). A thread of its own, on a connection of its own, every
// `renew_every`:
//   1. writes the node's heartbeat (egress_nodes: expires now() + ttl);
//   2. renews the leases it holds, each only while its epoch is still the shard's (one UPDATE);
//      a lease not renewed is lost;
//   3. reads the live nodes and spreads the shards over them by rendezvous hashing (each shard
//      goes to the node whose hash of (node, shard) is highest), the same spread on every node
//      that sees the same nodes;
//   4. claims the shards it should hold that are free (never held, expired or released): owner
//      = this node, epoch + 1, expiry now() + ttl, skipping a row a writer holds locked;
//   5. hands over the shards another node should hold: stops dispatching them, and once
//      `busy(shard)` says nothing of it is in flight (or after handoff_timeout) releases them.
// A second thread LISTENs on the wake-up channel (egress_wake: entries "<shard>/<id>", written by
// the store's NotifyWaiting) and passes the ids of shards this node dispatches to the wake
// observer. The ownership observer is also told when the shards MayDispatch allows change
// without a claim or a loss: a deadline that ran out while renewals failed, a lease renewed
// after it had.
//
// Fencing: the store's writes as owner lock the shard's row FOR KEY SHARE and compare owner and
// epoch with EpochOf in the same transaction; a claim takes the row FOR UPDATE, which waits for
// such writers, and bumps the epoch, after which they all fail.
class PgShardLeases final : public ShardOwnership {
 public:
  // `stored_key`: the destination key as the store keeps it (sealed), whose PgShardOf is the
  // shard. `busy`: whether this node has work of the shard in flight (leased in the store).
  // `after_round`: called about every `renew_every` on the listener's thread (the store refreshes
  // what other nodes change, its quota slices), never on the leases' (it must not delay them).
  // Connects twice (`conninfo`, `password` as PgConnection::Connect) and starts the threads; the
  // first round of claims runs before this returns. Unavailable when the server cannot be reached.
  static Result<std::unique_ptr<PgShardLeases>> Start(
      const std::string& conninfo, const std::string& password, ShardLeaseOptions options,
      const Clock& clock, std::function<std::string(std::string_view)> stored_key,
      std::function<bool(int)> busy, std::function<void()> after_round = nullptr);
  ~PgShardLeases() override;

  // The epoch this node holds the shard's lease with (handed over or past its local deadline
  // included: the store's check decides), none when it does not hold it.
  std::optional<int64_t> EpochOf(int shard) const;
  const std::string& node_id() const { return options_.node_id; }

  // Stops both threads, then releases every lease held (expired at once, so others claim them
  // without waiting out the ttl) and removes the node's heartbeat. Call once nothing is in
  // flight any more (the service drained). Idempotent; the destructor calls it.
  void Stop();

  // One round of the above (the thread calls it). Public for tests, which may call it between
  // rounds of the thread.
  Status Tick();

  // ShardOwnership.
  int ShardOf(std::string_view destination_key) const override;
  bool MayDispatch(int shard) const override;
  int shard_count() const override { return kPgShards; }
  int held_count() const override;
  void SetOwnershipObserver(std::function<void()> changed) override;
  void SetWakeObserver(std::function<void(std::vector<std::string>)> woken) override;

  // The node whose rendezvous hash of `shard` is highest among `nodes` (ties: the smaller id).
  static const std::string* RendezvousOwner(const std::vector<std::string>& nodes, int shard);

 private:
  struct Held {
    int64_t epoch = 0;
    SteadyTime deadline{};  // dispatch stops then (local monotonic clock)
    bool handing_over = false;
    SteadyTime handover_since{};
  };

  PgShardLeases(std::string conninfo, std::string password, ShardLeaseOptions options,
                const Clock& clock, std::function<std::string(std::string_view)> stored_key,
                std::function<bool(int)> busy);
  void RunLeases();
  void RunListener();
  // Connects `conn` again when it was lost. False while the server cannot be reached.
  bool Reconnect(std::unique_ptr<PgConnection>& conn);
  void NotifyChanged();
  // The shards MayDispatch says yes to now.
  std::bitset<kPgShards> Dispatchable() const;

  const std::string conninfo_;
  const std::string password_;
  const ShardLeaseOptions options_;
  const Clock& clock_;
  const std::function<std::string(std::string_view)> stored_key_;
  const std::function<bool(int)> busy_;
  std::function<void()> after_round_;

  mutable std::mutex mu_;
  std::array<std::optional<Held>, kPgShards> held_;
  std::function<void()> on_changed_;
  std::function<void(std::vector<std::string>)> on_wake_;

  std::unique_ptr<PgConnection> conn_;      // the leases' (RunLeases and Stop only)
  std::unique_ptr<PgConnection> listener_;  // RunListener's
  uint64_t ticks_ = 0;
  std::bitset<kPgShards> dispatchable_;  // as the ownership observer was last told
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::atomic<bool> stopped_{false};
  std::thread leases_thread_;
  std::thread listener_thread_;
};

}  // namespace egress::storage
