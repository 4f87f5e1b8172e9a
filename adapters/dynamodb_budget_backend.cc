#include "adapters/dynamodb_budget_backend.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "dispatcher/base/saturating.h"

namespace egress::adapters {
namespace {

using nlohmann::json;
using pacing::Charge;
using pacing::GcraParams;
using pacing::Nanos;
using pacing::ParkKind;
using pacing::ScopeKey;

// Takes started again after a conflict before the take is denied as contended.
constexpr int kMaxTakeAttempts = 4;
// Microseconds a day: items expire (Time to Live) a day after what they hold is spent.
constexpr int64_t kDayMicros = 86'400'000'000;

json N(int64_t value) { return DynamoN(value); }

json KeyOf(const std::string& key) { return DynamoKeyOf(key); }

// The epoch second an item holding `until_us` may expire at.
int64_t ExpirySeconds(int64_t until_us) {
  return (std::clamp<int64_t>(until_us, 0, kMaxSharedTat) + kDayMicros) / 1'000'000;
}

// A park's write does not know the item's arrival time: its item may expire a week after the
// park ends (a meter of a budget whose meter runs further ahead than that outlives it only if
// another take writes it again first).
int64_t ParkExpirySeconds(int64_t until_us) {
  return ExpirySeconds(SatAdd(until_us, 6 * kDayMicros));
}

}  // namespace

DynamoBudgetBackend::DynamoBudgetBackend(DynamoDbClient& client, const Clock& clock,
                                         std::string key_prefix)
    : client_(client),
      clock_(clock),
      prefix_(std::move(key_prefix)),
      versions_(std::random_device{}() ^
                static_cast<uint64_t>(clock.WallNow().time_since_epoch().count())) {}

int64_t DynamoBudgetBackend::NextVersion() {
  return 1 + static_cast<int64_t>(versions_.Next() % static_cast<uint64_t>(kMaxVersion - 1));
}

std::string DynamoBudgetBackend::ItemKey(ScopeKey key) const {
  return fmt::format("{}m:{:016x}", prefix_, key);
}

int64_t DynamoBudgetBackend::NowMicros(std::optional<int64_t> now_us) const {
  if (now_us) {
    return *now_us;
  }
  return std::chrono::duration_cast<std::chrono::microseconds>(clock_.WallNow().time_since_epoch())
      .count();
}

namespace {

// An item read from the table; times out of range (a hostile or damaged item) are clamped, a
// value of the wrong type or a version out of range is kCorruption.
Result<SharedMeterState> StateOf(const json& item, int64_t* version) {
  Result<int64_t> tat = DynamoNumber(item, "t", 0);
  Result<int64_t> parked = DynamoNumber(item, "p", 0);
  Result<int64_t> kind = DynamoNumber(item, "pk", 0);
  Result<int64_t> v = DynamoNumber(item, "v", 0);
  for (const Result<int64_t>* r : {&tat, &parked, &kind, &v}) {
    if (!r->has_value()) {
      return r->error();
    }
  }
  if (item.contains("v") && (*v < 1 || *v >= DynamoBudgetBackend::kMaxVersion)) {
    return Status::Corruption("dynamodb item has a version out of range");
  }
  *version = *v;
  SharedMeterState state;
  state.tat_us = std::clamp<int64_t>(*tat, 0, kMaxSharedTat);
  state.parked_until_us = std::clamp<int64_t>(*parked, 0, kMaxSharedTat);
  state.park = ParkKindOf(*kind);
  return state;
}

// The condition that the item is still as read: its version, or its absence.
void ExpectVersion(json& update, int64_t version) {
  if (version == 0) {
    update["ConditionExpression"] = "attribute_not_exists(v)";
  } else {
    update["ConditionExpression"] = "v = :v";
    update["ExpressionAttributeValues"][":v"] = N(version);
  }
}

}  // namespace

void DynamoBudgetBackend::Get(ScopeKey key, std::function<void(Result<Item>)> done) {
  json get = {{"Key", KeyOf(ItemKey(key))}, {"ConsistentRead", true}};
  client_.Call("GetItem", std::move(get), [done = std::move(done)](Result<json> answer) {
    if (!answer) {
      done(answer.error());
      return;
    }
    Item item;
    auto found = answer->find("Item");
    if (found != answer->end()) {
      if (!found->is_object()) {
        done(Status::Corruption("dynamodb GetItem answered an item that is not an object"));
        return;
      }
      Result<SharedMeterState> state = StateOf(*found, &item.version);
      if (!state) {
        done(state.error());
        return;
      }
      item.state = *state;
    }
    done(item);
  });
}

void DynamoBudgetBackend::TakeAll(std::vector<Charge> charges, Nanos reserve_ahead,
                                  TakeCallback done) {
  Take(std::move(charges), std::nullopt, reserve_ahead, 1, std::move(done));
}

void DynamoBudgetBackend::TakeAllAtForTest(std::vector<Charge> charges, int64_t now_us,
                                           TakeCallback done, Nanos reserve_ahead) {
  Take(std::move(charges), now_us, reserve_ahead, 1, std::move(done));
}

void DynamoBudgetBackend::Take(std::vector<Charge> charges, std::optional<int64_t> now_us,
                               Nanos reserve_ahead, int attempt, TakeCallback done) {
  if (charges.size() > pacing::kMaxCharges) {
    done(Status::InvalidArgument("too many scopes in one charge"));
    return;
  }
  if (charges.empty()) {
    done(DecideSharedTake(charges, {}, NowMicros(now_us), 0).result);
    return;
  }
  if (attempt == 1 && TakeUnread(charges, now_us, reserve_ahead, done)) {
    return;
  }
  std::vector<std::string> keys;
  for (const Charge& charge : charges) {
    keys.push_back(ItemKey(charge.key));
  }
  std::vector<std::string> unique = keys;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  client_.Call(
      "BatchGetItem", BatchGetBody(client_.table(), unique),
      [this, charges = std::move(charges), now_us, reserve_ahead, attempt, keys = std::move(keys),
       done = std::move(done)](Result<json> answer) mutable {
        if (!answer) {
          done(answer.error());
          return;
        }
        // Keys DynamoDB left unread (throttled): read again, as after a conflict.
        Result<DynamoBatchRead> read = ParseBatchGet(*answer, client_.table());
        if (!read) {
          done(read.error());
          return;
        }
        const bool partial = read->partial;
        std::vector<Item> items(charges.size());
        if (!partial) {
          for (size_t i = 0; i < keys.size(); ++i) {
            auto found = read->items.find(keys[i]);
            if (found == read->items.end()) {
              continue;
            }
            Result<SharedMeterState> state = StateOf(found->second, &items[i].version);
            if (!state) {
              done(state.error());
              return;
            }
            items[i].state = *state;
          }
        }
        const int64_t now = NowMicros(now_us);
        if (partial) {
          ++conflicts_;
          if (attempt < kMaxTakeAttempts) {
            TakeAgain(std::move(charges), now_us, reserve_ahead, attempt + 1, 5, std::move(done));
          } else {
            pacing::TakeResult contended;
            contended.retry_after = Nanos(2'000'000);
            done(contended);
          }
          return;
        }
        std::vector<SharedMeterState> state(items.size());
        for (size_t i = 0; i < items.size(); ++i) {
          state[i] = items[i].state;
          Remember(charges[i].key, items[i]);  // an absent item is remembered as version 0
        }
        SharedTake take = DecideSharedTake(charges, state, now, reserve_ahead.count() / 1000);
        if (!take.result.allowed) {
          done(take.result);
          return;
        }
        Write(std::move(charges), now_us, reserve_ahead, attempt, std::move(keys), std::move(items),
              std::move(take.new_tat_us), take.result, std::move(done));
      });
}

void DynamoBudgetBackend::TakeAgain(std::vector<Charge> charges, std::optional<int64_t> now_us,
                                    Nanos reserve_ahead, int attempt, int64_t floor_ms,
                                    TakeCallback done) {
  const uint64_t span = uint64_t{1} << std::min(attempt, 6);
  const Millis wait(floor_ms + 1 + static_cast<int64_t>(versions_.Next() % span));
  client_.After(wait, [this, alive = std::weak_ptr<bool>(alive_), charges = std::move(charges),
                       now_us, reserve_ahead, attempt, done = std::move(done)]() mutable {
    if (auto a = alive.lock(); a && *a) {
      Take(std::move(charges), now_us, reserve_ahead, attempt, std::move(done));
    }
  });
}

void DynamoBudgetBackend::Remember(ScopeKey key, const Item& item) {
  if (remembered_.size() >= kMaxRemembered && !remembered_.contains(key)) {
    remembered_.clear();
  }
  remembered_[key] = Remembered{item, pacing::ToNanos(clock_.Now())};
}

bool DynamoBudgetBackend::TakeUnread(std::vector<Charge>& charges, std::optional<int64_t> now_us,
                                     Nanos reserve_ahead, TakeCallback& done) {
  const int64_t now_ns = pacing::ToNanos(clock_.Now());
  std::vector<Item> items(charges.size());
  for (size_t i = 0; i < charges.size(); ++i) {
    auto known = remembered_.find(charges[i].key);
    if (known == remembered_.end()) {
      return false;
    }
    // A meter charged is written under its version, which catches any change; a park only
    // checked must be recent.
    const int64_t age = now_ns - known->second.known_ns;
    if (age > kRememberFor.count() || (charges[i].cost <= 0 && age > kFreshRead.count())) {
      return false;
    }
    items[i] = known->second.item;
  }
  std::vector<SharedMeterState> state(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    state[i] = items[i].state;
  }
  SharedTake take =
      DecideSharedTake(charges, state, NowMicros(now_us), reserve_ahead.count() / 1000);
  if (!take.result.allowed) {
    return false;  // read first: another node may have unparked or synced since
  }
  ++unread_takes_;
  std::vector<std::string> keys;
  for (const Charge& charge : charges) {
    keys.push_back(ItemKey(charge.key));
  }
  Write(std::move(charges), now_us, reserve_ahead, 0, std::move(keys), std::move(items),
        std::move(take.new_tat_us), take.result, std::move(done));
  return true;
}

void DynamoBudgetBackend::Write(std::vector<Charge> charges, std::optional<int64_t> now_us,
                                Nanos reserve_ahead, int attempt, std::vector<std::string> keys,
                                std::vector<Item> items, std::vector<int64_t> new_tat,
                                pacing::TakeResult result, TakeCallback done) {
  // One write per key: a key charged twice keeps the last charge's arrival time.
  struct Pending {
    ScopeKey scope = 0;
    std::string key;
    int64_t old_tat = 0;
    int64_t old_version = 0;
    int64_t tat = 0;
    int64_t new_version = 0;
    bool written = false;
  };
  std::vector<Pending> writes;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (new_tat[i] < 0) {
      continue;
    }
    auto same = std::find_if(writes.begin(), writes.end(),
                             [&](const Pending& p) { return p.key == keys[i]; });
    if (same != writes.end()) {
      same->tat = new_tat[i];
    } else {
      writes.push_back({charges[i].key, keys[i], items[i].state.tat_us, items[i].version,
                        new_tat[i], NextVersion(), false});
    }
  }
  if (writes.empty()) {
    done(result);
    return;
  }
  struct Round {
    std::vector<Pending> writes;
    size_t answered = 0;
    Status failure;
    TakeCallback done;
  };
  auto round = std::make_shared<Round>();
  round->writes = std::move(writes);
  round->done = std::move(done);
  const size_t n = round->writes.size();
  for (size_t w = 0; w < n; ++w) {
    const Pending& p = round->writes[w];
    json update = {
        {"Key", KeyOf(p.key)},
        {"UpdateExpression", "SET t = :t, v = :nv, x = :x"},
        {"ExpressionAttributeValues",
         {{":t", N(p.tat)}, {":nv", N(p.new_version)}, {":x", N(ExpirySeconds(p.tat))}}}};
    ExpectVersion(update, p.old_version);
    client_.Call(
        "UpdateItem", std::move(update),
        [this, round, w, charges, now_us, reserve_ahead, attempt, result](Result<json> answer) {
          Pending& p = round->writes[w];
          if (answer.has_value()) {
            p.written = true;
            Item written;
            written.state.tat_us = p.tat;
            written.version = p.new_version;
            auto known = remembered_.find(p.scope);
            if (known != remembered_.end() && known->second.item.version == p.old_version) {
              written.state.parked_until_us = known->second.item.state.parked_until_us;
              written.state.park = known->second.item.state.park;
              Remember(p.scope, written);
            } else {
              Forget(p.scope);
            }
          } else {
            Forget(p.scope);
            if (round->failure.ok() || answer.error().code() != Status::Code::kFailedPrecondition) {
              round->failure = answer.error();
            }
          }
          if (++round->answered < round->writes.size()) {
            return;
          }
          if (round->failure.ok()) {
            round->done(result);
            return;
          }
          // Put back what this take wrote, under the version it wrote (a later writer's value
          // stays: the meter then counts units never sent, which only slows it).
          for (const Pending& p : round->writes) {
            if (!p.written) {
              continue;
            }
            json undo = {
                {"Key", KeyOf(p.key)},
                {"UpdateExpression", "SET t = :t, v = :rv"},
                {"ConditionExpression", "v = :nv"},
                {"ExpressionAttributeValues",
                 {{":t", N(p.old_tat)}, {":rv", N(NextVersion())}, {":nv", N(p.new_version)}}}};
            client_.Call("UpdateItem", std::move(undo), [](Result<json>) {});
            Forget(p.scope);
          }
          if (round->failure.code() != Status::Code::kFailedPrecondition) {
            round->done(round->failure);
            return;
          }
          // A take decided from remembered items (attempt 0) reads now; one that read, again.
          ++(attempt == 0 ? unread_misses_ : conflicts_);
          if (attempt == 0) {
            // Remembered items were stale: read now, no wait.
            Take(charges, now_us, reserve_ahead, 1, std::move(round->done));
            return;
          }
          if (attempt < kMaxTakeAttempts) {
            TakeAgain(charges, now_us, reserve_ahead, attempt + 1, 0, std::move(round->done));
            return;
          }
          pacing::TakeResult contended;
          contended.retry_after = Nanos(2'000'000);
          round->done(contended);
        });
  }
}

