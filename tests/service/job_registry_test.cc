#include "dispatcher/service/job_registry.h"

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace egress::service {
namespace {

using nlohmann::json;

// Verifies that a job starts running with a fresh 16-hex id, counts progress, and ends done or
// failed with its finish time and error, as JobToJson shows it.
TEST(JobRegistryTest, RunsAndFinishes) {
  JobRegistry jobs;
  auto a = jobs.Start("replay", {{"state", "dead"}}, 1000);
  auto b = jobs.Start("replay", {{"state", "deferred"}}, 1001);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_TRUE(IsJobId(*a)) << *a;
  EXPECT_NE(*a, *b);
  EXPECT_EQ(jobs.running(), 2u);
  jobs.Progress(*a, 1000, 998);
  jobs.Progress(*a, 500, 500);
  json running = JobToJson(*jobs.Find(*a));
  EXPECT_EQ(running, (json{{"job", *a},
                           {"kind", "replay"},
                           {"state", "running"},
                           {"matched", 1500},
                           {"replayed", 1498},
                           {"started_ms", 1000},
                           {"finished_ms", nullptr},
                           {"filter", {{"state", "dead"}}}}));
  jobs.Finish(*a, Status::Ok(), 2000);
  jobs.Finish(*b, Status::IoError("disk gone"), 2001);
  jobs.Progress(*a, 1, 1);                         // finished: no effect
  jobs.Finish(*a, Status::IoError("late"), 3000);  // finished: no effect
  EXPECT_EQ(jobs.running(), 0u);
  json done = JobToJson(*jobs.Find(*a));
  EXPECT_EQ(done["state"], "done");
  EXPECT_EQ(done["matched"], 1500);
  EXPECT_EQ(done["finished_ms"], 2000);
  EXPECT_FALSE(done.contains("error"));
  json failed = JobToJson(*jobs.Find(*b));
  EXPECT_EQ(failed["state"], "failed");
  EXPECT_EQ(failed["error"], "disk gone");
  EXPECT_EQ(jobs.Find("0123456789abcdef"), nullptr);
}

// Verifies the running cap (Busy past it, room again after a finish) and that only the newest
// finished jobs are kept.
TEST(JobRegistryTest, BoundsRunningAndFinished) {
  JobRegistry jobs({.max_running = 2, .max_finished = 3});
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    ids.push_back(*jobs.Start("replay", json::object(), i));
  }
  auto refused = jobs.Start("replay", json::object(), 9);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), Status::Code::kBusy);
  for (int i = 0; i < 6; ++i) {
    jobs.Finish(ids.back(), Status::Ok(), 10 + i);
    ids.push_back(*jobs.Start("replay", json::object(), 20 + i));
  }
  // Six finished, ids[1] to ids[6] in that order; ids[0] and ids[7] run.
  EXPECT_EQ(jobs.running(), 2u);
  EXPECT_EQ(jobs.size(), 2u + 3u);
  EXPECT_NE(jobs.Find(ids[0]), nullptr);
  EXPECT_EQ(jobs.Find(ids[1]), nullptr);  // the oldest finished ones are forgotten
  EXPECT_EQ(jobs.Find(ids[3]), nullptr);
  EXPECT_NE(jobs.Find(ids[4]), nullptr);
  EXPECT_NE(jobs.Find(ids[6]), nullptr);
  EXPECT_EQ(jobs.Find(ids[7])->state, Job::State::kRunning);
}

// Verifies the per-tenant cap: one tenant's key runs max_running_per_tenant jobs at once, and
// the other slots stay for other tenants and the admin; its slot comes back when its job ends.
TEST(JobRegistryTest, OneTenantCannotTakeEverySlot) {
  JobRegistry jobs({.max_running = 3, .max_running_per_tenant = 1});
  auto acme = jobs.Start("replay", json::object(), 1, "acme");
  ASSERT_TRUE(acme.has_value());
  auto again = jobs.Start("replay", json::object(), 2, "acme");
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), Status::Code::kBusy);
  EXPECT_TRUE(jobs.Start("replay", json::object(), 3, "beta").has_value());
  EXPECT_TRUE(jobs.Start("replay", json::object(), 4).has_value());  // the admin
  EXPECT_EQ(jobs.running(), 3u);
  jobs.Finish(*acme, Status::Ok(), 5);
  EXPECT_TRUE(jobs.Start("replay", json::object(), 6, "acme").has_value());
}

// Verifies the id shape check: 16 lowercase hex characters and nothing else.
TEST(JobRegistryTest, ChecksIdShape) {
  EXPECT_TRUE(IsJobId("0123456789abcdef"));
  EXPECT_FALSE(IsJobId("0123456789ABCDEF"));
  EXPECT_FALSE(IsJobId("0123456789abcde"));
  EXPECT_FALSE(IsJobId("0123456789abcdef0"));
  EXPECT_FALSE(IsJobId("0123456789abcdeg"));
  EXPECT_FALSE(IsJobId(std::string("0123456789abcde\0", 16)));
  EXPECT_FALSE(IsJobId(""));
}

}  // namespace
}  // namespace egress::service
