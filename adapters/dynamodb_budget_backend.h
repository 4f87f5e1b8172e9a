#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "adapters/dynamodb_client.h"
#include "adapters/shared_meter.h"
#include "dispatcher/base/clock.h"
#include "dispatcher/base/random.h"
#include "dispatcher/pacing/shared_budget_backend.h"

namespace egress::adapters {

// The meters and parks of every budget in one DynamoDB table, shared by every node using the
// same table and key prefix (docs/pacing.md, "Shared budgets"; across regions, one table in one
// region: a global table's replicas would each spend the budget, docs/deployment.md). DynamoDB runs
// no script, so a take is optimistic concurrency over versioned items:
//
//   1. one BatchGetItem (strongly consistent) reads the item of every scope of the path: its
//      arrival time "t", park "p" and "pk", and version "v";
//   2. the decision is made here (shared_meter.h: exactly the Redis scripts' arithmetic);
//   3. every meter it charges is written by an UpdateItem whose ConditionExpression is the
//      version read (or the item's absence), all at once.
//
// If a condition fails (another node wrote the meter since the read), the meters written are put
// back under their own new version and the take starts again from the read after a jittered
// wait of a few milliseconds (DynamoDB's unread keys: a little longer), at most four times;
// then it is denied for a few milliseconds (contention, not the budget). Parks, unparks and syncs
// are one UpdateItem each; a rescale reads, then writes under the version.
//
// Most takes skip the read: the backend remembers each item as it last read or wrote it, and a
// take whose items it knows (those it only checks for a park, known within kFreshRead) is decided
// from them and written under the remembered versions, one round trip. A condition that fails
// there only sends the take down the read path. A take the remembered items would deny is read
// first (another node may have unparked or synced). LeasedBudgetStore's slices make one take
// cover many sends.
//
// Times are the node's wall clock in microseconds since the Unix epoch (no DynamoDB clock exists):
// nodes must agree within a small skew, and a node whose clock is s ahead of the others sees each
// meter s later than they do, so it may send up to s × rate units early (docs/deployment.md).
//
// Versions are random (1 to 2^53), never counted up: an item deleted (Time to Live) or a table
// made again cannot bring back a version a node remembers.
//
// Items: "k" = "<prefix>m:<key hex>", and "x", the epoch second a day after the meter and its
// park are spent, for DynamoDB's Time to Live. up() is the client's. All methods and callbacks run
// on the client's loop; `client` and `clock` must outlive this object.
class DynamoBudgetBackend final : public pacing::SharedBudgetBackend {
 public:
  DynamoBudgetBackend(DynamoDbClient& client, const Clock& clock, std::string key_prefix);
  ~DynamoBudgetBackend() override { *alive_ = false; }

  void TakeAll(std::vector<pacing::Charge> charges, pacing::Nanos reserve_ahead,
               TakeCallback done) override;
  void Park(pacing::ScopeKey key, pacing::Nanos wait, pacing::ParkKind kind) override;
  void Unpark(pacing::ScopeKey key) override;
  void Rescale(pacing::ScopeKey key, const pacing::GcraParams& from,
               const pacing::GcraParams& to) override;
  void Sync(pacing::ScopeKey key, const pacing::GcraParams& params, int64_t available) override;
  bool up() const override { return client_.up(); }

  // The same at a given time in microseconds instead of the wall clock (tests compare them with
  // MemoryBudgetStore on one fake clock). `done` gets the call's status.
  using StatusCallback = std::function<void(Status)>;
  using InspectCallback = std::function<void(Result<pacing::MeterView>)>;
  void TakeAllAtForTest(std::vector<pacing::Charge> charges, int64_t now_us, TakeCallback done,
                        pacing::Nanos reserve_ahead = pacing::Nanos(0));
  void ParkAtForTest(pacing::ScopeKey key, pacing::Nanos wait, pacing::ParkKind kind,
                     int64_t now_us, StatusCallback done);
  void UnparkForTest(pacing::ScopeKey key, StatusCallback done);
  void RescaleAtForTest(pacing::ScopeKey key, const pacing::GcraParams& from,
                        const pacing::GcraParams& to, int64_t now_us, StatusCallback done);
  void SyncAtForTest(pacing::ScopeKey key, const pacing::GcraParams& params, int64_t available,
                     int64_t now_us, StatusCallback done);
  void InspectAtForTest(pacing::ScopeKey key, const pacing::GcraParams& params, int64_t now_us,
                        InspectCallback done);

