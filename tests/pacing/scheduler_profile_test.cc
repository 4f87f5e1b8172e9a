// A profile platform's scopes in the Scheduler (pacing::PlatformScopes, docs/platforms.md
// "Profile platforms"): a scope counted as a sliding window (ScopeRule::window, Teams' "8 per
// 2 s") against a plain bucket of the same rate, in fake time.
//
// These tests found that the scope table kept a budget name in 3 bits (profile budgets are
// numbered 8 to 63): fixed in scope_table.h.

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dispatcher/pacing/memory_budget_store.h"
#include "dispatcher/pacing/scheduler.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_random.h"
#include "tests/support/scheduler_driver.h"

namespace egress::pacing {
namespace {

using std::chrono::milliseconds;

// A profile platform with one scope per conversation (credential + destination) and, when
// `app_scope`, one per credential before it; both `window` or both buckets.
struct ChatPlatform {
  Platform platform = *RegisterPlatform("test_window_chat");
  BudgetName app = *RegisterBudgetName("test_window_chat_app");
  BudgetName conversation = *RegisterBudgetName("test_window_chat_conversation");

  SchedulerOptions Options(bool window, bool app_scope, Millis offset) const {
    SchedulerOptions options;
    options.global_window_offset = offset;
    // Discord's window off: only the profile's own windows count here (and a truncated budget
    // name cut to 3 bits could not pass for discord_global).
    options.discord_global_window = false;
    PlatformScopes& scopes = options.scopes[PlatformIndex(platform)];
    if (app_scope) {
      scopes.rules.push_back({.budget = app, .key = {ScopeKeyPart::kCredential}, .window = window});
    }
    scopes.rules.push_back({.budget = conversation,
                            .key = {ScopeKeyPart::kCredential, ScopeKeyPart::kDestination},
                            .window = window});
    return options;
  }
};

// One Scheduler on a fake clock, driven as the delivery loop does (one delivery of a
// destination in flight at a time, each answered 200), recording when each was dispatched.
class WindowRun {
 public:
  WindowRun(const ChatPlatform& chat, bool window, Budget conversation, bool app_scope = false,
            Budget app = {1000, 1000, 1}, Millis offset = Millis(0))
      : scheduler_(clock_, store_, random_, chat.Options(window, app_scope, offset)),
        driver_(clock_, scheduler_),
        start_(clock_.Now()) {
    // The tenant's scope out of the way: these tests are about the platform's.
    EXPECT_TRUE(scheduler_.SetDefaultBudget(BudgetName::kTenantEgress, {1000, 1000, 1000}).ok());
    EXPECT_TRUE(scheduler_.SetDefaultBudget(chat.conversation, conversation).ok());
    EXPECT_TRUE(scheduler_.SetDefaultBudget(chat.app, app).ok());
  }

  DestinationId Add(const ChatPlatform& chat, std::string target) {
    Result<DestinationId> id =
        scheduler_.AddDestination(AcmeSpec(chat.platform, std::move(target), "bot-1"));
    EXPECT_TRUE(id.has_value()) << id.error().ToString();
    return *id;
  }
  // Sends one delivery to `id`, waiting on the fake clock until it may go; returns the time
  // of its dispatch in ms since the start.
  int64_t Send(DestinationId id) {
    const uint64_t sequence = driver_.Dispatch(id);
    const int64_t at = (clock_.Now() - start_) / milliseconds(1);
    driver_.Complete(id, sequence, HttpOutcome(200));
    return at;
  }
  std::vector<int64_t> SendMany(DestinationId id, int n) {
    std::vector<int64_t> times;
    for (int i = 0; i < n; ++i) {
      times.push_back(Send(id));
    }
    return times;
  }

