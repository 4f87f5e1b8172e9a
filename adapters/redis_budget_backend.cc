#include "adapters/redis_budget_backend.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace egress::adapters {
namespace {

using pacing::Charge;
using pacing::GcraParams;
using pacing::Nanos;
using pacing::ParkKind;
using pacing::ScopeKey;

// The integers of a script's array answer; kCorruption for any other shape.
Result<std::vector<int64_t>> Integers(const RedisReply& reply, size_t count) {
  if (reply.type == RedisReply::Type::kError) {
    return Status::Unavailable("redis script failed: " + reply.text.substr(0, 200));
  }
  if (reply.type != RedisReply::Type::kArray || reply.elements.size() != count) {
    return Status::Corruption("redis script answered an unexpected shape");
  }
  std::vector<int64_t> values;
  for (const RedisReply& element : reply.elements) {
    if (element.type != RedisReply::Type::kInteger) {
      return Status::Corruption("redis script answered a non-integer");
    }
    values.push_back(element.integer);
  }
  return values;
}

}  // namespace

RedisBudgetBackend::RedisBudgetBackend(RedisConnection& connection, std::string key_prefix)
    : connection_(connection), prefix_(std::move(key_prefix)) {}

std::string RedisBudgetBackend::MeterKey(ScopeKey key) const {
  return fmt::format("{}m:{:016x}", prefix_, key);
}

std::string RedisBudgetBackend::ParkKey(ScopeKey key) const {
  return fmt::format("{}p:{:016x}", prefix_, key);
}

void RedisBudgetBackend::Eval(const RedisScript& script, std::vector<std::string> keys,
                              std::vector<std::string> args, RedisConnection::Done done) {
  ++calls_;
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("EVALSHA");
  argv.push_back(script.sha1);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> retry = argv;
  retry[0] = "EVAL";
  retry[1] = std::string(script.text);
  connection_.Command(std::move(argv), [this, retry = std::move(retry),
                                        done = std::move(done)](Result<RedisReply> reply) mutable {
    if (reply.has_value() && reply->type == RedisReply::Type::kError &&
        reply->text.starts_with("NOSCRIPT")) {
      connection_.Command(
          std::move(retry), [this, done = std::move(done)](Result<RedisReply> again) mutable {
            const bool failed = !again.has_value() || again->type == RedisReply::Type::kError;
            failures_ += failed ? 1 : 0;
            done(std::move(again));
          });
      return;
    }
    const bool failed = !reply.has_value() || reply->type == RedisReply::Type::kError;
    failures_ += failed ? 1 : 0;
    done(std::move(reply));
  });
}

void RedisBudgetBackend::EvalStatus(const RedisScript& script, std::vector<std::string> keys,
                                    std::vector<std::string> args, StatusCallback done) {
  Eval(script, std::move(keys), std::move(args),
       [done = std::move(done)](Result<RedisReply> reply) {
         if (!done) {
           return;
         }
         if (!reply) {
           done(reply.error());
         } else if (reply->type == RedisReply::Type::kError) {
           done(Status::Unavailable("redis script failed: " + reply->text.substr(0, 200)));
         } else {
           done(Status::Ok());
         }
       });
}

void RedisBudgetBackend::Take(std::vector<Charge> charges, std::string now_us, Nanos reserve_ahead,
                              TakeCallback done) {
  if (charges.size() > pacing::kMaxCharges) {
    done(Status::InvalidArgument("too many scopes in one charge"));
    return;
  }
  std::vector<std::string> keys;
  std::vector<std::string> args;
  keys.reserve(charges.size() * 2);
  for (const Charge& charge : charges) {
    keys.push_back(MeterKey(charge.key));
  }
  for (const Charge& charge : charges) {
    keys.push_back(ParkKey(charge.key));
  }
  args.push_back(std::to_string(charges.size()));
  args.push_back(std::move(now_us));
  args.push_back(std::to_string(reserve_ahead.count() / 1000));  // never ahead by more
  for (const Charge& charge : charges) {
    args.push_back(std::to_string(IntervalMicros(charge.params)));
    args.push_back(std::to_string(charge.params.depth));
    args.push_back(std::to_string(std::max<int64_t>(0, charge.cost)));
  }
  const size_t n = charges.size();
  Eval(TakeScript(), std::move(keys), std::move(args),
       [n, done = std::move(done)](Result<RedisReply> reply) {
         if (!reply) {
           done(reply.error());
           return;
         }
         Result<std::vector<int64_t>> v = Integers(*reply, 6);
         if (!v) {
           done(v.error());
           return;
         }
         const std::vector<int64_t>& a = *v;
         pacing::TakeResult result;
         result.allowed = a[0] == 1;
         if (!result.allowed) {
           if (a[1] < 0 || static_cast<size_t>(a[1]) >= n) {
             done(Status::Corruption("redis script denied a scope out of range"));
             return;
           }
           result.denied_index = static_cast<size_t>(a[1]);
           result.retry_after = Nanos(SatMul(std::max<int64_t>(0, a[2]), 1000));
           result.park = ParkKindOf(a[3]);
         } else {
           result.retry_after = Nanos(SatMul(std::max<int64_t>(0, a[2]), 1000));
           result.remaining = std::max<int64_t>(0, a[4]);
           result.reset_after = Nanos(SatMul(std::max<int64_t>(0, a[5]), 1000));
         }
         done(result);
       });
}