  // Takes started again because another node wrote a meter between the read and the write.
  uint64_t conflicts() const { return conflicts_; }
  // Takes decided from remembered items (no read), and those of them a condition refused.
  uint64_t unread_takes() const { return unread_takes_; }
  uint64_t unread_misses() const { return unread_misses_; }

  // How long an item read stays good for a take that only checks its park (a park another node
  // sets reaches this node's takes within it; its leases are spent for up to lease_ttl anyway).
  static constexpr pacing::Nanos kFreshRead{50'000'000};
  // How long an item is remembered for a take that charges it (its version catches any change;
  // this bounds how long a node trusts what it saw at all).
  static constexpr pacing::Nanos kRememberFor{10'000'000'000};
  // Items remembered at most; past it the memory is cleared (reads refill it).
  static constexpr size_t kMaxRemembered = 65'536;
  // Versions are drawn from 1 to kMaxVersion - 1 (exact in a double).
  static constexpr int64_t kMaxVersion = int64_t{1} << 53;

 private:
  struct Item {
    SharedMeterState state;
    int64_t version = 0;  // 0: no item
  };
  struct Remembered {
    Item item;
    int64_t known_ns = 0;  // steady time it was read or written
  };

  void Take(std::vector<pacing::Charge> charges, std::optional<int64_t> now_us,
            pacing::Nanos reserve_ahead, int attempt, TakeCallback done);
  // The take from remembered items; false (nothing sent) when they do not serve.
  bool TakeUnread(std::vector<pacing::Charge>& charges, std::optional<int64_t> now_us,
                  pacing::Nanos reserve_ahead, TakeCallback& done);
  void Remember(pacing::ScopeKey key, const Item& item);
  // Take again after a short jittered wait (1 to 2^attempt ms; `floor` ms more when DynamoDB left
  // keys unread), so that nodes that collided do not collide again at once.
  void TakeAgain(std::vector<pacing::Charge> charges, std::optional<int64_t> now_us,
                 pacing::Nanos reserve_ahead, int attempt, int64_t floor_ms, TakeCallback done);
  void Forget(pacing::ScopeKey key) { remembered_.erase(key); }
  void Write(std::vector<pacing::Charge> charges, std::optional<int64_t> now_us,
             pacing::Nanos reserve_ahead, int attempt, std::vector<std::string> keys,
             std::vector<Item> items, std::vector<int64_t> new_tat, pacing::TakeResult result,
             TakeCallback done);
  void DoPark(pacing::ScopeKey key, pacing::Nanos wait, pacing::ParkKind kind,
              std::optional<int64_t> now_us, StatusCallback done);
  void DoUnpark(pacing::ScopeKey key, StatusCallback done);
  void DoRescale(pacing::ScopeKey key, const pacing::GcraParams& from, const pacing::GcraParams& to,
                 std::optional<int64_t> now_us, int attempt, StatusCallback done);
  void DoSync(pacing::ScopeKey key, const pacing::GcraParams& params, int64_t available,
              std::optional<int64_t> now_us, StatusCallback done);
  void Get(pacing::ScopeKey key, std::function<void(Result<Item>)> done);
  int64_t NowMicros(std::optional<int64_t> now_us) const;
  int64_t NextVersion();
  std::string ItemKey(pacing::ScopeKey key) const;

  DynamoDbClient& client_;
  const Clock& clock_;
  std::string prefix_;
  std::unordered_map<pacing::ScopeKey, Remembered> remembered_;
  SplitMixRandom versions_;
  uint64_t conflicts_ = 0;
  uint64_t unread_takes_ = 0;
  uint64_t unread_misses_ = 0;
  // Timers (TakeAgain) run only while this lives: the client may outlive it.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace egress::adapters
