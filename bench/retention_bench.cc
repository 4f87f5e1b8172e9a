// Retention over simulated days: a steady load goes through a real RocksDB store (intake, lease,
// delivered or dead outcome) while the time handed to the store moves in simulated time, and the
// retention pass (dispatcher/service/retention.h, RunRetentionPass) runs on the simulated
// interval. Prints, per simulated day, the records the store keeps and its size on disk
// (QueueStore::Stats().disk_bytes, what relay_egress_store_bytes exports): with retention the
// size levels off once the longest age has passed. bench/README.md, "Retention".
//
// The default run is a smoke test (4 days, 300 an hour, ages of 1 and 2 days; ctest runs it
// with --check). The recorded run uses the service's default ages:
//   build/bench/retention_bench --days 45 --per-hour 2000 --step-minutes 10
//       --delivered 7d --cancelled 7d --dead 30d --idempotency 24h        (one command line)
//
// Every write is synced as in the service (intake and outcomes; the purge's are not), so a long
// run takes many minutes on a loaded 2-core VM. --check exits 1 when a class keeps more records
// than its age allows (the counts are exact; sizes on disk vary with compaction and are only
// printed).

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/duration.h"
#include "dispatcher/service/retention.h"
#include "storage/rocks_queue_store.h"

namespace {

using egress::storage::DeliveryState;
using egress::storage::NewDelivery;
using egress::storage::QueueStore;
using egress::storage::StateChange;

constexpr int64_t kT0 = 1'767'225'600'000;  // 2026-01-01T00:00:00Z
constexpr int64_t kMinute = 60'000;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;

struct Args {
  int64_t days = 4;
  int64_t per_hour = 300;
  size_t payload = 1024;
  int64_t dead_percent = 5;    // of deliveries, the rest are delivered
  int64_t keyed_percent = 50;  // with an idempotency key
  int64_t step_minutes = 30;   // intake and outcomes are written once per step
  egress::storage::RetentionPolicy policy{
      .delivered_ms = kDay, .cancelled_ms = kDay, .dead_ms = 2 * kDay, .idempotency_ms = 6 * kHour};
  int64_t interval_ms = kMinute;
  size_t slice = 1000;
  bool check = false;
  std::string dir;  // default: a fresh directory under the system's temp directory, removed
};

bool ParseArgs(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--check") {
      a.check = true;
      continue;
    }
    if (flag.starts_with("--benchmark_")) {
      continue;  // ./dev bench passes Google Benchmark's flags to every *_bench program
    }
    if (i + 1 == argc) {
      std::fprintf(stderr, "%s needs a value\n", argv[i]);
      return false;
    }
    const std::string value = argv[++i];
    auto duration = [&](int64_t& out) {
      auto d = egress::config::ParseDuration(value);
      if (!d) {
        std::fprintf(stderr, "%s: %s\n", argv[i - 1], d.error().message().c_str());
        return false;
      }
      out = d->count();
      return true;
    };
    auto number = [&](int64_t& out) {
      char* end = nullptr;
      out = std::strtoll(value.c_str(), &end, 10);
      if (*end != '\0' || out < 0) {
        std::fprintf(stderr, "%s: not a non-negative integer: %s\n", argv[i - 1], value.c_str());
        return false;
      }
      return true;
    };
    int64_t n = 0;
    bool ok = true;
    if (flag == "--days") {
      ok = number(a.days);
    } else if (flag == "--per-hour") {
      ok = number(a.per_hour);
    } else if (flag == "--payload") {
      ok = number(n);
      a.payload = static_cast<size_t>(n);
    } else if (flag == "--dead-percent") {
      ok = number(a.dead_percent);
    } else if (flag == "--keyed-percent") {
      ok = number(a.keyed_percent);
    } else if (flag == "--step-minutes") {
      ok = number(a.step_minutes) && a.step_minutes > 0;
    } else if (flag == "--slice") {
      ok = number(n) && n > 0;
      a.slice = static_cast<size_t>(n);
    } else if (flag == "--delivered") {
      ok = duration(a.policy.delivered_ms);
    } else if (flag == "--cancelled") {
      ok = duration(a.policy.cancelled_ms);
    } else if (flag == "--dead") {
      ok = duration(a.policy.dead_ms);
    } else if (flag == "--idempotency") {
      ok = duration(a.policy.idempotency_ms);
    } else if (flag == "--interval") {
      ok = duration(a.interval_ms) && a.interval_ms > 0;
    } else if (flag == "--dir") {
      a.dir = value;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i - 1]);
      return false;
    }
    if (!ok) {
      return false;
    }
  }
  return true;
}