void DynamoBudgetBackend::Park(ScopeKey key, Nanos wait, ParkKind kind) {
  DoPark(key, wait, kind, std::nullopt, nullptr);
}

void DynamoBudgetBackend::ParkAtForTest(ScopeKey key, Nanos wait, ParkKind kind, int64_t now_us,
                                        StatusCallback done) {
  DoPark(key, wait, kind, now_us, std::move(done));
}

void DynamoBudgetBackend::DoPark(ScopeKey key, Nanos wait, ParkKind kind,
                                 std::optional<int64_t> now_us, StatusCallback done) {
  Forget(key);  // its version changes
  const int64_t until = std::min(NowMicros(now_us) + WaitMicros(wait), kMaxSharedTat);
  // A later park wins; an earlier one is refused by the condition, which is no failure.
  json update = {{"Key", KeyOf(ItemKey(key))},
                 {"UpdateExpression", "SET p = :p, pk = :pk, v = :nv, x = :x"},
                 {"ConditionExpression", "attribute_not_exists(p) OR p < :p"},
                 {"ExpressionAttributeValues",
                  {{":p", N(until)},
                   {":pk", N(static_cast<int>(kind))},
                   {":nv", N(NextVersion())},
                   {":x", N(ParkExpirySeconds(until))}}}};
  client_.Call("UpdateItem", std::move(update), [done = std::move(done)](Result<json> answer) {
    if (done) {
      done(answer.has_value() || answer.error().code() == Status::Code::kFailedPrecondition
               ? Status::Ok()
               : answer.error());
    }
  });
}

