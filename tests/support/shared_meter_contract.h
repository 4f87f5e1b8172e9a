#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/base/result.h"
#include "dispatcher/pacing/budget_store.h"
#include "dispatcher/pacing/memory_budget_store.h"

namespace egress {

// A shared budget store under test, driven at given times in whole microseconds (the shared
// stores' unit): the Redis scripts, the DynamoDB backend, or the arithmetic they share.
struct SharedMeterUnderTest {
  std::function<Result<pacing::TakeResult>(const std::vector<pacing::Charge>&, int64_t now_us)>
      take;
  std::function<Status(pacing::ScopeKey, pacing::Nanos wait, pacing::ParkKind, int64_t now_us)>
      park;
  std::function<Status(pacing::ScopeKey)> unpark;
  std::function<Status(pacing::ScopeKey, const pacing::GcraParams&, int64_t available,
                       int64_t now_us)>
      sync;
  std::function<Status(pacing::ScopeKey, const pacing::GcraParams& from,
                       const pacing::GcraParams& to, int64_t now_us)>
      rescale;
  // parked_until: a steady time of 0 plus the park's wait.
  std::function<Result<pacing::MeterView>(pacing::ScopeKey, const pacing::GcraParams&,
                                          int64_t now_us)>
      inspect;
};

// `backend` (RedisBudgetBackend or DynamoBudgetBackend: the same ...AtForTest calls, answered
// later on a loop) as a store under test; `run_until(done)` runs the loop until done() (bounded)
// and returns done().
template <typename Backend, typename RunUntil>
SharedMeterUnderTest AsyncBackendUnderTest(Backend& backend, RunUntil run_until) {
  auto status = [run_until](const std::function<void(std::function<void(Status)>)>& call) {
    std::optional<Status> status;
    call([&](Status s) { status = s; });
    EXPECT_TRUE(run_until([&] { return status.has_value(); }));
    return status.value_or(Status::TimedOut("no answer"));
  };
  SharedMeterUnderTest store;
  store.take = [&backend, run_until](const std::vector<pacing::Charge>& charges, int64_t now_us) {
    std::optional<Result<pacing::TakeResult>> answer;
    backend.TakeAllAtForTest(charges, now_us,
                             [&](Result<pacing::TakeResult> r) { answer = std::move(r); });
    EXPECT_TRUE(run_until([&] { return answer.has_value(); }));
    return answer.value_or(Status::TimedOut("no answer"));
  };
  store.park = [&backend, status](pacing::ScopeKey key, pacing::Nanos wait, pacing::ParkKind kind,
                                  int64_t now_us) {
    return status([&](auto done) { backend.ParkAtForTest(key, wait, kind, now_us, done); });
  };
  store.unpark = [&backend, status](pacing::ScopeKey key) {
    return status([&](auto done) { backend.UnparkForTest(key, done); });
  };
  store.sync = [&backend, status](pacing::ScopeKey key, const pacing::GcraParams& params,
                                  int64_t available, int64_t now_us) {
    return status([&](auto done) { backend.SyncAtForTest(key, params, available, now_us, done); });
  };
  store.rescale = [&backend, status](pacing::ScopeKey key, const pacing::GcraParams& from,
                                     const pacing::GcraParams& to, int64_t now_us) {
    return status([&](auto done) { backend.RescaleAtForTest(key, from, to, now_us, done); });
  };
  store.inspect = [&backend, run_until](pacing::ScopeKey key, const pacing::GcraParams& params,
                                        int64_t now_us) {
    std::optional<Result<pacing::MeterView>> got;
    backend.InspectAtForTest(key, params, now_us,
                             [&](Result<pacing::MeterView> v) { got = std::move(v); });
    EXPECT_TRUE(run_until([&] { return got.has_value(); }));
    return got.value_or(Status::TimedOut("no answer"));
  };
  return store;
}

// Verifies that `store` decides exactly as MemoryBudgetStore on the same random sequence (from
// `seed`) of `steps` charges over shared scopes, parks, unparks, syncs, rescales and inspections,
// and that the sequence exercised both answers.
inline void ExpectDecidesAsTheMemoryStore(const SharedMeterUnderTest& store, uint64_t seed,
                                          int steps) {
  using pacing::Charge;
  using pacing::GcraParams;
  using pacing::Nanos;
  using pacing::ParkKind;
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  pacing::MemoryBudgetStore memory;
  constexpr int kKeys = 6;
  std::vector<GcraParams> params(kKeys);
  const int64_t intervals[] = {1'000'000, 3'000'000, 21'000'000, 200'000'000, 1'000'000'000};
  for (int k = 0; k < kKeys; ++k) {
    params[k].interval_ns = intervals[rng() % 5];
    params[k].depth = 1 + static_cast<int64_t>(rng() % 5);
  }
  const pacing::ScopeKey base_key = 0x1234'0000'0000'0000ULL + seed * 100;
  int64_t now_ns = 1'000'000'000'000;  // whole microseconds throughout
  int allowed = 0;
  int denied = 0;
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE(step);
    now_ns += static_cast<int64_t>(rng() % 40'000) * 1000;
    const int64_t now_us = now_ns / 1000;
    const SteadyTime now = pacing::FromNanos(now_ns);
    const int op = static_cast<int>(rng() % 100);
    const int k = static_cast<int>(rng() % kKeys);
    const pacing::ScopeKey key = base_key + k;
    if (op < 70) {
      std::vector<Charge> charges;
      const int n = 1 + static_cast<int>(rng() % 3);
      for (int i = 0; i < n; ++i) {
        const int j = (k + i * 2) % kKeys;
        charges.push_back(
            Charge{base_key + j, params[j], 1 + static_cast<int64_t>(rng() % 10 == 0 ? 2 : 0)});
      }
      Result<pacing::TakeResult> want = memory.TakeAll(charges, now);
      ASSERT_TRUE(want.has_value());
      Result<pacing::TakeResult> got = store.take(charges, now_us);
      ASSERT_TRUE(got.has_value()) << got.error().message();
      ASSERT_EQ(got->allowed, want->allowed);
      if (want->allowed) {
        ++allowed;
        EXPECT_EQ(got->remaining, want->remaining);
        EXPECT_EQ(got->reset_after, want->reset_after);
      } else {
        ++denied;
        EXPECT_EQ(got->denied_index, want->denied_index);
        EXPECT_EQ(got->retry_after, want->retry_after);
        EXPECT_EQ(got->park, want->park);
      }
    } else if (op < 80) {
      const Nanos wait(static_cast<int64_t>(rng() % 300'000) * 1000);
      const ParkKind kind = rng() % 2 == 0 ? ParkKind::kRetryAfter : ParkKind::kRemainingZero;
      ASSERT_TRUE(memory.Park(key, now + wait, kind).ok());
      Status st = store.park(key, wait, kind, now_us);
      ASSERT_TRUE(st.ok()) << st.message();
    } else if (op < 84) {
      ASSERT_TRUE(memory.Unpark(key).ok());
      Status st = store.unpark(key);
      ASSERT_TRUE(st.ok()) << st.message();
    } else if (op < 90) {
      const int64_t available = static_cast<int64_t>(rng() % 7) - 1;
      ASSERT_TRUE(memory.Sync(key, params[k], available, now).ok());
      Status st = store.sync(key, params[k], available, now_us);
      ASSERT_TRUE(st.ok()) << st.message();
    } else if (op < 94 && params[k].interval_ns < 500'000'000) {
      GcraParams to = params[k];
      to.interval_ns *= 2;
      ASSERT_TRUE(memory.Rescale(key, params[k], to, now).ok());
      Status st = store.rescale(key, params[k], to, now_us);
      ASSERT_TRUE(st.ok()) << st.message();
      params[k] = to;
    } else {
      Result<pacing::MeterView> want = memory.Inspect(key, params[k], now);
      ASSERT_TRUE(want.has_value());
      Result<pacing::MeterView> got = store.inspect(key, params[k], now_us);
      ASSERT_TRUE(got.has_value()) << got.error().message();
      EXPECT_EQ(got->remaining, want->remaining);
      EXPECT_EQ(got->reset_after, want->reset_after);
      EXPECT_EQ(got->park, want->park);
      if (want->park != ParkKind::kNone) {
        EXPECT_EQ(pacing::ToNanos(got->parked_until), pacing::ToNanos(want->parked_until) - now_ns);
      }
    }
  }
  EXPECT_GT(allowed, steps / 12);
  EXPECT_GT(denied, steps / 12);
}

}  // namespace egress
