#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dispatcher/base/result.h"

namespace egress::service {

// A long operator action the API runs in the background (today: a replay by filter, POST
// /v1/deliveries/replay), as GET /v1/jobs/{id} shows it. Jobs live in memory only: a restart
// forgets them, while the work they did is durable (docs/api.md).
struct Job {
  enum class State { kRunning, kDone, kFailed };
  std::string id;    // 16 lowercase hex characters, drawn from OpenSSL's RAND_bytes
  std::string kind;  // "replay"
  State state = State::kRunning;
  uint64_t matched = 0;   // deliveries looked at so far
  uint64_t replayed = 0;  // of those, replayed
  std::string error;      // why it failed (kFailed only)
  int64_t started_ms = 0;
  int64_t finished_ms = 0;  // 0 while running
  nlohmann::json params;    // what it was asked to do (the replay's filter), echoed back
  std::string tenant;       // the tenant whose key started it; empty: the admin (or auth off)
};

// "running", "done", "failed".
const char* JobStateName(Job::State state);

// {"job", "kind", "state", "matched", "replayed", "started_ms", "finished_ms" (null while
// running), "filter" (params), "error" (failed only)}.
nlohmann::json JobToJson(const Job& job);

// True when `text` has the shape of a job id (16 lowercase hex characters). The API answers 404
// for anything else without looking further.
bool IsJobId(std::string_view text);

struct JobLimits {
  size_t max_running = 4;  // more are refused (the API answers 429)
  // Jobs one tenant's key may run at once, so that one tenant cannot take every slot; the
  // admin's jobs (tenant "") are bounded by max_running only.
  size_t max_running_per_tenant = 1;
  size_t max_finished = 100;  // the oldest finished job is forgotten past this
};

// The service's jobs: bounded in number, in memory. Not thread-safe: every method runs on the
// service's loop.
class JobRegistry {
 public:
  explicit JobRegistry(JobLimits limits = {}) : limits_(limits) {}

  // Registers a running job and returns its id. Busy when max_running jobs are running, or
  // max_running_per_tenant of `tenant`'s; Unavailable when no random id could be drawn.
  // `tenant`: the scope it was started in (Job::tenant).
  Result<std::string> Start(std::string kind, nlohmann::json params, int64_t now_ms,
                            std::string tenant = "");
  // Null for an unknown (or forgotten) id. Valid until the next Start or Finish.
  const Job* Find(std::string_view id) const;
  // Adds to a running job's counters; nothing for an unknown or finished job.
  void Progress(const std::string& id, uint64_t matched, uint64_t replayed);
  // Ends a running job: done when `status` is OK, failed with its message otherwise. Forgets
  // the oldest finished job past max_finished. Nothing for an unknown or finished job.
  void Finish(const std::string& id, const Status& status, int64_t now_ms);

  size_t running() const { return running_; }
  size_t size() const { return jobs_.size(); }

 private:
  JobLimits limits_;
  std::map<std::string, Job, std::less<>> jobs_;
  std::deque<std::string> finished_;  // ids of finished jobs, oldest first
  size_t running_ = 0;
  std::map<std::string, size_t, std::less<>> running_by_tenant_;  // tenants' keys only
};

}  // namespace egress::service