void DynamoBudgetBackend::Unpark(ScopeKey key) { DoUnpark(key, nullptr); }

void DynamoBudgetBackend::UnparkForTest(ScopeKey key, StatusCallback done) {
  DoUnpark(key, std::move(done));
}

void DynamoBudgetBackend::DoUnpark(ScopeKey key, StatusCallback done) {
  Forget(key);  // its version changes
  json update = {{"Key", KeyOf(ItemKey(key))},
                 {"UpdateExpression", "REMOVE p, pk SET v = :nv"},
                 {"ConditionExpression", "attribute_exists(p)"},
                 {"ExpressionAttributeValues", {{":nv", N(NextVersion())}}}};
  client_.Call("UpdateItem", std::move(update), [done = std::move(done)](Result<json> answer) {
    if (done) {
      done(answer.has_value() || answer.error().code() == Status::Code::kFailedPrecondition
               ? Status::Ok()
               : answer.error());
    }
  });
}

void DynamoBudgetBackend::Rescale(ScopeKey key, const GcraParams& from, const GcraParams& to) {
  DoRescale(key, from, to, std::nullopt, 1, nullptr);
}

void DynamoBudgetBackend::RescaleAtForTest(ScopeKey key, const GcraParams& from,
                                           const GcraParams& to, int64_t now_us,
                                           StatusCallback done) {
  DoRescale(key, from, to, now_us, 1, std::move(done));
}