  FakeClock clock_;
  MemoryBudgetStore store_;
  FakeRandom random_;
  Scheduler scheduler_;
  SchedulerDriver driver_;
  SteadyTime start_;
};

// The most of `times` (ms, sorted) in any interval of `window_ms`.
int64_t MostInAnyWindow(const std::vector<int64_t>& times, int64_t window_ms) {
  int64_t most = 0;
  for (size_t i = 0; i < times.size(); ++i) {
    const auto end = std::lower_bound(times.begin(), times.end(), times[i] + window_ms);
    most = std::max<int64_t>(most, end - (times.begin() + static_cast<std::ptrdiff_t>(i)));
  }
  return most;
}

std::vector<int64_t> Repeat(std::initializer_list<int64_t> times, int each) {
  std::vector<int64_t> out;
  for (int64_t t : times) {
    out.insert(out.end(), each, t);
  }
  return out;
}

// Verifies a window scope of 8 per 2000 ms sends 8 at once, then the next 8 exactly when the
// first leave the window (2000 ms, 4000 ms): never more than 8 in any 2 s, and the 9th waits
// with the window's budget as its reason.
TEST(SchedulerProfileTest, WindowScopeSendsEightInAnyTwoSeconds) {
  const ChatPlatform chat;
  WindowRun run(chat, /*window=*/true, {8, 2000, 1});
  const DestinationId conversation = run.Add(chat, "19:conv@thread");
  const std::vector<int64_t> first = run.SendMany(conversation, 8);
  EXPECT_EQ(first, Repeat({0}, 8));
  WorkItem ninth;
  ninth.id = "ninth";
  ninth.sequence = run.driver_.next_sequence();
  ASSERT_TRUE(run.scheduler_.Offer(conversation, std::move(ninth)).ok());
  const Decision wait = run.scheduler_.Next();
  ASSERT_EQ(wait.kind, Decision::Kind::kWait);
  EXPECT_EQ(wait.wake_at, run.start_ + milliseconds(2000));
  EXPECT_EQ(run.scheduler_.Inspect(conversation)->deferral.ToString(),
            "budget:test_window_chat_conversation");
  ASSERT_TRUE(run.scheduler_.Withdraw(conversation).ok());
  std::vector<int64_t> times = first;
  for (int64_t t : run.SendMany(conversation, 16)) {
    times.push_back(t);
  }
  EXPECT_EQ(times, Repeat({0, 2000, 4000}, 8));
  EXPECT_EQ(MostInAnyWindow(times, 2000), 8);
}

// Verifies a plain bucket of the same rate paces differently: burst 1 sends one every 250 ms
// (the 8th only at 1750 ms), and burst 8 sends 8 at once and then one every 250 ms, 15 in the
// first 2 s, past the platform's 8.
TEST(SchedulerProfileTest, BucketOfTheSameRatePacesDifferently) {
  const ChatPlatform chat;
  {
    WindowRun run(chat, /*window=*/false, {8, 2000, 1});
    const DestinationId conversation = run.Add(chat, "19:conv@thread");
    const std::vector<int64_t> times = run.SendMany(conversation, 10);
    EXPECT_EQ(times, (std::vector<int64_t>{0, 250, 500, 750, 1000, 1250, 1500, 1750, 2000, 2250}));
    EXPECT_EQ(MostInAnyWindow(times, 2000), 8);
  }
  {
    WindowRun run(chat, /*window=*/false, {8, 2000, 8});
    const DestinationId conversation = run.Add(chat, "19:conv@thread");
    const std::vector<int64_t> times = run.SendMany(conversation, 16);
    std::vector<int64_t> want = Repeat({0}, 8);
    for (int64_t t = 250; t <= 2000; t += 250) {
      want.push_back(t);
    }
    EXPECT_EQ(times, want);
    EXPECT_EQ(MostInAnyWindow(times, 2000), 15);
  }
}

// Verifies the window is widened by global_window_offset (latency on the way): with 25 ms the
// second 8 leave at 2025 ms.
TEST(SchedulerProfileTest, WindowAddsTheOffset) {
  const ChatPlatform chat;
  WindowRun run(chat, /*window=*/true, {8, 2000, 1}, /*app_scope=*/false, {1000, 1000, 1},
                Millis(25));
  const DestinationId conversation = run.Add(chat, "19:conv@thread");
  EXPECT_EQ(run.SendMany(conversation, 16), Repeat({0, 2025}, 8));
}

// Verifies a window on the credential's scope counts every conversation of the credential
// together (8 per 2 s across two), while each conversation's own window would allow more.
TEST(SchedulerProfileTest, CredentialWindowCountsAllItsConversations) {
  const ChatPlatform chat;
  WindowRun run(chat, /*window=*/true, {8, 2000, 1}, /*app_scope=*/true, {8, 2000, 1});
  const DestinationId a = run.Add(chat, "conv-a");
  const DestinationId b = run.Add(chat, "conv-b");
  std::vector<int64_t> times;
  for (int i = 0; i < 8; ++i) {
    times.push_back(run.Send(a));
    times.push_back(run.Send(b));
  }
  EXPECT_EQ(times, Repeat({0, 2000}, 8));
}

// Verifies a profile scope keeps its own budget name and budget: what Inspect, EffectiveBudget
// and ScopesOf answer, and after a reload of the deployment defaults (SetDefaultBudgets), which
// re-budgets every live scope by its name.
TEST(SchedulerProfileTest, ProfileScopesKeepTheirBudgetName) {
  const ChatPlatform chat;
  WindowRun run(chat, /*window=*/false, {8, 2000, 1}, /*app_scope=*/true, {50, 1000, 1});
  const DestinationId conversation = run.Add(chat, "19:conv@thread");
  EXPECT_EQ(run.scheduler_.Inspect(conversation)->budget_name, chat.conversation);
  const Result<Budget> effective = run.scheduler_.EffectiveBudget(conversation, chat.conversation);
  EXPECT_TRUE(effective.has_value()) << effective.error().ToString();
  if (effective.has_value()) {
    EXPECT_EQ(*effective, (Budget{8, 2000, 1}));
  }
  ASSERT_TRUE(
      run.scheduler_.SetDefaultBudgets({{BudgetName::kTenantEgress, {500, 1000, 500}}}).ok());
  const Result<PathScopes> scopes = run.scheduler_.ScopesOf(conversation);
  ASSERT_TRUE(scopes.has_value());
  ASSERT_EQ(scopes->size, 3);
  EXPECT_EQ(scopes->scopes[0].name, BudgetName::kTenantEgress);
  EXPECT_EQ(scopes->scopes[0].budget, (Budget{500, 1000, 500}));
  EXPECT_EQ(scopes->scopes[1].name, chat.app);
  EXPECT_EQ(scopes->scopes[1].budget, (Budget{50, 1000, 1}));
  EXPECT_EQ(scopes->scopes[2].name, chat.conversation);
  EXPECT_EQ(scopes->scopes[2].budget, (Budget{8, 2000, 1}));
}

}  // namespace
}  // namespace egress::pacing