void RedisBudgetBackend::TakeAll(std::vector<Charge> charges, Nanos reserve_ahead,
                                 TakeCallback done) {
  Take(std::move(charges), "", reserve_ahead, std::move(done));
}

void RedisBudgetBackend::TakeAllAtForTest(std::vector<Charge> charges, int64_t now_us,
                                          TakeCallback done, Nanos reserve_ahead) {
  Take(std::move(charges), std::to_string(now_us), reserve_ahead, std::move(done));
}

void RedisBudgetBackend::Park(ScopeKey key, Nanos wait, ParkKind kind) {
  EvalStatus(ParkScript(), {ParkKey(key)},
             {std::to_string(WaitMicros(wait)), std::to_string(static_cast<int>(kind)), ""},
             nullptr);
}

void RedisBudgetBackend::ParkAtForTest(ScopeKey key, Nanos wait, ParkKind kind, int64_t now_us,
                                       StatusCallback done) {
  EvalStatus(ParkScript(), {ParkKey(key)},
             {std::to_string(WaitMicros(wait)), std::to_string(static_cast<int>(kind)),
              std::to_string(now_us)},
             std::move(done));
}

void RedisBudgetBackend::Unpark(ScopeKey key) {
  EvalStatus(UnparkScript(), {ParkKey(key)}, {}, nullptr);
}

void RedisBudgetBackend::UnparkForTest(ScopeKey key, StatusCallback done) {
  EvalStatus(UnparkScript(), {ParkKey(key)}, {}, std::move(done));
}

void RedisBudgetBackend::Rescale(ScopeKey key, const GcraParams& from, const GcraParams& to) {
  EvalStatus(RescaleScript(), {MeterKey(key)},
             {std::to_string(IntervalMicros(from)), std::to_string(IntervalMicros(to)), ""},
             nullptr);
}

void RedisBudgetBackend::RescaleAtForTest(ScopeKey key, const GcraParams& from,
                                          const GcraParams& to, int64_t now_us,
                                          StatusCallback done) {
  EvalStatus(RescaleScript(), {MeterKey(key)},
             {std::to_string(IntervalMicros(from)), std::to_string(IntervalMicros(to)),
              std::to_string(now_us)},
             std::move(done));
}

void RedisBudgetBackend::Sync(ScopeKey key, const GcraParams& params, int64_t available) {
  EvalStatus(SyncScript(), {MeterKey(key)},
             {std::to_string(IntervalMicros(params)), std::to_string(params.depth),
              std::to_string(available), ""},
             nullptr);
}

void RedisBudgetBackend::SyncAtForTest(ScopeKey key, const GcraParams& params, int64_t available,
                                       int64_t now_us, StatusCallback done) {
  EvalStatus(SyncScript(), {MeterKey(key)},
             {std::to_string(IntervalMicros(params)), std::to_string(params.depth),
              std::to_string(available), std::to_string(now_us)},
             std::move(done));
}

void RedisBudgetBackend::InspectAtForTest(ScopeKey key, const GcraParams& params, int64_t now_us,
                                          InspectCallback done) {
  Eval(InspectScript(), {MeterKey(key), ParkKey(key)},
       {std::to_string(IntervalMicros(params)), std::to_string(params.depth),
        std::to_string(now_us)},
       [done = std::move(done)](Result<RedisReply> reply) {
         if (!reply) {
           done(reply.error());
           return;
         }
         Result<std::vector<int64_t>> v = Integers(*reply, 4);
         if (!v) {
           done(v.error());
           return;
         }
         pacing::MeterView view;
         view.remaining = (*v)[0];
         view.reset_after = Nanos(SatMul((*v)[1], 1000));
         if ((*v)[2] > 0) {
           view.parked_until = pacing::FromNanos(SatMul((*v)[2], 1000));
           view.park = ParkKindOf((*v)[3]);
         }
         done(view);
       });
}

}  // namespace egress::adapters
