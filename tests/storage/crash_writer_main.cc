// Child process of the crash test (tests/storage/crash_itest.cc): enqueues deliveries into the
// store at argv[1] until killed, printing one line per acknowledged change:
//   E <id> <n>   delivery n was enqueued (payload "payload-<n>-" + n copies of 'x', capped)
//   D <id>       that delivery was marked delivered
// A line is printed only after the store call returned OK, i.e. after the synced write.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "dispatcher/base/clock.h"
#include "storage/rocks_queue_store.h"

namespace {

using egress::storage::DeliveryState;
using egress::storage::NewDelivery;
using egress::storage::QueueStore;

std::string PayloadFor(long n) {
  return "payload-" + std::to_string(n) + "-" + std::string(static_cast<size_t>(n % 300), 'x');
}

NewDelivery Make(long n) {
  NewDelivery d;
  d.tenant = "tenant-" + std::to_string(n % 3);
  d.platform = "webhook";
  d.destination = "http://127.0.0.1:9/hook/" + std::to_string(n % 7);
  d.credential = "signing";
  d.payload = PayloadFor(n);
  d.idempotency_key = "k-" + std::to_string(n);
  return d;
}

int Run(QueueStore& store, egress::Clock& clock) {
  for (long n = 0;;) {
    const int64_t now = egress::ToUnixMillis(clock.WallNow());
    if (n % 5 == 0) {  // a batch of 10
      std::vector<NewDelivery> batch;
      for (int i = 0; i < 10; ++i) {
        batch.push_back(Make(n + i));
      }
      auto results = store.EnqueueBatch(batch, now);
      if (!results) {
        std::fprintf(stderr, "batch: %s\n", results.error().ToString().c_str());
        return 1;
      }
      for (int i = 0; i < 10; ++i) {
        std::printf("E %s %ld\n", (*results)[i]->id.c_str(), n + i);
      }
      n += 10;
    } else {
      auto r = store.Enqueue(Make(n), now);
      if (!r) {
        std::fprintf(stderr, "enqueue: %s\n", r.error().ToString().c_str());
        return 1;
      }
      std::printf("E %s %ld\n", r->id.c_str(), n);
      ++n;
    }
    auto leased = store.LeaseDue(now, 2);
    if (leased && !leased->empty()) {
      const std::string& id = leased->front().id;
      if (store.Apply(id, {.to = DeliveryState::kDelivered, .at_ms = now})) {
        std::printf("D %s\n", id.c_str());
      }
    }
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: crash_writer STORE_DIR\n");
    return 2;
  }
  egress::SystemClock clock;
  auto store = egress::storage::OpenRocksQueueStore({.path = argv[1]},
                                                    egress::ToUnixMillis(clock.WallNow()));
  if (!store) {
    std::fprintf(stderr, "open: %s\n", store.error().ToString().c_str());
    return 1;
  }
  return Run(**store, clock);
}
