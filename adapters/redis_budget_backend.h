#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "adapters/redis_budget_scripts.h"
#include "adapters/redis_connection.h"
#include "adapters/shared_meter.h"
#include "dispatcher/pacing/shared_budget_backend.h"

namespace egress::adapters {

// The meters and parks of every budget in Redis, shared by every node using the same Redis and
// key prefix (docs/pacing.md, "Shared budgets"): each call is one atomic Lua script
// (redis_budget_scripts.h) sent with EVALSHA (EVAL when Redis lost its script cache), pipelined on
// one RedisConnection. Keys are "<prefix>m:<key hex>" (meter) and "<prefix>p:<key hex>" (park).
// Times are Redis TIME in microseconds; an interval is rounded up to whole microseconds (never
// faster than the budget).
//
// up() is the connection's: a script that fails on a live connection (an error reply) fails its
// call with kUnavailable but does not change the mode. All methods and callbacks run on the
// connection's loop; `connection` must outlive this object. Callbacks of calls still waiting when
// the connection is destroyed are dropped.
class RedisBudgetBackend final : public pacing::SharedBudgetBackend {
 public:
  RedisBudgetBackend(RedisConnection& connection, std::string key_prefix);

  void TakeAll(std::vector<pacing::Charge> charges, pacing::Nanos reserve_ahead,
               TakeCallback done) override;
  void Park(pacing::ScopeKey key, pacing::Nanos wait, pacing::ParkKind kind) override;
  void Unpark(pacing::ScopeKey key) override;
  void Rescale(pacing::ScopeKey key, const pacing::GcraParams& from,
               const pacing::GcraParams& to) override;
  void Sync(pacing::ScopeKey key, const pacing::GcraParams& params, int64_t available) override;
  bool up() const override { return connection_.up(); }

  // The same at a given Redis time in microseconds instead of Redis TIME (tests compare the
  // scripts with MemoryBudgetStore on one fake clock). `done` gets the script's status.
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
  // The key's view at `now_us`; parked_until is a steady time of 0 plus the park's wait.
  void InspectAtForTest(pacing::ScopeKey key, const pacing::GcraParams& params, int64_t now_us,
                        InspectCallback done);

  // Scripts run and failed so far.
  uint64_t calls() const { return calls_; }
  uint64_t failures() const { return failures_; }

 private:
  void Take(std::vector<pacing::Charge> charges, std::string now_us, pacing::Nanos reserve_ahead,
            TakeCallback done);
  void Eval(const RedisScript& script, std::vector<std::string> keys, std::vector<std::string> args,
            RedisConnection::Done done);
  void EvalStatus(const RedisScript& script, std::vector<std::string> keys,
                  std::vector<std::string> args, StatusCallback done);
  std::string MeterKey(pacing::ScopeKey key) const;
  std::string ParkKey(pacing::ScopeKey key) const;

  RedisConnection& connection_;
  std::string prefix_;
  uint64_t calls_ = 0;
  uint64_t failures_ = 0;
};

}  // namespace egress::adapters
