// Pacing engine: scheduling decisions per second at 1k, 100k and 1M backlogged destinations, and
// bytes held per idle destination. Run: build/bench/scheduler_bench
//
// Every destination is a webhook paced at 1/s with an endless backlog; the fake clock jumps to
// each wake-up, so one "decision" here is a dispatch plus everything around it: the outcome, the
// next head's Offer(), its budget denial, its heap entry and its wake-up.

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "dispatcher/base/random.h"
#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"

namespace {

// Live heap bytes (usable sizes, so malloc's rounding counts; its 8-byte headers do not).
std::atomic<int64_t> g_live_bytes{0};

}  // namespace

void* operator new(size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) {
    throw std::bad_alloc();
  }
  g_live_bytes.fetch_add(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}

// The replaced operator new allocates with malloc, so free is the matching release.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  if (p != nullptr) {
    g_live_bytes.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
    std::free(p);
  }
}
#pragma GCC diagnostic pop

void operator delete(void* p, size_t) noexcept { operator delete(p); }

namespace {

using egress::FakeClock;
using egress::Platform;
using egress::SplitMixRandom;
using egress::pacing::Budget;
using egress::pacing::BudgetName;
using egress::pacing::Decision;
using egress::pacing::DeliveryOutcome;
using egress::pacing::DestinationId;
using egress::pacing::DestinationSpec;
using egress::pacing::MemoryBudgetStore;
using egress::pacing::Scheduler;
using egress::pacing::SchedulerOptions;
using egress::pacing::WorkItem;

constexpr int kTenants = 10;

struct Fleet {
  FakeClock clock;
  MemoryBudgetStore store;
  SplitMixRandom random{42};
  Scheduler scheduler{clock, store, random, SchedulerOptions{}};
  uint64_t sequence = 0;

  explicit Fleet(int64_t destinations) {
    for (int t = 0; t < kTenants; ++t) {
      Check(
          scheduler.SetTenantBudgets("tenant-" + std::to_string(t),
                                     {{BudgetName::kTenantEgress, {1'000'000'000, 1000, 1'000'000}},
                                      {BudgetName::kWebhookDestination, {1, 1000, 1}}}));
    }
    for (int64_t i = 0; i < destinations; ++i) {
      DestinationSpec spec;
      spec.tenant = "tenant-" + std::to_string(i % kTenants);
      spec.platform = Platform::kWebhook;
      spec.target = "https://hooks.example.test/endpoint/" + std::to_string(i);
      Offer(*scheduler.AddDestination(spec));
    }
  }

  static void Check(const egress::Status& status) {
    if (!status.ok()) {
      std::abort();
    }
  }

  void Offer(DestinationId id) {
    WorkItem item;
    item.sequence = ++sequence;
    // A 26-character ULID-shaped id, as the store makes (storage/delivery_id.h).
    item.id.assign(26, '0');  // one allocation, as a store's id string has
    item.id[1] = '1';
    item.id[2] = 'J';
    for (uint64_t n = item.sequence % 10000, i = 25; n > 0; n /= 10, --i) {
      item.id[i] = static_cast<char>('0' + n % 10);
    }
    Check(scheduler.Offer(id, std::move(item)));
  }

  // One dispatch (advancing the clock over waits), its outcome, and the next head.
  void Step() {
    while (true) {
      Decision decision = scheduler.Next();
      if (decision.kind == Decision::Kind::kWait) {
        clock.Advance(decision.wake_at - clock.Now());
        continue;
      }
      DeliveryOutcome ok;
      ok.http_status = 200;
      if (!scheduler.OnOutcome(decision.destination, decision.sequence, ok, {}).has_value()) {
        std::abort();
      }
      Offer(decision.destination);
      return;
    }
  }
};

void BM_Decisions(benchmark::State& state) {
  const int64_t destinations = state.range(0);
  Fleet fleet(destinations);
  // One full pass so every destination has a meter and a heap entry (steady state).
  for (int64_t i = 0; i < destinations; ++i) {
    fleet.Step();
  }
  for (auto _ : state) {
    fleet.Step();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["decisions_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Decisions)
    ->Arg(1'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Iterations(3'000'000)
    ->Unit(benchmark::kMillisecond);

// Bytes per destination that has sent and now waits, with its next head, on its meter: the
// destination slot, its head (a 26-byte id), its unique scope, its meter in the store, and its
// heap entry, including container slack.
void BM_MemoryPerIdleDestination(benchmark::State& state) {
  const int64_t destinations = state.range(0);
  for (auto _ : state) {
    const int64_t before = g_live_bytes.load();
    {
      Fleet fleet(destinations);
      for (int64_t i = 0; i < destinations; ++i) {
        fleet.Step();
      }
      const Decision idle = fleet.scheduler.Next();  // every destination now waits on time
      benchmark::DoNotOptimize(idle);
      const int64_t held = g_live_bytes.load() - before;
      state.counters["bytes_per_destination"] =
          static_cast<double>(held) / static_cast<double>(destinations);
    }
  }
}
BENCHMARK(BM_MemoryPerIdleDestination)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