void DynamoBudgetBackend::DoRescale(ScopeKey key, const GcraParams& from, const GcraParams& to,
                                    std::optional<int64_t> now_us, int attempt,
                                    StatusCallback done) {
  Forget(key);  // its version changes
  Get(key, [this, key, from, to, now_us, attempt, done = std::move(done)](Result<Item> item) {
    if (!item) {
      if (done) {
        done(item.error());
      }
      return;
    }
    const int64_t tat = RescaledTat(item->state.tat_us, from, to, NowMicros(now_us));
    if (tat < 0) {
      if (done) {
        done(Status::Ok());
      }
      return;
    }
    const int64_t version = NextVersion();
    json update = {{"Key", KeyOf(ItemKey(key))},
                   {"UpdateExpression", "SET t = :t, v = :nv, x = :x"},
                   {"ExpressionAttributeValues",
                    {{":t", N(tat)}, {":nv", N(version)}, {":x", N(ExpirySeconds(tat))}}}};
    ExpectVersion(update, item->version);
    client_.Call("UpdateItem", std::move(update),
                 [this, key, from, to, now_us, attempt, version, done](Result<json> answer) {
                   if (answer || answer.error().code() != Status::Code::kFailedPrecondition) {
                     if (done) {
                       done(answer.has_value() ? Status::Ok() : answer.error());
                     }
                     return;
                   }
                   // A write the client tried again after a 5xx may have gone through the first
                   // time: the item then holds this very version, and the rescale is done (not done
                   // twice).
                   Get(key,
                       [this, key, from, to, now_us, attempt, version, done](Result<Item> now) {
                         if (now && now->version == version) {
                           if (done) {
                             done(Status::Ok());
                           }
                         } else if (attempt < kMaxTakeAttempts) {
                           ++conflicts_;
                           DoRescale(key, from, to, now_us, attempt + 1, done);
                         } else if (done) {
                           done(Status::Unavailable("dynamodb rescale contended"));
                         }
                       });
                 });
  });
}

