// Durable enqueue throughput of the RocksDB store: every enqueue is acknowledged after its WAL
// write is synced. Run: ./dev bench store   (or build/bench/store_bench)

#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <string>

#include <benchmark/benchmark.h>

#include "storage/rocks_queue_store.h"

namespace {

using egress::storage::NewDelivery;
using egress::storage::QueueStore;

std::string g_dir;
std::unique_ptr<QueueStore> g_store;
egress::storage::StoreStats g_before;
std::atomic<int64_t> g_clock{1'767'225'600'000};

NewDelivery Sample(int64_t n) {
  NewDelivery d;
  d.tenant = "tenant-" + std::to_string(n % 10);
  d.platform = "webhook";
  d.destination = "https://hooks.example.test/" + std::to_string(n % 1000);
  d.credential = "signing";
  d.payload = std::string(R"({"event":"message.created","text":")") + std::string(160, 'x') + "\"}";
  return d;
}

void OpenStore(const benchmark::State&) {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/egress-bench-XXXXXX";
  g_dir = mkdtemp(tmpl.data());
  auto store = egress::storage::OpenRocksQueueStore({.path = g_dir + "/store"}, g_clock.load());
  if (!store) {
    std::fprintf(stderr, "open: %s\n", store.error().ToString().c_str());
    std::abort();
  }
  g_store = std::move(*store);
  g_before = g_store->Stats();
}

void CloseStore(const benchmark::State&) {
  g_store.reset();
  std::filesystem::remove_all(g_dir);
}

void ReportSyncs(benchmark::State& state, int64_t deliveries) {
  if (state.thread_index() != 0) {
    return;
  }
  const auto after = g_store->Stats();
  const double writes = static_cast<double>(after.writes - g_before.writes);
  const double syncs = static_cast<double>(after.wal_syncs - g_before.wal_syncs);
  state.counters["writes_per_sync"] = syncs > 0 ? writes / syncs : 0;
  state.counters["fsyncs"] = syncs;
  (void)deliveries;
}

// One delivery per call, from 1, 8 or 64 producer threads; concurrent calls share fsyncs.
void BM_DurableEnqueue(benchmark::State& state) {
  int64_t n = state.thread_index() * 1'000'000'000LL;
  for (auto _ : state) {
    auto r = g_store->Enqueue(Sample(n++), g_clock.fetch_add(1));
    if (!r) {
      state.SkipWithError(r.error().ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
  ReportSyncs(state, state.iterations());
}
BENCHMARK(BM_DurableEnqueue)
    ->Setup(OpenStore)
    ->Teardown(CloseStore)
    ->Threads(1)
    ->Threads(8)
    ->Threads(64)
    ->UseRealTime()
    ->MinTime(2.0);

// Batches of 100 deliveries, each batch one synced write.
void BM_DurableEnqueueBatch100(benchmark::State& state) {
  int64_t n = state.thread_index() * 1'000'000'000LL;
  std::vector<NewDelivery> batch;
  for (auto _ : state) {
    state.PauseTiming();
    batch.clear();
    for (int i = 0; i < 100; ++i) {
      batch.push_back(Sample(n++));
    }
    state.ResumeTiming();
    auto r = g_store->EnqueueBatch(batch, g_clock.fetch_add(1));
    if (!r) {
      state.SkipWithError(r.error().ToString().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * 100);
  ReportSyncs(state, state.iterations() * 100);
}
BENCHMARK(BM_DurableEnqueueBatch100)
    ->Setup(OpenStore)
    ->Teardown(CloseStore)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime()
    ->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
