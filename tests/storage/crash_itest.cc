// Crash safety of the store: a child process (crash_writer) enqueues and reports each
// acknowledged change; we SIGKILL it at random points, reopen, and check that everything
// acknowledged is there and intact, nothing is half-written, and in-flight work is due again.

#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "storage/rocks_queue_store.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace egress::storage {
namespace {

std::string WriterPath() {
  const char* dir = std::getenv("EGRESS_BIN_DIR");
  return std::string(dir != nullptr ? dir : ".") + "/crash_writer";
}

struct Acked {
  std::map<std::string, long> enqueued;  // id -> n
  std::set<std::string> delivered;
};

// Runs the writer until it has acknowledged `kill_after` lines, kills it, and returns every
// line it printed (lines written before the kill are acknowledged too).
void RunAndKill(const std::string& store_dir, int kill_after, Acked& acked) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  const std::string path = WriterPath();
  char* argv[] = {const_cast<char*>(path.c_str()), const_cast<char*>(store_dir.c_str()), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, environ), 0) << path;
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  FILE* out = fdopen(pipe_fds[0], "r");
  char line[256];
  int seen = 0;
  bool killed = false;
  while (std::fgets(line, sizeof line, out) != nullptr) {
    std::istringstream in(line);
    std::string kind, id;
    in >> kind >> id;
    if (kind == "E") {
      long n = 0;
      in >> n;
      acked.enqueued[id] = n;
    } else if (kind == "D") {
      acked.delivered.insert(id);
    }
    if (++seen == 1) {
      // While the writer holds the store, another process is told it is in use.
      auto second = OpenRocksQueueStore({.path = store_dir}, 0);
      ASSERT_FALSE(second.has_value());
      EXPECT_EQ(second.error().code(), Status::Code::kBusy) << second.error().ToString();
    }
    if (seen == kill_after && !killed) {
      kill(pid, SIGKILL);
      killed = true;
    }
  }
  std::fclose(out);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(killed) << "writer stopped by itself after " << seen << " lines";
  ASSERT_TRUE(WIFSIGNALED(status));
}

void Verify(const std::string& store_dir, const Acked& acked) {
  auto store = OpenRocksQueueStore({.path = store_dir}, 4'000'000'000'000);
  ASSERT_TRUE(store.has_value()) << store.error().ToString();
  for (const auto& [id, n] : acked.enqueued) {
    auto d = (*store)->Get(id);
    ASSERT_TRUE(d.has_value()) << "acknowledged delivery lost: " << id << " "
                               << d.error().ToString();
    EXPECT_EQ(d->payload.rfind("payload-" + std::to_string(n) + "-", 0), 0u) << id;
    EXPECT_EQ(d->payload.size(), ("payload-" + std::to_string(n) + "-").size() + n % 300);
    EXPECT_EQ(d->idempotency_key, "k-" + std::to_string(n));
    EXPECT_NE(d->state, DeliveryState::kInFlight);
  }
  for (const std::string& id : acked.delivered) {
    EXPECT_EQ((*store)->Get(id)->state, DeliveryState::kDelivered) << id;
  }
  auto counts = (*store)->Counts();
  auto scanned = (*store)->ScanCounts();
  ASSERT_TRUE(counts.has_value() && scanned.has_value());
  EXPECT_EQ(*counts, *scanned);
  EXPECT_EQ(CountOf(*counts, DeliveryState::kInFlight), 0u);
  // Every waiting record is in the due index: leasing far in the future takes exactly them.
  auto leased = (*store)->LeaseDue(4'000'000'000'000, 1'000'000);
  ASSERT_TRUE(leased.has_value());
  EXPECT_EQ(leased->size(), CountOf(*counts, DeliveryState::kQueued));
  ASSERT_TRUE((*store)->Close().ok());
}

// Verifies that SIGKILL at random points loses no acknowledged delivery over several rounds.
TEST(CrashTest, KilledWriterLosesNothingAcknowledged) {
  TempDir dir;
  const std::string store_dir = dir.Sub("store");
  std::mt19937 rng(20261130);
  Acked acked;
  for (int round = 0; round < 6; ++round) {
    RunAndKill(store_dir, std::uniform_int_distribution<int>(20, 400)(rng), acked);
    if (HasFatalFailure()) {
      return;
    }
    Verify(store_dir, acked);
  }
  EXPECT_GT(acked.enqueued.size(), 100u);
}

}  // namespace
}  // namespace egress::storage