void DynamoBudgetBackend::Sync(ScopeKey key, const GcraParams& params, int64_t available) {
  DoSync(key, params, available, std::nullopt, nullptr);
}

void DynamoBudgetBackend::SyncAtForTest(ScopeKey key, const GcraParams& params, int64_t available,
                                        int64_t now_us, StatusCallback done) {
  DoSync(key, params, available, now_us, std::move(done));
}

void DynamoBudgetBackend::DoSync(ScopeKey key, const GcraParams& params, int64_t available,
                                 std::optional<int64_t> now_us, StatusCallback done) {
  Forget(key);  // its version changes
  const int64_t tat = SyncedTat(params, available, NowMicros(now_us));
  json update = {{"Key", KeyOf(ItemKey(key))},
                 {"UpdateExpression", "SET t = :t, v = :nv, x = :x"},
                 {"ExpressionAttributeValues",
                  {{":t", N(tat)}, {":nv", N(NextVersion())}, {":x", N(ExpirySeconds(tat))}}}};
  client_.Call("UpdateItem", std::move(update), [done = std::move(done)](Result<json> answer) {
    if (done) {
      done(answer.has_value() ? Status::Ok() : answer.error());
    }
  });
}

void DynamoBudgetBackend::InspectAtForTest(ScopeKey key, const GcraParams& params, int64_t now_us,
                                           InspectCallback done) {
  Get(key, [params, now_us, done = std::move(done)](Result<Item> item) {
    if (!item) {
      done(item.error());
      return;
    }
    done(InspectSharedMeter(item->state, params, now_us));
  });
}

}  // namespace egress::adapters
