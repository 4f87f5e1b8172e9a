#include "storage/pg_shard_leases.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "storage/delivery_id.h"

namespace egress::storage {
namespace {

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

// splitmix64's finalizer: spreads the bits of (node hash, shard) so that each shard's ranking of
// the nodes is independent of the others'.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

std::vector<std::string> Split(std::string_view payload) {
  std::vector<std::string> out;
  while (!payload.empty()) {
    const size_t comma = payload.find(',');
    std::string_view id = payload.substr(0, comma);
    if (!id.empty()) {
      out.emplace_back(id);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    payload.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

const std::string* PgShardLeases::RendezvousOwner(const std::vector<std::string>& nodes,
                                                  int shard) {
  const std::string* best = nullptr;
  uint64_t best_score = 0;
  for (const std::string& node : nodes) {
    const uint64_t score =
        Mix(Fnv1a(node) ^ (static_cast<uint64_t>(shard) * 0x9e3779b97f4a7c15ull));
    if (best == nullptr || score > best_score || (score == best_score && node < *best)) {
      best = &node;
      best_score = score;
    }
  }
  return best;
}

PgShardLeases::PgShardLeases(std::string conninfo, std::string password, ShardLeaseOptions options,
                             const Clock& clock,
                             std::function<std::string(std::string_view)> stored_key,
                             std::function<bool(int)> busy)
    : conninfo_(std::move(conninfo)),
      password_(std::move(password)),
      options_(std::move(options)),
      clock_(clock),
      stored_key_(std::move(stored_key)),
      busy_(std::move(busy)) {}

Result<std::unique_ptr<PgShardLeases>> PgShardLeases::Start(
    const std::string& conninfo, const std::string& password, ShardLeaseOptions options,
    const Clock& clock, std::function<std::string(std::string_view)> stored_key,
    std::function<bool(int)> busy, std::function<void()> after_round) {
  if (options.node_id.empty() || options.node_id.size() > 200) {
    return Status::InvalidArgument("shard leases: the node id must be 1 to 200 bytes");
  }
  if (options.ttl <= options.margin + options.renew_every) {
    return Status::InvalidArgument(
        "shard leases: the ttl must be longer than the margin and the renewal period together");
  }
  std::unique_ptr<PgShardLeases> l(new PgShardLeases(conninfo, password, std::move(options), clock,
                                                     std::move(stored_key), std::move(busy)));
  auto conn = PgConnection::Connect(conninfo, password);
  if (!conn) {
    return conn.error();
  }
  l->conn_ = std::move(*conn);
  auto listener = PgConnection::Connect(conninfo, password);
  if (!listener) {
    return listener.error();
  }
  if (Status s = (*listener)->Run("LISTEN egress_wake"); !s.ok()) {
    return s;
  }
  l->listener_ = std::move(*listener);
  if (Status s = l->Tick(); !s.ok()) {
    return s;
  }
  l->after_round_ = std::move(after_round);
  l->leases_thread_ = std::thread([p = l.get()] { p->RunLeases(); });
  l->listener_thread_ = std::thread([p = l.get()] { p->RunListener(); });
  return l;
}

PgShardLeases::~PgShardLeases() { Stop(); }

int PgShardLeases::ShardOf(std::string_view destination_key) const {
  return PgShardOf(stored_key_(destination_key));
}

bool PgShardLeases::MayDispatch(int shard) const {
  if (shard < 0 || shard >= kPgShards) {
    return false;
  }
  const SteadyTime now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  const std::optional<Held>& h = held_[static_cast<size_t>(shard)];
  return h && !h->handing_over && now < h->deadline;
}

std::optional<int64_t> PgShardLeases::EpochOf(int shard) const {
  if (shard < 0 || shard >= kPgShards) {
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(mu_);
  const std::optional<Held>& h = held_[static_cast<size_t>(shard)];
  return h ? std::optional<int64_t>(h->epoch) : std::nullopt;
}

int PgShardLeases::held_count() const {
  const SteadyTime now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::count_if(held_.begin(), held_.end(), [&](const auto& h) {
    return h && !h->handing_over && now < h->deadline;
  }));
}

void PgShardLeases::SetOwnershipObserver(std::function<void()> changed) {
  std::lock_guard<std::mutex> lock(mu_);
  on_changed_ = std::move(changed);
}

void PgShardLeases::SetWakeObserver(std::function<void(std::vector<std::string>)> woken) {
  std::lock_guard<std::mutex> lock(mu_);
  on_wake_ = std::move(woken);
}

void PgShardLeases::NotifyChanged() {
  std::function<void()> changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed = on_changed_;
  }
  if (changed) {
    changed();
  }
}

bool PgShardLeases::Reconnect(std::unique_ptr<PgConnection>& conn) {
  if (conn && conn->ok()) {
    return true;
  }
  auto fresh = PgConnection::Connect(conninfo_, password_);
  if (!fresh) {
    return false;
  }
  conn = std::move(*fresh);
  return true;
}

Status PgShardLeases::Tick() {
  if (!Reconnect(conn_)) {
    return Status::Unavailable("shard leases: cannot reach the database");
  }
  PgConnection& c = *conn_;
  const int64_t ttl_ms = options_.ttl.count();
  // Every deadline set this round counts from before its statement was sent.
  const SteadyTime sent = clock_.Now();
  const SteadyTime deadline = sent + options_.ttl - options_.margin;
  if (auto hb = c.Exec("INSERT INTO egress_nodes (node_id, expires_at) VALUES ($1, now() + $2 * "
                       "interval '1 millisecond') ON CONFLICT (node_id) DO UPDATE SET expires_at = "
                       "excluded.expires_at",
                       PgParams().Text(options_.node_id).Int64(ttl_ms));
      !hb) {
    return hb.error();
  }
  bool changed = false;
  std::vector<int64_t> shards, epochs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int s = 0; s < kPgShards; ++s) {
      if (const auto& h = held_[static_cast<size_t>(s)]) {
        shards.push_back(s);
        epochs.push_back(h->epoch);
      }
    }
  }
  if (!shards.empty()) {
    auto renewed = c.Exec(
        "UPDATE egress_shards s SET expires_at = now() + $3 * interval '1 millisecond' "
        "FROM unnest($1::int8[], $2::int8[]) AS u(sh, ep) "
        "WHERE s.shard = u.sh AND s.epoch = u.ep AND s.owner = $4 RETURNING s.shard::int8",
        PgParams().Int64Array(shards).Int64Array(epochs).Int64(ttl_ms).Text(options_.node_id));
    if (!renewed) {
      return renewed.error();
    }
    std::set<int64_t> kept;
    for (int r = 0; r < renewed->rows(); ++r) {
      kept.insert(renewed->Int(r, 0));
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t s : shards) {
      std::optional<Held>& h = held_[static_cast<size_t>(s)];
      if (kept.contains(s)) {
        if (clock_.Now() >= h->deadline) {
          changed = true;  // it had lapsed (renewals failed or were held up): dispatchable again
        }
        h->deadline = deadline;
      } else {
        h.reset();  // another node claimed it (this node was away longer than the ttl)
        changed = true;
      }
    }
  }
  auto live = c.Exec("SELECT node_id FROM egress_nodes WHERE expires_at > now() ORDER BY node_id");
  if (!live) {
    return live.error();
  }
  std::vector<std::string> nodes;
  for (int r = 0; r < live->rows(); ++r) {
    nodes.emplace_back(live->Bytes(r, 0));
  }
  if (std::find(nodes.begin(), nodes.end(), options_.node_id) == nodes.end()) {
    nodes.push_back(options_.node_id);
  }
  std::vector<int64_t> wanted;
  std::vector<int> handed;  // held, another node's now: released below when not busy
  {
    std::lock_guard<std::mutex> lock(mu_);
    const SteadyTime now = clock_.Now();
    for (int s = 0; s < kPgShards; ++s) {
      const bool mine = *RendezvousOwner(nodes, s) == options_.node_id;
      std::optional<Held>& h = held_[static_cast<size_t>(s)];
      if (mine && !h) {
        wanted.push_back(s);
      } else if (mine && h->handing_over) {
        h->handing_over = false;  // the node it was going to left again
        changed = true;
      } else if (!mine && h) {
        if (!h->handing_over) {
          h->handing_over = true;
          h->handover_since = now;
          changed = true;
        }
        handed.push_back(s);
      }
    }
  }
  if (!wanted.empty()) {
    // A row a writer holds (FOR KEY SHARE, a stale owner finishing a write) is skipped this
    // round rather than waited for, so the renewals never wait behind it.
    auto claimed = c.Exec(
        "UPDATE egress_shards SET owner = $2, epoch = epoch + 1, expires_at = now() + $3 * "
        "interval '1 millisecond' WHERE shard IN (SELECT shard FROM egress_shards WHERE "
        "shard = ANY($1::int8[]) AND expires_at <= now() ORDER BY shard FOR UPDATE SKIP LOCKED) "
        "RETURNING shard::int8, epoch",
        PgParams().Int64Array(wanted).Text(options_.node_id).Int64(ttl_ms));
    if (!claimed) {
      return claimed.error();
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (int r = 0; r < claimed->rows(); ++r) {
      held_[static_cast<size_t>(claimed->Int(r, 0))] =
          Held{.epoch = claimed->Int(r, 1), .deadline = deadline};
      changed = true;
    }
  }
  for (int s : handed) {
    // Asked outside mu_: busy_ walks the store's leases, and MayDispatch waits for mu_.
    const bool busy = busy_(s);
    std::optional<int64_t> epoch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const std::optional<Held>& h = held_[static_cast<size_t>(s)];
      if (!h || !h->handing_over ||
          (busy && clock_.Now() - h->handover_since < options_.handoff_timeout)) {
        continue;
      }
      epoch = h->epoch;
    }
    // FOR UPDATE takes the row from this node's own writers of the shard (they hold it FOR KEY
    // SHARE) and makes the UPDATE a key update for them: a writer that comes after re-reads it.
    // SKIP LOCKED: while one writes, the release waits for the next round rather than stalling
    // the renewals behind it.
    auto released = c.Exec(
        "UPDATE egress_shards SET expires_at = '-infinity' WHERE shard IN (SELECT shard FROM "
        "egress_shards WHERE shard = $1 AND owner = $2 AND epoch = $3 FOR UPDATE SKIP LOCKED)",
        PgParams().Int64(s).Text(options_.node_id).Int64(*epoch));
    if (!released) {
      return released.error();
    }
    if (released->affected() != 1) {
      continue;  // a writer holds it now, or it is no longer this node's (the renewal says)
    }
    std::lock_guard<std::mutex> lock(mu_);
    held_[static_cast<size_t>(s)].reset();
  }
  if (++ticks_ % 600 == 0) {
    // Heartbeats of nodes gone for an hour: nobody counts them any more.
    c.Exec("DELETE FROM egress_nodes WHERE expires_at < now() - interval '1 hour'")
        .status()
        .IgnoreError();
  }
  if (changed) {
    dispatchable_ = Dispatchable();
    NotifyChanged();
  }
  return Status::Ok();
}

std::bitset<kPgShards> PgShardLeases::Dispatchable() const {
  std::bitset<kPgShards> out;
  for (int s = 0; s < kPgShards; ++s) {
    out[static_cast<size_t>(s)] = MayDispatch(s);
  }
  return out;
}

void PgShardLeases::RunLeases() {
  std::unique_lock<std::mutex> lock(stop_mu_);
  while (!stopping_) {
    lock.unlock();
    const SteadyTime started = clock_.Now();
    Tick().IgnoreError();  // a round that failed is the next one's to do; deadlines run out
    // A deadline that ran out between rounds (renewals failing) and a lease renewed after it
    // had: the shards this node may dispatch changed without a claim or a loss.
    if (const std::bitset<kPgShards> now = Dispatchable(); now != dispatchable_) {
      dispatchable_ = now;
      NotifyChanged();
    }
    const Millis spent = std::chrono::duration_cast<Millis>(clock_.Now() - started);
    lock.lock();
    stop_cv_.wait_for(lock, std::max(Millis(10), options_.renew_every - spent),
                      [this] { return stopping_; });
  }
}

void PgShardLeases::RunListener() {
  bool lost = false;
  SteadyTime refreshed = clock_.Now();
  while (!stopped_.load()) {
    if (lost) {
      listener_.reset();
      if (!Reconnect(listener_) || !listener_->Run("LISTEN egress_wake").ok()) {
        std::unique_lock<std::mutex> lock(stop_mu_);
        stop_cv_.wait_for(lock, Millis(500), [this] { return stopping_; });
        continue;
      }
      lost = false;
      NotifyChanged();  // what was notified meanwhile was not heard: look again
    }
    if (after_round_ && clock_.Now() - refreshed >= options_.renew_every) {
      // Here, not on the leases' thread: its wait for a pool connection must not delay a renewal.
      after_round_();
      refreshed = clock_.Now();
    }
    auto heard = listener_->WaitForNotifications(200);
    if (!heard) {
      lost = true;
      continue;
    }
    // Entries "<shard>/<id>": those of shards this node does not dispatch are dropped unread,
    // as is one whose id is no delivery id (the channel is open to any session of the
    // database; one bad id would fail the read of all the others).
    std::vector<std::string> ids;
    for (const std::string& payload : *heard) {
      for (std::string& entry : Split(payload)) {
        const size_t slash = entry.find('/');
        int shard = -1;
        if (slash != std::string::npos) {
          std::from_chars(entry.data(), entry.data() + slash, shard);
        }
        if (MayDispatch(shard) && IsDeliveryId(std::string_view(entry).substr(slash + 1))) {
          ids.push_back(entry.substr(slash + 1));
        }
      }
    }
    if (ids.empty()) {
      continue;
    }
    std::function<void(std::vector<std::string>)> woken;
    {
      std::lock_guard<std::mutex> lock(mu_);
      woken = on_wake_;
    }
    if (woken) {
      woken(std::move(ids));
    }
  }
}

void PgShardLeases::Stop() {
  if (stopped_.exchange(true)) {
    return;  // stopped before (Close, then the destructor)
  }
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (leases_thread_.joinable()) {
    leases_thread_.join();
  }
  if (listener_thread_.joinable()) {
    listener_thread_.join();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& h : held_) {
      h.reset();
    }
    on_changed_ = nullptr;
    on_wake_ = nullptr;
  }
  if (conn_ && conn_->ok()) {
    // Released for the others to claim at once, not after the ttl.
    conn_
        ->Exec("UPDATE egress_shards SET expires_at = '-infinity' WHERE owner = $1",
               PgParams().Text(options_.node_id))
        .status()
        .IgnoreError();
    conn_->Exec("DELETE FROM egress_nodes WHERE node_id = $1", PgParams().Text(options_.node_id))
        .status()
        .IgnoreError();
  }
  conn_.reset();
  listener_.reset();
}

}  // namespace egress::storage