// Text that compresses about as little as base64 does (RocksDB compresses its tables with
// Snappy: a run of one letter would take almost no space on disk and flatter every figure).
void AppendNoise(std::string& out, size_t n, uint64_t seed) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    out.push_back(kAlphabet[(x * 0x2545F4914F6CDD1DULL) >> 58]);
  }
}

NewDelivery Sample(const Args& a, int64_t n) {
  NewDelivery d;
  d.tenant = "tenant-" + std::to_string(n % 10);
  d.platform = "webhook";
  d.destination = "https://hooks.example.test/" + std::to_string(n % 100);
  d.credential = "signing";
  d.payload =
      std::string(R"({"event":"message.created","n":)") + std::to_string(n) + R"(,"text":")";
  if (d.payload.size() + 2 < a.payload) {
    AppendNoise(d.payload, a.payload - d.payload.size() - 2, static_cast<uint64_t>(n));
  }
  d.payload += "\"}";
  if (n % 100 < a.keyed_percent) {
    d.idempotency_key = "order-" + std::to_string(n);
  }
  return d;
}

[[noreturn]] void Fail(const char* what, const egress::Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  std::exit(2);
}

double Mib(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, a)) {
    return 2;
  }
  const bool own_dir = a.dir.empty();
  if (own_dir) {
    std::string tmpl =
        std::filesystem::temp_directory_path().string() + "/egress-retention-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      return 2;
    }
    a.dir = tmpl;
  }
  egress::storage::StoreOptions options{.path = a.dir + "/store"};
  auto opened = egress::storage::OpenRocksQueueStore(options, kT0);
  if (!opened) {
    Fail("open", opened.error());
  }
  QueueStore& store = **opened;
  std::printf(
      "# %lld days, %lld deliveries/hour (%lld%% dead, %lld%% with a key), payload %zu B; "
      "retention delivered %s, cancelled %s, dead %s, idempotency %s, every %s, slices of %zu\n",
      static_cast<long long>(a.days), static_cast<long long>(a.per_hour),
      static_cast<long long>(a.dead_percent), static_cast<long long>(a.keyed_percent), a.payload,
      egress::config::FormatDuration(egress::Millis(a.policy.delivered_ms)).c_str(),
      egress::config::FormatDuration(egress::Millis(a.policy.cancelled_ms)).c_str(),
      egress::config::FormatDuration(egress::Millis(a.policy.dead_ms)).c_str(),
      egress::config::FormatDuration(egress::Millis(a.policy.idempotency_ms)).c_str(),
      egress::config::FormatDuration(egress::Millis(a.interval_ms)).c_str(), a.slice);
  std::printf(
      "| day | accepted | delivered kept | dead kept | purged | keys expired | disk MiB at day end "
      "| disk MiB min-max over the day |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::fflush(stdout);

  const egress::SystemClock clock;  // the run's wall time only; the store gets simulated time
  const egress::SteadyTime started = clock.Now();
  int64_t accepted = 0, purged = 0, keys_expired = 0, next_purge = kT0 + a.interval_ms;
  double carry = 0;
  bool within_bounds = true;
  uint64_t day_min = UINT64_MAX, day_max = 0;  // disk bytes after each step of the day
  const int64_t step = a.step_minutes * kMinute;
  for (int64_t now = kT0; now < kT0 + a.days * kDay; now += step) {
    // Intake: one batch per step (at most 1000 a write, as the batch API).
    carry += static_cast<double>(a.per_hour) * static_cast<double>(step) / kHour;
    for (int64_t left = static_cast<int64_t>(carry); left > 0;) {
      std::vector<NewDelivery> batch;
      for (; left > 0 && batch.size() < 1000; --left) {
        batch.push_back(Sample(a, accepted++));
        carry -= 1;
      }
      auto r = store.EnqueueBatch(batch, now);
      if (!r) {
        Fail("enqueue", r.error());
      }
    }
    // Lease what is due and write the outcomes a second later, as the delivery loop does.
    for (;;) {
      auto leased = store.LeaseDue(now + 1000, 1000);
      if (!leased) {
        Fail("lease", leased.error());
      }
      if (leased->empty()) {
        break;
      }
      std::vector<QueueStore::IdChange> outcomes;
      for (const auto& d : *leased) {
        const bool dead =
            static_cast<int64_t>(std::hash<std::string>{}(d.id) % 100) < a.dead_percent;
        StateChange c{.to = dead ? DeliveryState::kDead : DeliveryState::kDelivered,
                      .at_ms = now + 2000};
        if (dead) {
          c.reason = "http_404";
        }
        outcomes.emplace_back(d.id, std::move(c));
      }
      auto applied = store.ApplyBatch(outcomes);
      if (!applied) {
        Fail("outcome", applied.error());
      }
    }
    // Retention on its interval, at the simulated time of each tick within this step.
    for (; next_purge <= now + step; next_purge += a.interval_ms) {
      auto pass = egress::service::RunRetentionPass(store, a.policy, next_purge, a.slice,
                                                    [](const auto&) { return true; });
      if (!pass) {
        Fail("purge", pass.error());
      }
      purged += static_cast<int64_t>(pass->delivered + pass->cancelled + pass->dead);
      keys_expired += static_cast<int64_t>(pass->idempotency_keys);
    }
    const int64_t end = now + step;
    const uint64_t disk = store.Stats().disk_bytes;
    day_min = std::min(day_min, disk);
    day_max = std::max(day_max, disk);
    if ((end - kT0) % kDay == 0) {
      auto counts = store.Counts();
      if (!counts) {
        Fail("counts", counts.error());
      }
      const uint64_t delivered = CountOf(*counts, DeliveryState::kDelivered);
      const uint64_t dead = CountOf(*counts, DeliveryState::kDead);
      std::printf("| %lld | %lld | %llu | %llu | %lld | %lld | %.1f | %.1f-%.1f |\n",
                  static_cast<long long>((end - kT0) / kDay), static_cast<long long>(accepted),
                  static_cast<unsigned long long>(delivered), static_cast<unsigned long long>(dead),
                  static_cast<long long>(purged), static_cast<long long>(keys_expired), Mib(disk),
                  Mib(day_min), Mib(day_max));
      std::fflush(stdout);
      day_min = UINT64_MAX;
      day_max = 0;
      // A class keeps at most what finished within its age, plus one interval and one step.
      auto bound = [&](int64_t age_ms, int64_t percent) {
        const double hours = static_cast<double>(age_ms + a.interval_ms + step) / kHour;
        return static_cast<double>(a.per_hour) * hours * static_cast<double>(percent) / 100 * 1.2 +
               100;
      };
      if ((a.policy.delivered_ms > 0 &&
           static_cast<double>(delivered) > bound(a.policy.delivered_ms, 100 - a.dead_percent)) ||
          (a.policy.dead_ms > 0 &&
           static_cast<double>(dead) > bound(a.policy.dead_ms, a.dead_percent))) {
        within_bounds = false;
      }
    }
  }
  const double seconds = std::chrono::duration<double>(clock.Now() - started).count();
  std::printf("# %lld deliveries in %.0f s\n", static_cast<long long>(accepted), seconds);
  if (egress::Status s = store.Close(); !s.ok()) {
    Fail("close", s);
  }
  opened->reset();
  if (own_dir) {
    std::filesystem::remove_all(a.dir);
  }
  if (a.check && !within_bounds) {
    std::fprintf(stderr, "retention kept more records than its ages allow\n");
    return 1;
  }
  return 0;
}
